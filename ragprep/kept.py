"""What one process keeps loaded between requests: the warm path of ``ask`` and ``search``.

A one-shot ``ragprep ask`` pays for opening the index, mapping the embedder's weights and building
the re-ranker and span scorer; a long-lived process (``ragprep serve``'s ``ask`` endpoint, a notebook,
a test session) should pay it once. :func:`kept` holds one object per *kind* under a *key* that says
what it was built from (the index folder and its manifest's stat, the embedder's spec, the trained
models' ``LATEST`` pointers): a call with the same key returns the kept object, a call with another key
(the index was rebuilt, a re-ranker trained) builds a new one and drops the old. Building happens under
the kind's lock, so two threads asking at once load once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_GUARD = threading.Lock()
_LOCKS: dict[str, threading.Lock] = {}
_KEPT: dict[str, tuple[Hashable, object]] = {}


def kept(kind: str, key: Hashable, build: Callable[[], T]) -> T:
    """The object of ``kind`` built for ``key`` (built by ``build()`` on the first call, or when the key changed)."""
    with _GUARD:
        lock = _LOCKS.setdefault(kind, threading.Lock())
    with lock:
        held = _KEPT.get(kind)
        if held is not None and held[0] == key:
            return held[1]  # type: ignore[return-value]
        value = build()
        _KEPT[kind] = (key, value)
        return value


def forget(kind: str | None = None) -> None:
    """Drop the kept object of ``kind`` (every kind when None): the next call builds again."""
    with _GUARD:
        if kind is None:
            _KEPT.clear()
        else:
            _KEPT.pop(kind, None)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, mtime ns, size) of ``path``, None when it is missing: a file replaced by a rename changes its stamp."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size
