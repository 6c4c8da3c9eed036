"""DuckDB over the Parquet tables: one view per table, queried by name.

A version in a local store is read in place (``read_parquet`` views). A version in an S3 store is
read with pyarrow from the store and registered as Arrow tables: DuckDB's httpfs extension cannot
be installed offline, so DuckDB never talks to S3 itself. ``version="working"`` (:data:`WORKING`)
queries the working tables of the last run (``tables/*.parquet``) even when versions exist.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from ragprep.dataset_store import (
    CorruptVersionError,
    DatasetStore,
    DatasetStoreError,
    LocalDatasetStore,
    open_store,
)
from ragprep.errors import RagprepError
from ragprep.storage import Layout
from ragprep.tables import QUERYABLE_TABLES, TableStore, spec

WORKING = "working"
"""The ``version`` that names the working tables of the last run instead of a dataset version."""


class CatalogError(RagprepError):
    """A query that cannot run; the message says why and what to do."""


def _quote(path: Path | str) -> str:
    return str(path).replace("'", "''")


def connect(layout: Layout, version: str | None = None, uri: str | None = None) -> duckdb.DuckDBPyConnection:
    """One view per table: over a dataset version (the latest published one unless
    ``version`` names another; tables carry a ``split`` column there) in the dataset store
    (``uri``: a local path or ``s3://bucket/prefix``; default ``<root>/datasets``), or over the
    working tables of the last run when ``version`` is ``"working"`` or no version is published
    (``LATEST`` absent or naming no committed version: ``DatasetStore.latest_problem`` says which)."""
    con = duckdb.connect(":memory:")
    tables = TableStore(layout)
    store, chosen = (None, None) if version == WORKING else _chosen_version(layout, version, uri)
    if store is not None and chosen is not None:
        _version_views(con, store, chosen)
        for name in QUERYABLE_TABLES:  # the working tables that versions do not carry (runs, qa_failures)
            if not spec(name).versioned and tables.exists(name):
                _working_view(con, tables, name)
        return con
    present = [name for name in QUERYABLE_TABLES if tables.exists(name)]
    if not present:
        raise CatalogError(
            f"no tables under {layout.tables_dir}; run `ragprep run PATHS --root {layout.root}` first"
        )
    for name in present:
        _working_view(con, tables, name)
    return con


def _chosen_version(layout: Layout, version: str | None, uri: str | None) -> tuple[DatasetStore, str | None]:
    try:
        store = open_store(layout.root, uri)
        if version is not None:
            return store, version
        latest = store.latest()
        return store, (latest if latest is not None and store.find(latest) is not None else None)
    except (DatasetStoreError, OSError) as exc:
        raise CatalogError(f"cannot read the dataset store {uri or layout.datasets_dir}: {exc}") from exc


def _working_view(con: duckdb.DuckDBPyConnection, tables: TableStore, name: str) -> None:
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quote(tables.path(name))}')")


def _version_views(con: duckdb.DuckDBPyConnection, store: DatasetStore, version_id: str) -> None:
    found = store.find(version_id)
    if found is None:
        raise CatalogError(f"dataset version {version_id} not found in {store.uri}; `ragprep versions` lists them")
    try:
        if isinstance(store, LocalDatasetStore):
            store.check_footers(found)  # a truncated file: one line naming it, not DuckDB's error
        for name in store.table_names(found):
            if isinstance(store, LocalDatasetStore):
                table_dir = store.local_dir(found, name)
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quote(table_dir)}/*.parquet', union_by_name=true)")
            else:
                con.register(name, store.read_table(found, name))
    except CorruptVersionError as exc:
        raise CatalogError(str(exc)) from exc


def run_query(layout: Layout, query: str, version: str | None = None, uri: str | None = None) -> tuple[list[str], list[tuple]]:
    """Run ``query`` over the views of ``connect``: the column names and the result rows."""
    con = connect(layout, version, uri)
    try:
        result = con.execute(query)
    except duckdb.Error as exc:  # DuckDB's first line names the problem (and a file); the rest is a caret diagram
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CatalogError(f"query failed: {first} (tables: {', '.join(_table_names(con)) or 'none'})") from exc
    columns = [d[0] for d in result.description] if result.description else []
    return columns, result.fetchall()


def _table_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables and views a query can name (what a failed query's message lists)."""
    try:
        rows = con.execute("select table_name from information_schema.tables where table_schema = 'main' order by 1").fetchall()
    except duckdb.Error:
        return []
    return [r[0] for r in rows]


def _plain(value: object) -> object:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def to_json(columns: list[str], rows: list[tuple]) -> str:
    """The rows as an indented JSON array of objects keyed by column name."""
    return json.dumps([{c: _plain(v) for c, v in zip(columns, row)} for row in rows], ensure_ascii=False, indent=2)


def to_csv(columns: list[str], rows: list[tuple]) -> str:
    """The rows as CSV with a header line; list and dict values are written as JSON."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, (list, dict)) else v for v in row])
    return buffer.getvalue()
