"""``qa_pairs``: generated question-answer pairs, one row per pair, with flags and review state."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, Field

QuestionType = Literal["factual", "numeric", "comparative", "procedural", "causal", "definitional"]
Modality = Literal["text", "table", "chart", "image"]
QaStatus = Literal["approved", "pending", "rejected"]
FLAG_CODES = (
    "unsupported_answer",
    "number_not_in_chunk",
    "near_duplicate",
    "not_a_question",
    "answer_leak",
    "too_short",
    "too_long",
    "language_mismatch",
    "generic_question",
    "generation_failed",
)


class QaPairRow(BaseModel):
    qa_id: str = Field(description="Content-derived: chunk id + question type + question + answer as generated.")
    chunk_id: str
    doc_id: str
    source_path: str
    slide: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    question: str = Field(description="Final question (the reviewer's edit when there is one).")
    answer: str = Field(description="Final answer (the reviewer's edit when there is one).")
    generated_question: str
    generated_answer: str
    question_type: QuestionType
    target_modality: Modality = Field(description="text, or the table/chart/image the question can only be answered from.")
    evidence_element_id: str | None = Field(None, description="The element (table, chart, picture) a modality question targets.")
    language: str = Field(description="Detected language of the question: ko | en | other.")
    flags: list[str] = Field(default_factory=list, description="Flag codes (see FLAG_CODES).")
    flag_reasons: list[str] = Field(default_factory=list, description="One human-readable reason per flag.")
    status: QaStatus
    review_decision: str | None = Field(None, description="approve | reject | edit, from the durable review table.")
    reviewer: str | None = None
    provider: str
    model: str
    prompt: str
    prompt_sha256: str | None = None


QA_PAIRS_SCHEMA = pa.schema(
    [
        pa.field("qa_id", pa.string(), nullable=False),
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("slide", pa.int32()),
        pa.field("page_start", pa.int32()),
        pa.field("page_end", pa.int32()),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("generated_question", pa.string(), nullable=False),
        pa.field("generated_answer", pa.string(), nullable=False),
        pa.field("question_type", pa.string(), nullable=False),
        pa.field("target_modality", pa.string(), nullable=False),
        pa.field("evidence_element_id", pa.string()),
        pa.field("language", pa.string(), nullable=False),
        pa.field("flags", pa.list_(pa.string()), nullable=False),
        pa.field("flag_reasons", pa.list_(pa.string()), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("review_decision", pa.string()),
        pa.field("reviewer", pa.string()),
        pa.field("provider", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("prompt", pa.string(), nullable=False),
        pa.field("prompt_sha256", pa.string()),
    ]
)


class QaFailureRow(BaseModel):
    """``qa_failures``: a chunk whose generation failed this run; it is retried on the next."""

    chunk_id: str
    source_path: str
    reason: str


QA_FAILURES_SCHEMA = pa.schema(
    [
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
    ]
)
