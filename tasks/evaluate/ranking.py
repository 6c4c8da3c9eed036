"""Rank metrics of retrieval: MAP@k, MRR@k, Recall@k and Success@k over ranked chunk ids.

For one question with the set ``R`` of relevant (gold) chunk ids and a ranked list
``d_1, d_2, ...`` of retrieved ids, with ``rel_i = 1`` when ``d_i`` is in ``R``:

- **Success@k** (hit@k) = 1 if any of ``d_1..d_k`` is relevant, else 0.
- **Recall@k** = ``|{d_1..d_k} ∩ R| / |R|``.
- **AP@k** (average precision at k) = ``(1 / min(|R|, k)) * Σ_{i<=k} P@i * rel_i``, where
  ``P@i`` = relevant among ``d_1..d_i`` divided by ``i``; **MAP@k** is its mean over questions.
- **RR@k** (reciprocal rank at k) = ``1 / i`` for the first relevant ``d_i`` with ``i <= k``, else 0;
  **MRR@k** is its mean over questions.

Every metric is averaged over questions (a question counts once, however many gold it has).
With one gold chunk per question (the dataset's QA pairs: each is written from one chunk)
Recall@k = Success@k, AP@k = RR@k, and MAP@1 = Success@1: a gold at rank ``r`` scores
``1/r`` for MAP@k and MRR@k when ``r <= k``, and 0 beyond. The general definitions are kept
so that multi-gold questions (several supporting chunks) are scored correctly too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

CUTOFFS = (1, 5, 10)
"""The k of MAP@k, Recall@k and Success@k in every table."""

MRR_CUTOFF = 10

METRICS = (
    *(f"map_{k}" for k in CUTOFFS),
    f"mrr_{MRR_CUTOFF}",
    *(f"recall_{k}" for k in CUTOFFS),
    *(f"success_{k}" for k in CUTOFFS),
)
"""Metric column names, in table order."""

LABELS = {
    **{f"map_{k}": f"MAP@{k}" for k in CUTOFFS},
    f"mrr_{MRR_CUTOFF}": f"MRR@{MRR_CUTOFF}",
    **{f"recall_{k}": f"R@{k}" for k in CUTOFFS},
    **{f"success_{k}": f"S@{k}" for k in CUTOFFS},
}
"""Column headings of the metric columns."""


def success_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1.0 when a relevant id is among the first ``k``, else 0.0."""
    return 1.0 if any(d in relevant for d in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the relevant ids among the first ``k`` (0.0 when nothing is relevant)."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def average_precision_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """AP@k: the sum of precision@i at each relevant rank i <= k, over min(|relevant|, k)."""
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    seen: set[str] = set()
    for i, d in enumerate(ranked[:k], start=1):
        if d in relevant and d not in seen:
            hits += 1
            total += hits / i
        seen.add(d)
    return total / min(len(relevant), k)


def reciprocal_rank_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1/i for the first relevant id at rank i <= k, else 0.0."""
    for i, d in enumerate(ranked[:k], start=1):
        if d in relevant:
            return 1.0 / i
    return 0.0


def question_metrics(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """Every metric of ``METRICS`` for one question."""
    out = {f"map_{k}": average_precision_at(ranked, relevant, k) for k in CUTOFFS}
    out[f"mrr_{MRR_CUTOFF}"] = reciprocal_rank_at(ranked, relevant, MRR_CUTOFF)
    out |= {f"recall_{k}": recall_at(ranked, relevant, k) for k in CUTOFFS}
    out |= {f"success_{k}": success_at(ranked, relevant, k) for k in CUTOFFS}
    return out


def mean_metrics(per_question: Iterable[dict[str, float]]) -> dict[str, float | None]:
    """The mean of each metric over questions (None for every metric when there are none)."""
    rows = list(per_question)
    if not rows:
        return {m: None for m in METRICS}
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}


def first_relevant_rank(ranked: Sequence[str], relevant: set[str]) -> int | None:
    """The 1-based rank of the first relevant id, None when none was retrieved."""
    for i, d in enumerate(ranked, start=1):
        if d in relevant:
            return i
    return None
