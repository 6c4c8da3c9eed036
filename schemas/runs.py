"""``runs``: one row per pipeline run, appended."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import pyarrow as pa
from pydantic import BaseModel

from schemas import ArrowType, arrow_schema


class RunRow(BaseModel):
    """One ingest run: ``n_documents`` counts the files found (ok + partial + failed + duplicate); removed
    documents are counted apart, and ``n_failed`` leaves duplicates out."""

    run_id: str
    started_at: datetime
    finished_at: datetime
    n_documents: int
    n_ok: int
    n_partial: int
    n_failed: int
    n_reused: int
    n_duplicate: int = 0
    n_new: int = 0
    n_changed: int = 0
    n_unchanged: int = 0
    n_removed: int = 0
    n_elements: Annotated[int, ArrowType(pa.int64())]
    n_chunks: Annotated[int, ArrowType(pa.int64())]
    settings_fingerprint: str
    ragprep_version: str


RUNS_SCHEMA = arrow_schema(RunRow)
