"""``quotes``: MMDocRAG-style quotes — layout regions of a page or slide, as text or as image.

Text quotes (paragraphs, titles, list items, captions, equations) carry their text; image
quotes (tables, figures, charts, pictures) carry a rendered crop (``img_path``), the OCR
text of that crop and a VLM description. A quote's identity is ``(doc_id, page_id,
layout_id)``; ``quote_id`` is derived from it. The local labels ``text3`` / ``image2``
exist only inside a candidate set (``mm_items``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from schemas import arrow_schema

QuoteModality = Literal["text", "image"]
QuoteType = Literal["title", "text", "list", "caption", "footnote", "equation", "table", "figure", "chart", "picture"]
IMAGE_TYPES = ("table", "figure", "chart", "picture")


class QuoteRow(BaseModel):
    quote_id: str = Field(description="Content-free id from (doc_id, page_id, layout_id).")
    doc_id: str
    source_path: str
    unit: Literal["page", "slide"]
    page_id: int = Field(description="0-based page (or slide) index, as in MMDocRAG.")
    layout_id: int = Field(description="0-based position of the region in the page's reading order.")
    modality: QuoteModality = Field(description="image when type is one of IMAGE_TYPES, text otherwise.")
    type: QuoteType
    text: str = Field(description="The text of a text quote; for an image quote, the structure it was drawn from (slides) or ''.")
    bbox: list[float] = Field(description="x0, y0, x1, y1 in points from the page's top-left corner.")
    page_size: list[float] = Field(description="width, height of the page or slide in points.")
    img_path: str | None = Field(None, description="Rendered crop (PDF) or picture/table rendering (slides), relative to the root.")
    img_width: int | None = None
    img_height: int | None = None
    ocr_text: str | None = None
    ocr_status: str = "not_needed"
    vlm_text: str | None = None
    vlm_provider: str | None = None
    vlm_model: str | None = None
    vlm_prompt: str | None = None
    vlm_flag: str | None = None
    chunk_id: str | None = Field(None, description="The chunk covering this page/slide (quotes follow it into splits).")
    element_id: str | None = Field(None, description="For slide quotes: the element the quote was made from.")
    layout_backend: str = Field(description="What found the region: pymupdf-layout, mineru, python-pptx.")


QUOTES_SCHEMA = arrow_schema(QuoteRow)
