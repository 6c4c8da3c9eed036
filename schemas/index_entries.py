"""The search index's rows (``ragprep index``): every column of its LanceDB table but the vector.

Written by ``tasks/index/store.py:write_index`` into ``<root>/index/<variant>/`` (LanceDB, not Parquet), so the
registry names its schema and the index writes it. Every column is nullable, as in the indexes written before
this model existed; ``slide`` and the pages are int32.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

from schemas import ArrowType, arrow_schema

_N = ArrowType(nullable=True)


class IndexEntryRow(BaseModel):
    """One chunk of a dataset version as the search index holds it."""

    chunk_id: Annotated[str, _N]
    doc_id: Annotated[str, _N]
    document: Annotated[str, _N]
    source_path: Annotated[str, _N]
    doc_type: Annotated[str, _N]
    unit: Annotated[str, _N]
    slide: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    title: Annotated[str, _N]
    split: Annotated[str, _N]
    text: Annotated[str, _N]
    text_hash: Annotated[str, _N]


INDEX_ENTRIES_SCHEMA = arrow_schema(IndexEntryRow)
