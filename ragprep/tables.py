"""The one registry of ragprep's tables, and the store that owns every read and write of them.

Each table has one row model (``schemas/``) from which its Arrow schema is derived, an id
column, and where it goes: the working tables of the last run (``tables/<name>.parquet``,
queryable with ``ragprep sql``), dataset versions (``versioned``), and a Great Expectations
suite (``has_suite``). Stages never open Parquet files themselves: they ask a ``TableStore``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from ragprep.errors import RagprepError
from ragprep.storage import Layout, atomic_write_parquet, atomic_write_parquet_set, disk_full_names
from schemas import read_rows, rows_to_table
from schemas.chunks import CHUNKS_SCHEMA, ChunkRow
from schemas.documents import DOCUMENTS_SCHEMA, DocumentRow
from schemas.elements import ELEMENTS_SCHEMA, ElementRow
from schemas.evaluations import EVALUATION_QUESTIONS_SCHEMA, EVALUATIONS_SCHEMA, EvaluationQuestionRow, EvaluationRow
from schemas.headers import HEADERS_SCHEMA, HeaderRow
from schemas.index_entries import INDEX_ENTRIES_SCHEMA, IndexEntryRow
from schemas.mm_items import MM_ITEMS_SCHEMA, MmItemRow
from schemas.qa_pairs import (
    QA_FAILURES_SCHEMA,
    QA_PAIRS_SCHEMA,
    QaFailureRow,
    QaPairRow,
)
from schemas.quotes import QUOTES_SCHEMA, QuoteRow
from schemas.refmatch import SEGMENTS_SCHEMA, SegmentRow
from schemas.review import HEADER_REVIEW_SCHEMA, REVIEW_SCHEMA, HeaderReviewRow, ReviewRow
from schemas.runs import RUNS_SCHEMA, RunRow

_cache_log = logging.getLogger("ragprep.cache")


def _short(exc: BaseException) -> str:
    """An exception as ``Type: first line``, for a one-line warning."""
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"


class MissingTablesError(RagprepError, FileNotFoundError):
    """A stage needs a table that no earlier stage has written; the message names the fix."""


@dataclass(frozen=True)
class TableSpec:
    """One table: its row model, Arrow schema, id column and where it is used."""

    name: str
    model: type[BaseModel]
    schema: pa.Schema
    id_column: str
    versioned: bool = True
    queryable: bool = True
    has_suite: bool = False
    downstream: bool = False
    """Written by a stage after the dataset (evaluate, refmatch, index) under that stage's own folder, at a path
    the stage names (:meth:`TableStore.write_at`); never versioned or queried as a working table."""


_DOWNSTREAM = {"versioned": False, "queryable": False, "downstream": True}

REGISTRY: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("documents", DocumentRow, DOCUMENTS_SCHEMA, "doc_id", has_suite=True),
        TableSpec("chunks", ChunkRow, CHUNKS_SCHEMA, "chunk_id", has_suite=True),
        TableSpec("elements", ElementRow, ELEMENTS_SCHEMA, "element_id"),
        TableSpec("headers", HeaderRow, HEADERS_SCHEMA, "doc_id"),
        TableSpec("qa_pairs", QaPairRow, QA_PAIRS_SCHEMA, "qa_id", has_suite=True),
        TableSpec("qa_failures", QaFailureRow, QA_FAILURES_SCHEMA, "chunk_id", versioned=False),
        TableSpec("quotes", QuoteRow, QUOTES_SCHEMA, "quote_id", has_suite=True),
        TableSpec("mm_items", MmItemRow, MM_ITEMS_SCHEMA, "item_id", has_suite=True),
        TableSpec("review", ReviewRow, REVIEW_SCHEMA, "qa_id", queryable=False),
        TableSpec("header_review", HeaderReviewRow, HEADER_REVIEW_SCHEMA, "doc_id", versioned=False, queryable=False),
        TableSpec("runs", RunRow, RUNS_SCHEMA, "run_id", versioned=False),
        # downstream tables: written under their stage's folder (index/, evaluations/, refmatch/), not versioned
        TableSpec("index_entries", IndexEntryRow, INDEX_ENTRIES_SCHEMA, "chunk_id", **_DOWNSTREAM),
        TableSpec("evaluations", EvaluationRow, EVALUATIONS_SCHEMA, "eval_id", **_DOWNSTREAM),
        TableSpec("evaluation_questions", EvaluationQuestionRow, EVALUATION_QUESTIONS_SCHEMA, "qa_id", **_DOWNSTREAM),
        TableSpec("refmatch_segments", SegmentRow, SEGMENTS_SCHEMA, "item_id", **_DOWNSTREAM),
    )
}
"""Every table, in the order versions and reports list them."""

VERSIONED_TABLES: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.versioned)
QUERYABLE_TABLES: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.queryable)
SUITE_TABLES: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.has_suite)
ID_COLUMNS: dict[str, str] = {n: s.id_column for n, s in REGISTRY.items()}


def spec(name: str) -> TableSpec:
    """The registry entry of a table; an unknown name is a programming error."""
    return REGISTRY[name]


class TableStore:
    """Reads and writes the working tables under one root; every write is atomic, and a stage that
    writes several tables writes them as a set (:meth:`write_set`)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def path(self, name: str) -> Path:
        """Where a working table lives (the review decisions under ``review/``, the rest under ``tables/``)."""
        spec(name)
        durable = {"review": self.layout.review_table, "header_review": self.layout.header_review_table}
        return durable.get(name) or self.layout.table_path(name)

    def exists(self, name: str) -> bool:
        """Whether the table has been written."""
        return self.path(name).exists()

    def read(self, name: str, *, optional: bool = False) -> list:
        """A table's rows; a missing table raises with the fix, or is empty when ``optional``."""
        table = spec(name)
        path = self.path(name)
        if not path.exists():
            if optional:
                return []
            raise MissingTablesError(f"{path} does not exist; run `ragprep ingest PATHS --root {self.layout.root}` first")
        return read_rows(path, table.model, table.schema)

    def read_arrow(self, name: str) -> pa.Table | None:
        """A table as Arrow (as written), or None when it does not exist."""
        path = self.path(name)
        return pq.read_table(path) if path.exists() else None

    def write(self, name: str, rows: Iterable[BaseModel]) -> None:
        """Replace a table with these rows, in its declared schema."""
        self.write_arrow(name, rows_to_table(rows, spec(name).schema))

    def write_arrow(self, name: str, table: pa.Table) -> None:
        """Replace a table with an Arrow table (already in its schema)."""
        atomic_write_parquet(table, self.path(name))

    @staticmethod
    def write_at(name: str, rows: pa.Table | Iterable[BaseModel], path: Path) -> None:
        """Write a downstream table (evaluations, refmatch segments) at ``path``, atomically, in its declared schema."""
        table = spec(name)
        if not table.downstream:
            raise ValueError(f"{name} is a working table: write it with write()")
        atomic_write_parquet(rows if isinstance(rows, pa.Table) else rows_to_table(rows, table.schema), path)

    def write_set(self, tables: Mapping[str, pa.Table | Iterable[BaseModel]]) -> None:
        """Replace several tables as a set (``{name: rows or Arrow table}``): every table is written to a
        temporary file first and all are renamed into place only when every write succeeded, so a failed
        write (a full disk: :class:`ragprep.storage.DiskFullError`) leaves the previous set intact."""
        arrow = {
            self.path(name): value if isinstance(value, pa.Table) else rows_to_table(value, spec(name).schema)
            for name, value in tables.items()
        }
        atomic_write_parquet_set(arrow)

    @staticmethod
    def write_part(path: Path, name: str, rows: Iterable[BaseModel]) -> None:
        """Write a table's rows (in its schema) into a per-document part file; the caller stages the folder."""
        with disk_full_names(path):
            pq.write_table(rows_to_table(rows, spec(name).schema), path)

    @staticmethod
    def read_parts(paths: Iterable[Path], name: str) -> pa.Table:
        """Per-document part files of one table, concatenated in order (missing files skipped)."""
        schema = spec(name).schema
        tables = [pq.read_table(p, schema=schema) for p in paths if p.exists()]
        return pa.concat_tables(tables) if tables else schema.empty_table()

    @staticmethod
    def read_cached_part(path: Path, name: str) -> list | None:
        """The rows of one cached part file; None when it is missing, or unreadable (truncated, garbage, another
        schema: warned once, naming the file), so the caller treats it as a cache miss, recomputes and replaces it."""
        table = spec(name)
        try:
            return read_rows(path, table.model, table.schema) if path.exists() else None
        except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
            _cache_log.warning("unreadable cached part %s (%s): treated as a miss, recomputed and replaced", path, _short(exc))
            return None

    @staticmethod
    def cached_part_num_rows(path: Path) -> int | None:
        """The row count of a cached part file from its Parquet footer alone (cheap); None when it is missing, or
        unreadable (warned, naming the file: a cache miss)."""
        try:
            return pq.read_metadata(path).num_rows if path.exists() else None
        except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
            _cache_log.warning("unreadable cached part %s (%s): treated as a miss, recomputed and replaced", path, _short(exc))
            return None

    @staticmethod
    def read_cached_part_arrow(path: Path, name: str) -> pa.Table | None:
        """:meth:`read_cached_part` as an Arrow table in the table's schema (for assembling many parts)."""
        try:
            return pq.read_table(path, schema=spec(name).schema) if path.exists() else None
        except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
            _cache_log.warning("unreadable cached part %s (%s): treated as a miss, recomputed and replaced", path, _short(exc))
            return None

    def append(self, name: str, rows: Sequence[BaseModel]) -> None:
        """Add rows after the existing ones (run log, review decisions)."""
        previous = self.read(name, optional=True)
        self.write(name, [*previous, *rows])

