"""``headers``: one row per test report: the configured header fields and where each came from."""

from __future__ import annotations

import pyarrow as pa
from pydantic import BaseModel, Field


class HeaderField(BaseModel):
    name: str
    value: str | None = Field(None, description="None when the field was not found: never invented.")
    source: str | None = Field(None, description="Where the value was read, e.g. 'slide 1 key-value', 'file name'.")


class HeaderRow(BaseModel):
    doc_id: str
    source_path: str
    fields: list[HeaderField]
    missing: list[str] = Field(description="Configured fields not found.")
    header_block: str = Field(description="The block prepended to each chunk of the report (markdown_v1).")
    provider: str
    model: str
    prompt: str
    prompt_sha256: str | None = None
    flag: str | None = None


_FIELD = pa.struct([pa.field("name", pa.string()), pa.field("value", pa.string()), pa.field("source", pa.string())])

HEADERS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("fields", pa.list_(_FIELD), nullable=False),
        pa.field("missing", pa.list_(pa.string()), nullable=False),
        pa.field("header_block", pa.string(), nullable=False),
        pa.field("provider", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("prompt", pa.string(), nullable=False),
        pa.field("prompt_sha256", pa.string()),
        pa.field("flag", pa.string()),
    ]
)
