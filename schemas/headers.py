"""``headers``: one row per test report: the configured header fields and where each came from."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from schemas import ArrowType, arrow_schema


class HeaderField(BaseModel):
    name: Annotated[str, ArrowType(nullable=True)]  # the Parquet struct has always declared it nullable
    value: str | None = Field(None, description="None when the field was not found: never invented.")
    source: str | None = Field(
        None, description="Where the value was read, e.g. 'slide 1 table r1c2', 'slide 1 key-value', 'file name', 'expert'."
    )
    confidence: float | None = Field(
        None, description="How sure the reading is: 1.0 expert, 0.95 table, 0.9 key-value, 0.85 label/value boxes, "
        "0.6 title line, 0.5 file name; a model's value 0.7."
    )


class HeaderRow(BaseModel):
    doc_id: str
    source_path: str
    fields: list[HeaderField]
    missing: list[str] = Field(
        description="Configured fields not found (a field an expert marked \"not stated\" is empty but not missing).")
    review: list[str] = Field(
        default_factory=list, description="Fields an expert should fill in or confirm: missing or read with low confidence."
    )
    header_block: str = Field(description="The block prepended to each chunk of the report (markdown_v1).")
    provider: str
    model: str
    prompt: str
    prompt_sha256: str | None = None
    flag: str | None = None


HEADERS_SCHEMA = arrow_schema(HeaderRow)
