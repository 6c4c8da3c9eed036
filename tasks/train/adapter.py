"""A linear query adapter on frozen embedder vectors: the cheap, multilingual, torch-free retriever fine-tune.

The embedder stays frozen (its passage vectors, cached by text hash, are reused as they are);
only queries are mapped: ``q' = normalise(q @ W)``, with ``W`` a ``dim x dim`` matrix that starts
as the identity (so the untrained adapter is the vanilla embedder). ``W`` is trained with the
InfoNCE loss of in-batch negatives (MultipleNegativesRanking): for a batch of questions, the
candidates are the batch's gold passages plus their mined hard negatives, the logits are
cosines over a temperature, and each question's target is its own gold passage. An L2 pull
towards the identity keeps the adapter close to the embedder it was trained on. Plain numpy:
analytic gradients and Adam.

The step kept is the one with the best MRR@10 on the **selection** questions (every
``eval_every`` steps; the identity, step 0, is a candidate, so training can never make them
worse). The caller chooses them (``tasks/train/run.py``): the val split, topped up with the
questions of held-out train chunks when val is small. Without selection questions the last
step is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ragprep.engines.embedder import Embedder


@dataclass(frozen=True)
class AdapterConfig:
    """Training knobs of the query adapter."""

    steps: int = 300
    batch_size: int = 32
    learning_rate: float = 2e-3
    temperature: float = 0.05
    identity_l2: float = 1e-2
    """Weight of ``||W - I||_F^2`` (the squared Frobenius norm) in the loss."""
    optimizer: str = "adam"
    """adam, or sgd (plain gradient steps: a small gradient moves ``W`` little)."""
    eval_every: int = 25
    hard_negatives: bool = True
    """Add each question's mined hard negatives to the batch's candidates (else in-batch negatives only)."""
    seed: int = 20250601

    def as_dict(self) -> dict:
        """The config as plain values (for the model card)."""
        return asdict(self)


@dataclass(frozen=True)
class TrainingPairs:
    """Questions as vectors, each with its gold passage and hard negatives as rows of ``passages``."""

    queries: np.ndarray
    """(n, dim) L2-normalised query vectors."""
    positives: np.ndarray
    """(n,) row of each question's gold passage in ``passages``."""
    negatives: list[np.ndarray]
    """Per question, rows of its hard negatives in ``passages`` (may be empty)."""
    passages: np.ndarray
    """(m, dim) L2-normalised passage vectors (golds and negatives)."""

    def __len__(self) -> int:
        return int(self.queries.shape[0])


@dataclass(frozen=True)
class RankingSet:
    """Questions to score a ranking on: query vectors, a passage pool and the gold row of each question."""

    queries: np.ndarray
    pool: np.ndarray
    gold: np.ndarray


@dataclass
class AdapterResult:
    """The trained matrix and how training went."""

    weights: np.ndarray
    best_step: int
    selected_by: str
    history: list[dict] = field(default_factory=list)


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def apply_adapter(weights: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Query vectors mapped by the adapter and re-normalised."""
    return normalise_rows(queries.astype(np.float32) @ weights.astype(np.float32)).astype(np.float32)


def mrr_at_10(weights: np.ndarray | None, data: RankingSet) -> float:
    """MRR@10 of ranking ``data.pool`` by cosine with the (adapted) queries; gold row per question."""
    if data.queries.shape[0] == 0:
        return 0.0
    queries = data.queries if weights is None else apply_adapter(weights, data.queries)
    scores = queries @ data.pool.T
    gold_scores = scores[np.arange(len(data.gold)), data.gold]
    ranks = 1 + (scores > gold_scores[:, None]).sum(axis=1)
    return float(np.where(ranks <= 10, 1.0 / ranks, 0.0).mean())


def _batch_loss_and_grad(weights: np.ndarray, pairs: TrainingPairs, batch: np.ndarray, config: AdapterConfig
                         ) -> tuple[float, np.ndarray]:
    """InfoNCE over the batch's golds and hard negatives, plus the identity pull; loss and dL/dW."""
    negatives = [pairs.negatives[i] for i in batch] if config.hard_negatives else []
    candidates = np.unique(np.concatenate([pairs.positives[batch], *negatives]).astype(int))
    column = {int(c): j for j, c in enumerate(candidates)}
    targets = np.array([column[int(pairs.positives[i])] for i in batch])
    q = pairs.queries[batch]
    z = q @ weights
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    norms = np.where(norms == 0, 1.0, norms)
    qn = z / norms
    p = pairs.passages[candidates]
    logits = qn @ p.T / config.temperature
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    rows = np.arange(len(batch))
    loss = float(-np.log(probs[rows, targets] + 1e-12).mean())
    d_logits = probs.copy()
    d_logits[rows, targets] -= 1.0
    d_logits /= len(batch)
    d_qn = d_logits @ p / config.temperature
    d_z = (d_qn - qn * (d_qn * qn).sum(axis=1, keepdims=True)) / norms
    grad = q.T @ d_z
    eye = np.eye(weights.shape[0], dtype=weights.dtype)
    loss += config.identity_l2 * float(((weights - eye) ** 2).sum())
    grad += config.identity_l2 * 2.0 * (weights - eye)
    return loss, grad


def train_adapter(train: TrainingPairs, config: AdapterConfig, train_ranking: RankingSet,
                  val_ranking: RankingSet | None = None) -> AdapterResult:
    """Train ``W`` on InfoNCE for ``config.steps`` steps; the best step on ``val_ranking`` is kept (see the module doc)."""
    dim = train.queries.shape[1]
    weights = np.eye(dim, dtype=np.float64)
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    rng = np.random.default_rng(config.seed)
    use_val = val_ranking is not None and val_ranking.queries.shape[0] > 0
    history = [{"step": 0, "loss": None, "train_mrr_10": mrr_at_10(None, train_ranking),
                "val_mrr_10": mrr_at_10(None, val_ranking) if val_ranking is not None else None}]
    best = (history[0]["val_mrr_10"] if use_val else None, 0, weights.copy())
    order = rng.permutation(len(train))
    cursor = 0
    for step in range(1, config.steps + 1):
        if cursor + config.batch_size > len(order):
            order, cursor = rng.permutation(len(train)), 0
        batch = order[cursor:cursor + config.batch_size]
        cursor += config.batch_size
        loss, grad = _batch_loss_and_grad(weights, train, batch, config)
        if config.optimizer == "sgd":
            weights -= config.learning_rate * grad
        else:
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad ** 2
            weights -= config.learning_rate * (m / (1 - beta1 ** step)) / (np.sqrt(v / (1 - beta2 ** step)) + eps)
        if step % config.eval_every == 0 or step == config.steps:
            entry = {"step": step, "loss": loss, "train_mrr_10": mrr_at_10(weights, train_ranking),
                     "val_mrr_10": mrr_at_10(weights, val_ranking) if val_ranking is not None else None}
            history.append(entry)
            if use_val and entry["val_mrr_10"] > best[0]:
                best = (entry["val_mrr_10"], step, weights.copy())
    if use_val:
        return AdapterResult(weights=best[2].astype(np.float32), best_step=best[1], selected_by="selection_mrr_10", history=history)
    return AdapterResult(weights=weights.astype(np.float32), best_step=config.steps, selected_by="last_step", history=history)


class AdaptedEmbedder:
    """The embedder with the query adapter applied to its query vectors (passages unchanged)."""

    def __init__(self, base: Embedder, weights: np.ndarray, adapter_id: str) -> None:
        """Wrap ``base`` with the ``dim x dim`` adapter ``weights``."""
        if weights.shape != (base.dim, base.dim):
            raise ValueError(f"adapter {adapter_id} is {weights.shape}, the embedder {base.name} has dim {base.dim}")
        self.base = base
        self.weights = weights
        self.name = f"{base.name}+adapter-{adapter_id}"
        self.dim = base.dim

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors of the wrapped embedder."""
        return self.base.passages(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """Adapted, re-normalised query vectors."""
        return apply_adapter(self.weights, self.base.queries(texts))
