"""``elements``: one row per text block, table, picture, chart, SmartArt or notes block."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema

ElementKind = Literal["title", "text", "table", "chart", "picture", "smartart", "notes", "ocr_page"]
TextSource = Literal["text", "repaired", "ocr"]
OcrStatus = Literal["not_needed", "ok", "no_text", "unavailable", "disabled", "error"]


class ElementRow(BaseModel):
    element_id: str
    doc_id: str
    source_path: str
    unit: Literal["slide", "page"]
    number: int = Field(description="1-based slide or page number.")
    order: int = Field(description="Reading order within the slide/page.")
    kind: ElementKind
    text: str = Field(description="The element rendered as Markdown (empty for a picture without text).")
    bbox: list[float] | None = Field(None, description="x0, y0, x1, y1 in points from the top-left corner.")
    group_path: str | None = Field(None, description="Enclosing group shapes, outermost first, for slide shapes.")
    image_path: str | None = Field(None, description="Content-addressed image file, relative to the root.")
    image_width: int | None = None
    image_height: int | None = None
    ocr_text: str | None = None
    ocr_status: OcrStatus = "not_needed"
    text_source: TextSource | None = Field(
        None,
        description="Where a PDF element's text comes from: text (the text layer), repaired (word spaces re-read from "
        "glyph positions; meta text_source_reason says why), ocr (the page OCRed). None for other formats and pictures.",
    )
    extractor: str = Field(description="What produced the row: python-pptx, chart-xml, pymupdf, tesseract, ...")
    meta: str | None = Field(None, description="Small JSON with kind-specific facts (table shape, chart type, heading level).")
    vlm_text: str | None = Field(None, description="Description of a picture, chart or table (the MMDocRAG vlm_text).")
    vlm_provider: str | None = None
    vlm_model: str | None = None
    vlm_prompt: str | None = Field(None, description="prompt id@version (or heuristic:step@rules) that produced vlm_text.")
    vlm_flag: str | None = Field(None, description="Why vlm_text is missing or doubtful (failed call, invalid output).")


ELEMENTS_SCHEMA = arrow_schema(ElementRow)
