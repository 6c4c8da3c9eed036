"""DuckDB over the Parquet tables: one view per table, queried by name.

A version in a local store is read in place (``read_parquet`` views). A version in an S3 store is
read with pyarrow from the store and registered as Arrow tables: DuckDB's httpfs extension cannot
be installed offline, so DuckDB never talks to S3 itself.
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
    DatasetStore,
    DatasetStoreError,
    LocalDatasetStore,
    open_store,
)
from ragprep.storage import Layout

QUERYABLE_TABLES = ("documents", "elements", "chunks", "headers", "qa_pairs", "qa_failures", "quotes", "mm_items", "runs")


class CatalogError(Exception):
    """A query that cannot run; the message says why and what to do."""


def _quote(path: Path | str) -> str:
    return str(path).replace("'", "''")


def connect(layout: Layout, version: str | None = None, uri: str | None = None) -> duckdb.DuckDBPyConnection:
    """One view per table: over a dataset version (the latest published one unless
    ``version`` names another; tables carry a ``split`` column there) in the dataset store
    (``uri``: a local path or ``s3://bucket/prefix``; default ``<root>/datasets``), or over the
    working tables of the last run when no version has been published yet."""
    try:
        store = open_store(layout.root, uri)
        chosen = version or store.latest()
    except (DatasetStoreError, OSError) as exc:
        raise CatalogError(f"cannot read the dataset store {uri or layout.root / 'datasets'}: {exc}") from exc
    con = duckdb.connect(":memory:")
    if chosen is not None:
        _version_views(con, store, chosen)
        for name in ("runs", "qa_failures"):
            if layout.table_path(name).exists():
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quote(layout.table_path(name))}')")
        return con
    present = [name for name in QUERYABLE_TABLES if layout.table_path(name).exists()]
    if not present:
        raise CatalogError(
            f"no tables under {layout.tables_dir}; run `ragprep run PATHS --root {layout.root}` first"
        )
    for name in present:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quote(layout.table_path(name))}')")
    return con


def _version_views(con: duckdb.DuckDBPyConnection, store: DatasetStore, version_id: str) -> None:
    found = store.find(version_id)
    if found is None:
        raise CatalogError(f"dataset version {version_id} not found in {store.uri}; `ragprep versions` lists them")
    for name in store.table_names(found):
        if isinstance(store, LocalDatasetStore):
            table_dir = store.local_dir(found, name)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quote(table_dir)}/*.parquet', union_by_name=true)")
        else:
            con.register(name, store.read_table(found, name))


def run_query(layout: Layout, query: str, version: str | None = None, uri: str | None = None) -> tuple[list[str], list[tuple]]:
    con = connect(layout, version, uri)
    try:
        result = con.execute(query)
    except duckdb.Error as exc:
        raise CatalogError(f"query failed: {exc}") from exc
    columns = [d[0] for d in result.description] if result.description else []
    return columns, result.fetchall()


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
    return json.dumps([{c: _plain(v) for c, v in zip(columns, row)} for row in rows], ensure_ascii=False, indent=2)


def to_csv(columns: list[str], rows: list[tuple]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, (list, dict)) else v for v in row])
    return buffer.getvalue()
