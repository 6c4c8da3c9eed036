"""``chunks``: one slide = one chunk; one chapter (or part of an over-long chapter) = one chunk."""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, Field


class ChunkRow(BaseModel):
    chunk_id: str
    doc_id: str
    source_path: str
    unit: Literal["slide", "chapter", "section", "pages"] = Field(
        description="slide; chapter (outline); section (a sub-heading of a split or one-chapter book); pages (fixed window)."
    )
    slide: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    chapter_index: int | None = Field(None, description="0-based index of the chapter in the document.")
    part_index: int = Field(0, description="Position of this chunk inside a chapter split for the token budget.")
    title: str
    heading_path: list[str] = Field(default_factory=list, description="Outline titles above and including this chunk.")
    markdown: str
    token_count: int
    has_table: bool
    has_image: bool
    has_chart: bool
    has_ocr: bool
    element_ids: list[str]
    markdown_v0: str | None = Field(None, description="Corrected Markdown without report header (the paper's Ver.0).")
    markdown_v1: str | None = Field(None, description="Report header block + markdown_v0 (Ver.1); equals v0 for non-reports.")
    correction: str = Field(
        "not_run", description="not_run | corrected | unchanged | flagged (kept uncorrected) | not_applicable (chapters)"
    )
    correction_flags: list[str] = Field(default_factory=list)
    correct_provider: str | None = None
    correct_model: str | None = None
    correct_prompt: str | None = None


CHUNKS_SCHEMA = pa.schema(
    [
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("unit", pa.string(), nullable=False),
        pa.field("slide", pa.int32()),
        pa.field("page_start", pa.int32()),
        pa.field("page_end", pa.int32()),
        pa.field("chapter_index", pa.int32()),
        pa.field("part_index", pa.int32(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("heading_path", pa.list_(pa.string()), nullable=False),
        pa.field("markdown", pa.string(), nullable=False),
        pa.field("token_count", pa.int32(), nullable=False),
        pa.field("has_table", pa.bool_(), nullable=False),
        pa.field("has_image", pa.bool_(), nullable=False),
        pa.field("has_chart", pa.bool_(), nullable=False),
        pa.field("has_ocr", pa.bool_(), nullable=False),
        pa.field("element_ids", pa.list_(pa.string()), nullable=False),
        pa.field("markdown_v0", pa.string()),
        pa.field("markdown_v1", pa.string()),
        pa.field("correction", pa.string(), nullable=False),
        pa.field("correction_flags", pa.list_(pa.string()), nullable=False),
        pa.field("correct_provider", pa.string()),
        pa.field("correct_model", pa.string()),
        pa.field("correct_prompt", pa.string()),
    ]
)
