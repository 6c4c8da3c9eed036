"""Zip-bomb guard: check an archive's declared sizes before anything inflates it.

A slide deck is a zip archive, and python-pptx reads every member into memory when it opens
one: a 3 MB deck whose slide inflates to 3 GiB would take the process with it. The central
directory declares each member's uncompressed size, so the first check costs nothing but reading
that directory. A header can lie (a member that inflates to far more than it declares), and
``zipfile.read`` asks zlib for up to 2 GiB at once before it cuts the output to the declared
size, so every compressed member is then inflated once as a bounded stream (1 MiB at a time,
nothing kept): zipfile stops at the declared size and the CRC mismatch fails the deck, naming
the member, before python-pptx reads anything.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from ragprep.settings import LimitsSettings
from tasks.ingest.extract.base import DocumentError

_FIX = "raise {setting} if the file is trusted"
_STREAM_CHUNK = 1 << 20


def human_bytes(n: float) -> str:
    """``3.0 GiB``, ``512.0 MiB``, ``900 B``: sizes as a reader wants them in a one-line reason."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_archive(path: Path, limits: LimitsSettings) -> None:
    """Raise ``DocumentError`` naming the member when the archive at ``path`` would inflate past ``limits``.

    Checked from the central directory, in this order: each member's declared size against
    ``max_member_bytes``, its compression ratio against ``max_ratio`` (members above
    ``ratio_min_bytes`` only), and the total against ``max_total_bytes``; then every compressed
    member is inflated as a bounded stream to catch a header that under-declares. A file that is
    not a zip archive passes: the backend gives the reason it cannot be read.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            _check_declared(path, members, limits)
            for info in members:
                if info.compress_type != zipfile.ZIP_STORED:
                    _inflate_bounded(path, archive, info)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError):
        return  # not a readable zip archive (or an encrypted one): the backend gives the reason


def _inflate_bounded(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Inflate ``info`` 1 MiB at a time, keeping nothing; zipfile stops at the declared size and checks the CRC:
    a member that inflates to more than its header says raises ``DocumentError`` naming it."""
    try:
        with archive.open(info) as member:
            while member.read(_STREAM_CHUNK):
                pass
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise DocumentError(
            f"{path.name}: archive member {info.filename} is corrupt or inflates to more than its header declares "
            f"({human_bytes(info.file_size)}): {exc}"
        ) from None


def _check_declared(path: Path, members: list[zipfile.ZipInfo], limits: LimitsSettings) -> None:
    """Raise ``DocumentError`` when a member's declared size or ratio, or their total, is over ``limits``."""
    total = 0
    for info in members:
        size = info.file_size
        if size > limits.max_member_bytes:
            raise DocumentError(
                f"{path.name}: archive member {info.filename} inflates to {human_bytes(size)} "
                f"(limit {human_bytes(limits.max_member_bytes)}); " + _FIX.format(setting="limits.max_member_bytes")
            )
        ratio = size / max(info.compress_size, 1)
        if size > limits.ratio_min_bytes and ratio > limits.max_ratio:
            raise DocumentError(
                f"{path.name}: archive member {info.filename} inflates {ratio:,.0f} times "
                f"({human_bytes(info.compress_size)} to {human_bytes(size)}; limit {limits.max_ratio:,.0f}); "
                + _FIX.format(setting="limits.max_ratio")
            )
        total += size
    if total > limits.max_total_bytes:
        raise DocumentError(
            f"{path.name}: archive members inflate to {human_bytes(total)} in all "
            f"(limit {human_bytes(limits.max_total_bytes)}); " + _FIX.format(setting="limits.max_total_bytes")
        )
