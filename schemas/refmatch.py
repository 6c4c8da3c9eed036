"""``refmatch`` results: one row per answer segment, with the chunk it cites (``ragprep refmatch``).

Written per input file under ``<root>/refmatch/<name>.parquet`` (not a dataset table): teams check the
answers their own RAG produced against the corpus.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema


class SegmentRow(BaseModel):
    item_id: str = Field(description="The input line's id, else a stable id of its question and answer.")
    line: int = Field(description="1-based line of the input JSONL.")
    question: str
    segment_index: int = Field(description="0-based position of the segment in its answer.")
    sentence_start: int = Field(description="0-based first sentence of the answer in this segment.")
    sentence_end: int = Field(description="0-based sentence after the segment's last.")
    char_start: int = Field(description="Where the segment starts in the answer (characters).")
    char_end: int
    text: str
    status: Literal["supported", "below_threshold", "unsupported"] = Field(
        description="supported: cites its chunk at or above the threshold; below_threshold: its best chunk scores under it; "
        "unsupported: no candidate chunk supports it (a figure no chunk holds, or a sentence from elsewhere)."
    )
    score: float = Field(description="Support of the segment by its chunk (0-1); for an unsupported one, the best any chunk gave.")
    chunk_id: str | None = None
    doc_id: str | None = None
    document: str | None = None
    source_path: str | None = None
    slide: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    chunk_title: str | None = None
    candidates: list[str] = Field(default_factory=list, description="Chunk ids the answer was matched against.")
    scorer: str
    threshold: float
    scorer_calls: int = Field(description="Span-chunk pairs scored for the whole answer.")
    naive_calls: int = Field(description="What scoring every span of sentences against every candidate would take.")


SEGMENTS_SCHEMA = arrow_schema(SegmentRow)
