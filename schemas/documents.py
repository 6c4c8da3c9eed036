"""``documents``: one row per input file, including the ones that failed."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from pydantic import BaseModel, Field

from schemas import ArrowType, arrow_schema

DocumentStatus = Literal["ok", "partial", "failed", "duplicate", "removed"]
"""ok | partial (rows, with warnings) | failed (no rows; ``error`` says why) | duplicate (identical bytes to
``duplicate_of``, ingested once under that path) | removed (in the previous run, not found this time)."""

DocumentChange = Literal["new", "changed", "unchanged", "removed", "failed"]
"""Against the previous run's ``documents`` table, by path and content hash: new (path not seen before), changed
(same path, other content, or re-extracted because extraction settings changed), unchanged (same path, same
content, its part reused), removed, failed (could not be read this run)."""

USABLE_STATUSES: frozenset[str] = frozenset({"ok", "partial"})
"""The statuses of documents that contribute rows: later stages read only these."""


class DocumentRow(BaseModel):
    doc_id: str = Field(description="First 16 hex digits of the content SHA-256 (failed files: of path+content).")
    content_sha256: str
    path: str = Field(description="The path as discovered.")
    file_name: str
    doc_type: str = Field(description="test_report | meeting_note | textbook | other (settings.doc_type_rules).")
    doc_type_reason: str | None = Field(
        None, description="Why: the file-name rule that matched, or the header fields found on the first slides."
    )
    format: str = Field(description="pptx | pdf | unknown")
    size_bytes: Annotated[int, ArrowType(pa.int64())]
    title: str | None = None
    n_units: int = Field(0, description="Slides of a deck or pages of a PDF.")
    n_elements: int = 0
    n_chunks: int = 0
    n_ocr_units: int = Field(0, description="Pictures or pages whose text came from OCR.")
    status: DocumentStatus
    error: str | None = Field(
        None, description="One-line reason naming the file when status is failed, duplicate or removed."
    )
    warnings: list[str] = Field(default_factory=list, description="Non-fatal problems (status partial).")
    extractor: str = Field(description="Backend and ragprep version that produced the rows.")
    settings_fingerprint: str
    change: DocumentChange = Field("new", description="new | changed | unchanged | removed | failed, against the previous run.")
    duplicate_of: str | None = Field(None, description="Status duplicate: the path of the first file with these bytes.")


DOCUMENTS_SCHEMA = arrow_schema(DocumentRow)
