"""``chunks``: one slide = one chunk; one chapter (or part of an over-long chapter) = one chunk."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema

# Where a chunk lies in its document; the rows made from a chunk (qa_pairs) carry the same columns.
SlideNumber = Annotated[int | None, Field(description="1-based slide of a deck's chunk; None for a PDF.")]
FirstPage = Annotated[int | None, Field(description="1-based first page of a PDF's chunk; None for a deck.")]
LastPage = Annotated[int | None, Field(description="1-based last page of a PDF's chunk (inclusive); None for a deck.")]


class ChunkRow(BaseModel):
    chunk_id: str
    doc_id: str
    source_path: str
    unit: Literal["slide", "chapter", "section", "pages"] = Field(
        description="slide; chapter (outline); section (a sub-heading of a split or one-chapter book); pages (fixed window)."
    )
    slide: SlideNumber = None
    page_start: FirstPage = None
    page_end: LastPage = None
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

    @property
    def qa_text(self) -> str:
        """The text QA generation, flags, the judge and the headers stage read: the corrected Markdown
        (``markdown_v0``), else the extracted ``markdown``."""
        return self.markdown_v0 or self.markdown


CHUNKS_SCHEMA = arrow_schema(ChunkRow)
