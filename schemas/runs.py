"""``runs``: one row per pipeline run, appended."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
from pydantic import BaseModel


class RunRow(BaseModel):
    run_id: str
    started_at: datetime
    finished_at: datetime
    n_documents: int
    n_ok: int
    n_partial: int
    n_failed: int
    n_reused: int
    n_elements: int
    n_chunks: int
    settings_fingerprint: str
    ragprep_version: str


RUNS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("finished_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("n_documents", pa.int32(), nullable=False),
        pa.field("n_ok", pa.int32(), nullable=False),
        pa.field("n_partial", pa.int32(), nullable=False),
        pa.field("n_failed", pa.int32(), nullable=False),
        pa.field("n_reused", pa.int32(), nullable=False),
        pa.field("n_elements", pa.int64(), nullable=False),
        pa.field("n_chunks", pa.int64(), nullable=False),
        pa.field("settings_fingerprint", pa.string(), nullable=False),
        pa.field("ragprep_version", pa.string(), nullable=False),
    ]
)
