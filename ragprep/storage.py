"""Where ragprep's files live under the root, and how they are written.

Layout under ``root``::

    images/ab/abcdef....png      content-addressed pictures and crops
    cache/ocr/<key>.json         OCR results keyed by image hash + languages + engine
    cache/llm/, cache/embeddings/ LLM/VLM replies and passage vectors
    parts/<doc_id>-<fp>/         per-document Parquet parts (elements, chunks, document)
    parts/quotes/                per-PDF quotes
    tables/<name>.parquet        the assembled tables queried by ``ragprep sql``
    review/                      decisions.parquet (durable) and the HTML review reports
    datasets/                    dataset versions (the default local store)
    refmatch/<name>.parquet      answer segments and the chunks they cite (``ragprep refmatch``)
    evaluations/<version>/       retrieval evaluations (Parquet + Markdown report)
    models/<kind>/<id>/          trained query adapters and re-rankers with their cards
    exports/training/<version>/  training exports (retriever, re-ranker, SFT JSONL + card)
    index/<variant>/             search index of a dataset version: LanceDB vectors, BM25, manifest.json

Every file is written to a temporary name in the same directory and renamed into
place, so a crash never leaves a half-written file behind. A full disk (``ENOSPC``, ``EDQUOT``)
while writing raises :class:`DiskFullError`, one line naming the file and the fix. What a killed
run leaves (``.*.tmp`` files of these writers, ``.<part>.*`` staging folders under ``parts/``) is
removed by :func:`sweep_leftovers`; the dataset store sweeps its own ``.staging-*`` folders.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ragprep.errors import RagprepError
from ragprep.ids import sha256_bytes

PROCESS_STARTED = time.time()
"""When this process imported ragprep's storage: leftovers older than this are not its own."""

_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFullError(RagprepError, OSError):
    """No space left (or the quota reached) while writing a file; the message names the file and the fix."""

    def __init__(self, path: Path | str | None, code: int | None = errno.ENOSPC) -> None:
        code = code or errno.ENOSPC
        what = "disk quota exceeded" if code == errno.EDQUOT else "no space left on device"
        if path is None:  # raised outside ragprep's writers, by a library that did not say where
            super().__init__(f"{what}; free space on the disk holding the output root "
                             "or point --root (RAGPREP_ROOT) elsewhere, then run again")
        else:
            where = Path(path)
            super().__init__(f"{what} writing {where}; free space on the disk holding {where.parent} "
                             "or point --root (RAGPREP_ROOT) elsewhere, then run again")
        self.errno = code
        self.filename = None if path is None else str(path)

    def __str__(self) -> str:
        return str(self.args[0])  # the sentence, not OSError's "[Errno 28] ...: 'path'"


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it wraps) is a full disk or an exceeded quota."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return True
        if isinstance(exc, OSError) and "No space left on device" in str(exc):  # Arrow's IOError carries no errno
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@contextmanager
def disk_full_names(path: Path | str) -> Iterator[None]:
    """Turn a full disk while writing ``path`` into a :class:`DiskFullError` naming it."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        raise DiskFullError(path, errno.EDQUOT if exc.errno == errno.EDQUOT else errno.ENOSPC) from exc


RENAME_EXCHANGE = 2
"""``renameat2`` flag: swap two paths atomically (Linux >= 3.15, glibc >= 2.28)."""


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths (folders included) in one atomic step, so a reader or a kill at any moment sees one
    or the other; False where the system cannot (then nothing changed, and the caller falls back to renames)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_cwd = -100
    return renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), RENAME_EXCHANGE) == 0


class RootUnusableError(RagprepError):
    """The root is a file, or cannot be written (read-only file system, no permission)."""


_ROOT_FIX = "point --root (RAGPREP_ROOT) at a folder you can write"


def check_root(root: Path, write: bool) -> None:
    """Raise :class:`RootUnusableError` (one line naming the root and the fix) when ``root`` exists but is not a
    folder, or, with ``write``, when it (or, not yet made, the folder it would be made in) is on a read-only
    file system or not writable by this user."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise RootUnusableError(f"root {root} is a file, not a folder; {_ROOT_FIX}")
    if not write:
        return
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise RootUnusableError(f"root {root} cannot be made: {existing} is a file, not a folder; {_ROOT_FIX}")
    try:
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        raise RootUnusableError(f"root {root} is on a read-only file system ({existing}); {_ROOT_FIX}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RootUnusableError(f"root {root} is not writable by this user ({existing}); {_ROOT_FIX}")


def _temporary_beside(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    return tmp


@contextmanager
def _replacing(path: Path) -> Iterator[str]:
    """A temporary file beside ``path`` that replaces it when the block ends without an error."""
    with disk_full_names(path):
        tmp = _temporary_beside(path)
        try:
            yield tmp
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes so that readers see the old file or the whole new one, never a part."""
    with _replacing(path) as tmp:
        Path(tmp).write_bytes(data)


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write Parquet (zstd) in place: for files inside a folder that is itself staged and renamed."""
    with disk_full_names(path):
        pq.write_table(table, path, compression="zstd")


def atomic_write_parquet_set(tables: dict[Path, pa.Table]) -> None:
    """Write several Parquet files as a set: all to temporary files first, renamed only when every write succeeded.

    A failed write (a full disk, say) removes the temporary files and leaves every previous file as it was.
    """
    temporaries: dict[Path, str] = {}
    try:
        for path, table in tables.items():
            with disk_full_names(path):
                temporaries[path] = _temporary_beside(path)
                pq.write_table(table, temporaries[path], compression="zstd")
        for path, tmp in temporaries.items():
            os.replace(tmp, path)
    except BaseException:
        for tmp in temporaries.values():
            Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(table: pa.Table, path: Path) -> None:
    """Write a Parquet file (zstd) atomically."""
    with _replacing(path) as tmp:  # a full disk names ``path``, not the temporary file
        pq.write_table(table, tmp, compression="zstd")


def owner_tag() -> str:
    """``<pid>@<host>``: put into the names of long-lived staging folders so a later run can tell a live owner from a dead one."""
    return f"{os.getpid()}@{socket.gethostname()}"


def owner_alive(tag: str) -> bool | None:
    """Whether the process of an :func:`owner_tag` still runs: None when it ran on another host (unknown)."""
    pid, _, host = tag.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _older_than_this_process(path: Path) -> bool:
    try:
        return path.lstat().st_mtime < PROCESS_STARTED
    except FileNotFoundError:
        return False


def _remove(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        return False
    return True


def sweep_leftovers(root: Path) -> list[Path]:
    """Remove what killed runs left under ``root``: the atomic writers' ``.*.tmp`` files and the ``.<part>.*``
    staging folders under ``parts/``, only those last touched before this process started (a live run's are newer).

    The dataset store's ``.staging-*`` folders are swept by the store itself, under its lock. Returns what was removed.
    """
    layout = Layout(root)
    removed: list[Path] = []
    parts = layout.parts_dir
    if parts.is_dir():
        for entry in parts.iterdir():
            if entry.name.startswith(".") and entry.is_dir() and _older_than_this_process(entry) and _remove(entry):
                removed.append(entry)
    if root.is_dir():
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".staging-")]  # the store's own, swept under its lock
            for name in files:
                path = Path(folder) / name
                if name.startswith(".") and name.endswith(".tmp") and _older_than_this_process(path) and _remove(path):
                    removed.append(path)
    return removed


@dataclass(frozen=True)
class StoredImage:
    rel_path: str
    sha256: str


def _folder(*parts: str, doc: str) -> property:
    """A path under the root, as a read-only attribute of ``Layout``."""
    return property(lambda self: self.root.joinpath(*parts), doc=doc)


@dataclass(frozen=True)
class Layout:
    """Paths under one ragprep root."""

    root: Path

    images_dir = _folder("images", doc="Content-addressed pictures and crops.")
    ocr_cache_dir = _folder("cache", "ocr", doc="Cached OCR results.")
    llm_cache_dir = _folder("cache", "llm", doc="Cached LLM/VLM replies.")
    embeddings_cache_dir = _folder("cache", "embeddings", doc="Cached passage vectors.")
    parts_dir = _folder("parts", doc="Per-document Parquet parts and per-PDF quotes.")
    tables_dir = _folder("tables", doc="The assembled Parquet tables (the working tables of the last run).")
    review_dir = _folder("review", doc="Review decisions and the HTML review reports.")
    review_table = _folder("review", "decisions.parquet", doc="The durable table of expert decisions (kept across builds).")
    header_review_table = _folder(
        "review", "header_decisions.parquet", doc="Expert values of report header fields (kept across builds)."
    )
    latest_review_report = _folder("review", "latest.html", doc="The latest HTML review report.")
    datasets_dir = _folder("datasets", doc="The default local dataset store (``dataset_uri`` may name another).")
    evaluations_dir = _folder("evaluations", doc="Retrieval evaluations, one folder per dataset version (Parquet + Markdown).")
    models_dir = _folder("models", doc="Trained query adapters and re-rankers, one folder per model, each with its card.")
    refmatch_dir = _folder("refmatch", doc="Reference-matching results: one Parquet of answer segments and citations per input.")
    training_exports_dir = _folder("exports", "training", doc="Training exports (retriever, re-ranker, SFT), one folder per version.")
    index_dir = _folder("index", doc="Search indexes, one folder per text variant (``index/v1``, ``index/v0``).")

    def part_dir(self, doc_id: str, fingerprint: str) -> Path:
        """The Parquet parts of one document for one fingerprint."""
        return self.parts_dir / f"{doc_id}-{fingerprint}"

    def quotes_part(self, doc_id: str, fingerprint: str) -> Path:
        """A PDF's cached quotes for one set of quote settings."""
        return self.parts_dir / "quotes" / f"{doc_id}-{fingerprint}.parquet"

    def table_path(self, name: str) -> Path:
        """The Parquet file of table ``name``."""
        return self.tables_dir / f"{name}.parquet"

    def save_image(self, data: bytes, ext: str) -> StoredImage:
        """Store image bytes once under their SHA-256; return the root-relative path."""
        digest = sha256_bytes(data)
        ext = ext.lower().lstrip(".") or "bin"
        rel = Path("images") / digest[:2] / f"{digest}.{ext}"
        target = self.root / rel
        if not target.exists():
            atomic_write_bytes(target, data)
        return StoredImage(rel_path=rel.as_posix(), sha256=digest)

    def write_json(self, path: Path, payload: object) -> None:
        """Write ``payload`` as indented, key-sorted JSON, atomically."""
        atomic_write_bytes(path, json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8"))
