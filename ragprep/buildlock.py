"""One build per root at a time: an exclusive ``flock`` on ``<root>/.build.lock``.

Every flow that writes the working tables (ingest, the stage flows, the pipeline, dataset) holds
it for its whole run. A second build on the same root fails at once with one line naming the
holder (pid, host, flow, start time, written into the lock file) and the lock file; it does not
wait, so a nightly run never queues silently behind a manual build. The kernel releases the lock
when the holder exits, even after ``kill -9``: a stale file never blocks the next run.
Within one process the lock is re-entrant (a flow called from another flow's run).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ragprep.errors import RagprepError
from ragprep.storage import check_root

LOCK_NAME = ".build.lock"

_held: dict[Path, int] = {}
_guard = threading.Lock()


class BuildLockedError(RagprepError):
    """Another build holds the root."""


def lock_path(root: Path) -> Path:
    """The lock file of a root."""
    return Path(root).absolute() / LOCK_NAME


def _holder(handle) -> str:
    handle.seek(0)
    try:
        info = json.loads(handle.read() or "{}")
    except ValueError:
        info = {}
    if not info:
        return "another process"
    return f"{info.get('flow', '?')} (pid {info.get('pid', '?')} on {info.get('host', '?')}, since {info.get('started_at', '?')})"


@contextmanager
def build_lock(root: Path, flow: str) -> Iterator[Path]:
    """Hold the root's build lock for the block; raise :class:`BuildLockedError` at once when another build holds it."""
    path = lock_path(root)
    with _guard:
        if path in _held:
            _held[path] += 1
            acquired = None
        else:
            check_root(path.parent, write=True)  # a file or a read-only disk: one line, not a traceback
            path.parent.mkdir(parents=True, exist_ok=True)
            acquired = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
            try:
                fcntl.flock(acquired, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(acquired)
                acquired.close()
                raise BuildLockedError(
                    f"another build is running on {path.parent}: {holder} holds {path}; "
                    "wait for it to finish (or stop it) and start this one again"
                ) from None
            acquired.truncate(0)
            acquired.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "flow": flow,
                                       "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
            acquired.flush()
            _held[path] = 1
    try:
        yield path
    finally:
        with _guard:
            _held[path] -= 1
            if _held[path] == 0:
                del _held[path]
        if acquired is not None:
            acquired.truncate(0)
            fcntl.flock(acquired, fcntl.LOCK_UN)
            acquired.close()
