"""DuckDB over the Parquet tables: one view per table, queried by name."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal

import duckdb

from ragprep.storage import Layout

QUERYABLE_TABLES = ("documents", "elements", "chunks", "headers", "qa_pairs", "qa_failures", "runs")


class CatalogError(Exception):
    """A query that cannot run; the message says why and what to do."""


def connect(layout: Layout) -> duckdb.DuckDBPyConnection:
    present = [name for name in QUERYABLE_TABLES if layout.table_path(name).exists()]
    if not present:
        raise CatalogError(
            f"no tables under {layout.tables_dir}; run `ragprep run PATHS --root {layout.root}` first"
        )
    con = duckdb.connect(":memory:")
    for name in present:
        path = str(layout.table_path(name)).replace("'", "''")
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def run_query(layout: Layout, query: str) -> tuple[list[str], list[tuple]]:
    con = connect(layout)
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
