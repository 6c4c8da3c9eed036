"""``qa_pairs``: generated question-answer pairs, one row per pair, with flags and review state."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema
from schemas.chunks import FirstPage, LastPage, SlideNumber

QuestionType = Literal["factual", "numeric", "comparative", "procedural", "causal", "definitional"]
Modality = Literal["text", "table", "chart", "image"]
QaStatus = Literal["approved", "pending", "rejected"]
CRITIC_CRITERIA = ("grounded", "standalone", "well_formed", "useful")
"""What the judge (critic) scores 1-5 per pair (the QA rubric)."""
LOW_QUALITY = "low_quality"
LOW_QUALITY_FLAGS = tuple(f"{LOW_QUALITY}:{c}" for c in (*CRITIC_CRITERIA, "judge_failed"))
"""The judge's flags: ``low_quality:<criterion>`` per criterion scored below qa.critic_min_score, and
``low_quality:judge_failed`` when the critic gave no usable reply."""
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
    "suspicious_content",
    "generation_failed",
    "ambiguous_gold",
    *LOW_QUALITY_FLAGS,
)


class QaPairRow(BaseModel):
    qa_id: str = Field(description="Content-derived: chunk id + question type + question + answer as generated.")
    chunk_id: str
    doc_id: str
    source_path: str
    slide: SlideNumber = None
    page_start: FirstPage = Field(None, description="First page the pair cites: where its answer is (see page_source).")
    page_end: LastPage = Field(
        None, description="Last page the pair cites (its answer runs over a page break, or its table goes on, when > page_start)."
    )
    question: str = Field(description="Final question (the reviewer's edit when there is one).")
    answer: str = Field(description="Final answer (the reviewer's edit when there is one).")
    generated_question: str
    generated_answer: str
    question_type: QuestionType
    target_modality: Modality = Field(description="text, or the table/chart/image the question can only be answered from.")
    evidence_element_id: str | None = Field(None, description="The element (table, chart, picture) a modality question targets.")
    page_source: Literal["element", "answer", "chunk"] | None = Field(
        None, description="qa: how page_start/page_end (the pages the pair cites) were found: element (the page of the "
        "evidence element the generator named), answer (the chunk's page holding the answer text), chunk (neither: the "
        "chunk's own pages). A slide pair keeps its slide; None for pairs made before pages were cited (chunk's pages)."
    )
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
    generator_rule: str | None = Field(
        None, description="qa: the heuristic generator's rule (source) that made the pair (tasks.qa.rules.source_rule); "
        "None for a model's pair. With the document kind it is an auto-approval band of the offline critic."
    )
    critic_grounded: int | None = Field(None, description="judge, 1-5: the answer is correct and fully supported by the chunk.")
    critic_standalone: int | None = Field(None, description="judge, 1-5: the question is understood without the chunk.")
    critic_well_formed: int | None = Field(None, description="judge, 1-5: a grammatical, real question; a complete answer.")
    critic_useful: int | None = Field(None, description="judge, 1-5: a question a real user might ask; a meaningful fact.")
    critic_usable: bool | None = Field(
        None, description="judge: every critic score >= qa.critic_min_score; None before the judge ran or when it failed."
    )
    critic_reasons: list[str] = Field(default_factory=list, description="judge: one reason per deduction, 'criterion: why'.")
    critic_provider: str | None = Field(None, description="judge: provider of the critic (heuristic for the offline rules).")
    critic_model: str | None = None
    critic_prompt: str | None = Field(None, description="judge: prompt id@version (heuristic:judge_qa@ragprep-rules-1 offline).")


QA_PAIRS_SCHEMA = arrow_schema(QaPairRow)


class QaFailureRow(BaseModel):
    """``qa_failures``: a chunk whose generation failed this run; it is retried on the next."""

    chunk_id: str
    source_path: str
    reason: str


QA_FAILURES_SCHEMA = arrow_schema(QaFailureRow)
