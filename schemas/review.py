"""Review decisions: the JSON file the HTML report exports, and the durable ``review`` table.

Decisions file (what "export decisions" downloads, what ``ragprep review apply`` reads)::

    {"format": "ragprep-review-decisions/1", "build": "<report build id>",
     "decisions": [{"qa_id": "...", "decision": "approve|reject|edit",
                    "question": "...", "answer": "...",      # the edited text, for "edit"
                    "reviewer": "...", "decided_at": "2026-11-30T10:00:00Z"}],
     "headers": [{"doc_id": "...", "field": "Stage", "value": "P2", "reviewer": "..."}]}
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema

DECISIONS_FORMAT = "ragprep-review-decisions/1"


class Decision(BaseModel):
    qa_id: str
    decision: Literal["approve", "reject", "edit"]
    question: str | None = Field(None, description="Edited question (decision 'edit').")
    answer: str | None = Field(None, description="Edited answer (decision 'edit').")
    reviewer: str | None = None
    decided_at: datetime | None = None


class HeaderDecision(BaseModel):
    """An expert's value for one header field of one test report (it wins over what the rules read)."""

    doc_id: str
    field: str
    value: str | None = Field(None, description="The field's value; None clears it (the report does not state it).")
    reviewer: str | None = None
    decided_at: datetime | None = None


class DecisionsFile(BaseModel):
    format: Literal["ragprep-review-decisions/1"] = DECISIONS_FORMAT
    build: str | None = None
    decisions: list[Decision] = Field(default_factory=list)
    headers: list[HeaderDecision] = Field(default_factory=list, description="Header fields filled in by an expert.")


class ReviewRow(Decision):
    """A stored decision; the latest per qa_id wins."""

    applied_at: datetime
    source_file: str
    chunk_id: str | None = Field(None, description="The pair's chunk when the decision was applied (dataset splits follow it).")
    auto_approved: bool | None = Field(
        None,
        description="The pair was auto-approved (approved, no flags) before any expert decided on it: the decision is a spot "
        "check. None when the pair was unknown at apply time (or the row predates this column).",
    )
    chunk_base: str | None = Field(
        None, description="Hash of the pair's chunk text without report header (markdown_v0) when the decision was applied.")
    question_type: str | None = Field(None, description="The pair's question type when the decision was applied.")
    pair_question: str | None = Field(None, description="The pair's generated question when the decision was applied.")
    pair_answer: str | None = Field(
        None, description="The pair's generated answer when the decision was applied: with chunk_base and question_type, what "
        "carries the decision over to the regenerated pair when the QA id changes (a filled report header rewrites questions).")


REVIEW_SCHEMA = arrow_schema(ReviewRow)


class HeaderReviewRow(HeaderDecision):
    """A stored header decision; the latest per (doc_id, field) wins."""

    applied_at: datetime
    source_file: str


HEADER_REVIEW_SCHEMA = arrow_schema(HeaderReviewRow)
