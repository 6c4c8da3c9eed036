"""An embedder wrapper that embeds each query text once (used by export, train and evaluate alike)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragprep.engines.embedder import Embedder


class QueryMemo:
    """An embedder that remembers the query vectors it computed (passages go to the wrapped one, which caches them)."""

    def __init__(self, base: Embedder) -> None:
        """Wrap ``base``."""
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self._queries: dict[str, np.ndarray] = {}

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors of the wrapped embedder."""
        return self.base.passages(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, each text embedded once per instance."""
        missing = sorted({t for t in texts if t not in self._queries})
        if missing:
            for text, vector in zip(missing, self.base.queries(missing)):
                self._queries[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._queries[t] for t in texts]).astype(np.float32)
