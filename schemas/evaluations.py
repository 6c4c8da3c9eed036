"""Retrieval evaluations (``ragprep evaluate``): the metrics of every variant and group, and every test question's rank.

Written per evaluation under ``<root>/evaluations/<version>/<eval_id>.parquet`` and ``<eval_id>-questions.parquet``
(downstream tables: not working tables, not versioned). Every column is nullable, as in the files written before
these models existed; ``n`` and ``gold_rank`` are int64.
"""

from __future__ import annotations

from typing import Annotated

import pyarrow as pa
from pydantic import BaseModel

from schemas import ArrowType, arrow_schema

_TEXT = ArrowType(nullable=True)
_COUNT = ArrowType(pa.int64(), nullable=True)

METRIC_COLUMNS = ("map_1", "map_5", "map_10", "mrr_10", "recall_1", "recall_5", "recall_10", "success_1", "success_5",
                  "success_10")
"""The metric columns, in table order (``tasks.evaluate.ranking.METRICS`` names the same; a test keeps them equal)."""


class _VariantColumns(BaseModel):
    version_id: Annotated[str, _TEXT]
    eval_id: Annotated[str, _TEXT]
    text: Annotated[str, _TEXT]
    retriever: Annotated[str, _TEXT]
    encoder: Annotated[str, _TEXT]
    reranker: Annotated[str, _TEXT]


class EvaluationRow(_VariantColumns):
    """One variant's metrics over one group of questions (``group_kind`` all / doc_type / modality)."""

    group_kind: Annotated[str, _TEXT]
    group: Annotated[str, _TEXT]
    n: Annotated[int, _COUNT]
    map_1: float | None = None
    map_5: float | None = None
    map_10: float | None = None
    mrr_10: float | None = None
    recall_1: float | None = None
    recall_5: float | None = None
    recall_10: float | None = None
    success_1: float | None = None
    success_5: float | None = None
    success_10: float | None = None
    embedder: Annotated[str, _TEXT]
    adapter_id: str | None = None
    """The trained query adapter's model id (None: no trained encoder rows)."""
    reranker_id: str | None = None
    """The trained re-ranker's model id (None: no trained re-ranker rows)."""


class EvaluationQuestionRow(_VariantColumns):
    """One test question under one variant: the rank of its gold chunk and the top chunk ids."""

    qa_id: Annotated[str, _TEXT]
    chunk_id: Annotated[str, _TEXT]
    gold_rank: Annotated[int | None, _COUNT] = None
    top: Annotated[list[str], ArrowType(nullable=True)]


EVALUATIONS_SCHEMA = arrow_schema(EvaluationRow)
EVALUATION_QUESTIONS_SCHEMA = arrow_schema(EvaluationQuestionRow)
