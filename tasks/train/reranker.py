"""Re-rankers: score (question, passage) pairs and re-order a first stage's top-k.

- :class:`EmbedderReranker` (the default, nothing to train): cross-scores each candidate with
  the embedder itself — the cosine of the question (``query:`` prefix) with the **whole**
  passage (``passage:`` prefix), read in windows: a passage longer than ``window_words`` words
  is embedded as overlapping windows (each with the report header block of a Ver.1 text in
  front), and its score is the best of the whole-text and window cosines. A first-stage index
  embeds a chunk once, and an embedder reads only its first 512 tokens, so a long chapter's
  later sections count only here.
- :class:`LinearReranker` (``ragprep train reranker``, numpy): a logistic regression over pair
  features — whole-text cosine, best window cosine, the share of the question's words found in
  the passage, and in its title — trained on the re-ranker export's labelled pairs.
- A cross-encoder fine-tune (``tasks/train/st.py``, optional extra ``[train]``).

Every re-ranker has ``name`` and ``score_pairs(queries, passages, titles) -> (n,)`` over
parallel lists.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ragprep.engines.embedder import Embedder
from ragprep.passage_windows import RERANK_WINDOW_WORDS
from ragprep.passage_windows import rerank_windows as windows  # re-exported: the reranker's window cut
from ragprep.text import tokens


class Reranker(Protocol):
    name: str

    def score_pairs(self, queries: Sequence[str], passages: Sequence[str], titles: Sequence[str]) -> np.ndarray:
        """(n,) relevance scores of parallel (query, passage, passage title) triples; higher is better."""


def _token_share(query: str, text: str) -> float:
    wanted = set(tokens(query))
    if not wanted:
        return 0.0
    return len(wanted & set(tokens(text))) / len(wanted)


class PairFeatures:
    """Pair features from one embedder; vectors of whole passages and windows come from its (cached) passages."""

    NAMES = ("cos_full", "cos_window_max", "query_token_share", "title_token_share")

    def __init__(self, embedder: Embedder, window_words: int = RERANK_WINDOW_WORDS) -> None:
        """Features computed with ``embedder``."""
        self.embedder = embedder
        self.window_words = window_words

    def cosines(self, queries: Sequence[str], passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(whole-passage cosine, best of whole and window cosines) per pair."""
        if not queries:
            return np.zeros(0, np.float32), np.zeros(0, np.float32)
        unique_q = sorted(set(queries))
        qv = dict(zip(unique_q, self.embedder.queries(unique_q)))
        unique_p = sorted(set(passages))
        pieces = {p: windows(p, self.window_words) for p in unique_p}
        texts = sorted({p for p in unique_p} | {w for ws in pieces.values() for w in ws})
        pv = dict(zip(texts, self.embedder.passages(texts)))
        full = np.array([float(qv[q] @ pv[p]) for q, p in zip(queries, passages)], dtype=np.float32)
        best = np.array([max(float(qv[q] @ pv[p]), *(float(qv[q] @ pv[w]) for w in pieces[p])) for q, p in zip(queries, passages)],
                        dtype=np.float32)
        return full, best

    def matrix(self, queries: Sequence[str], passages: Sequence[str], titles: Sequence[str]) -> np.ndarray:
        """(n, len(NAMES)) features of the pairs."""
        full, best = self.cosines(queries, passages)
        lexical = [_token_share(q, p) for q, p in zip(queries, passages)]
        title = [_token_share(q, t) for q, t in zip(queries, titles)]
        return np.column_stack([full, best, np.array(lexical, np.float32), np.array(title, np.float32)]).astype(np.float32) \
            if len(queries) else np.zeros((0, len(self.NAMES)), np.float32)


class EmbedderReranker:
    """Cross-scoring with the embedder: the best of the whole-passage and window cosines (see the module doc)."""

    def __init__(self, embedder: Embedder, window_words: int = RERANK_WINDOW_WORDS) -> None:
        """Re-rank with ``embedder``."""
        self.features = PairFeatures(embedder, window_words)
        self.name = f"embedder-cross-score ({embedder.name})"

    def score_pairs(self, queries: Sequence[str], passages: Sequence[str], titles: Sequence[str]) -> np.ndarray:
        """The best whole-or-window cosine of each pair."""
        return self.features.cosines(queries, passages)[1]


@dataclass(frozen=True)
class LogisticModel:
    """Standardised features -> logistic score."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    std: np.ndarray

    def decision(self, features: np.ndarray) -> np.ndarray:
        """The linear score (log-odds) of each row."""
        return ((features - self.mean) / self.std) @ self.weights + self.bias

    def save(self, folder: Path) -> None:
        """``linear.json`` in ``folder``."""
        payload = {"weights": self.weights.tolist(), "bias": self.bias, "mean": self.mean.tolist(), "std": self.std.tolist(),
                   "features": list(PairFeatures.NAMES)}
        (folder / "linear.json").write_text(json.dumps(payload, indent=2))

    @classmethod
    def load(cls, folder: Path) -> LogisticModel:
        """The model saved in ``folder``."""
        payload = json.loads((folder / "linear.json").read_text())
        if tuple(payload["features"]) != PairFeatures.NAMES:
            raise ValueError(f"{folder}: re-ranker features {payload['features']} are not {list(PairFeatures.NAMES)}")
        return cls(np.array(payload["weights"], np.float32), float(payload["bias"]), np.array(payload["mean"], np.float32),
                   np.array(payload["std"], np.float32))


def fit_logistic(features: np.ndarray, labels: np.ndarray, steps: int = 500, learning_rate: float = 0.1,
                 l2: float = 1e-3) -> LogisticModel:
    """Logistic regression by full-batch gradient descent on standardised features; positives weighted to balance."""
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    std = np.where(std < 1e-6, 1.0, std)
    x = (features - mean) / std
    y = labels.astype(np.float64)
    positives = max(1.0, y.sum())
    negatives = max(1.0, len(y) - y.sum())
    sample_weight = np.where(y > 0, len(y) / (2 * positives), len(y) / (2 * negatives))
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        error = (p - y) * sample_weight
        w -= learning_rate * (x.T @ error / len(y) + l2 * w)
        b -= learning_rate * float(error.mean())
    return LogisticModel(w.astype(np.float32), float(b), mean.astype(np.float32), std.astype(np.float32))


class LinearReranker:
    """The trained logistic re-ranker over :class:`PairFeatures`."""

    def __init__(self, embedder: Embedder, model: LogisticModel, model_id: str, window_words: int = RERANK_WINDOW_WORDS) -> None:
        """Score with ``model`` on features from ``embedder``."""
        self.features = PairFeatures(embedder, window_words)
        self.model = model
        self.name = f"trained linear re-ranker {model_id}"

    def score_pairs(self, queries: Sequence[str], passages: Sequence[str], titles: Sequence[str]) -> np.ndarray:
        """The model's log-odds of each pair."""
        return self.model.decision(self.features.matrix(queries, passages, titles))
