"""What a retrieval evaluation measured: its variants (rows of Tables 4-5) and its summary.

Shared by ``retrieval.py`` (which computes it) and ``retrieval_report.py`` (which lays it out).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

TEXT_LABELS = {"v0": "Ver.0", "v1": "Ver.1"}


@dataclass(frozen=True)
class Variant:
    """One row of the evaluation table."""

    text: str
    retriever: str
    encoder: str
    reranker: str

    @property
    def key(self) -> str:
        """``v1/hybrid/vanilla/none``."""
        return f"{self.text}/{self.retriever}/{self.encoder}/{self.reranker}"


class LeakDiagnostic(BaseModel):
    """Test questions that name their gold chunk's file or title."""

    questions: int
    names_file: int
    names_title: int
    names_either: int

    def share(self, count: int) -> float:
        """``count`` as a share of the questions (0 when there are none)."""
        return count / self.questions if self.questions else 0.0


class EvaluationSummary(BaseModel):
    """What one evaluation measured and where it wrote it."""

    version_id: str
    eval_id: str
    created_at: str
    embedder: str
    adapter: dict | None
    """Card of the trained query adapter used (None: no trained encoder rows)."""
    reranker: dict | None
    """Card of the trained re-ranker used (None: no trained re-ranker rows)."""
    embedder_reranker: str | None
    options: dict
    test_questions: int
    """Questions evaluated: the test split's (see ``options['question_splits']``)."""
    pool_chunks: int
    pool_by_split: dict[str, int]
    questions_by_doc_type: dict[str, int]
    questions_by_modality: dict[str, int]
    leak: LeakDiagnostic
    rows: list[dict]
    """One per variant and group: the variant's fields, ``group_kind``, ``group``, ``n`` and every metric."""
    parquet: str | None = None
    questions_parquet: str | None = None
    markdown: str | None = None

    def row(self, variant: Variant, group_kind: str = "all", group: str = "all") -> dict | None:
        """The metrics row of a variant and group (None when it was not evaluated)."""
        for r in self.rows:
            if (r["text"], r["retriever"], r["encoder"], r["reranker"], r["group_kind"], r["group"]) == (
                variant.text, variant.retriever, variant.encoder, variant.reranker, group_kind, group
            ):
                return r
        return None

    def variants(self) -> list[Variant]:
        """The evaluated variants, in table order."""
        seen: dict[str, Variant] = {}
        for r in self.rows:
            v = Variant(r["text"], r["retriever"], r["encoder"], r["reranker"])
            seen.setdefault(v.key, v)
        return list(seen.values())
