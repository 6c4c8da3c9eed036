"""Each table's Arrow schema is derived from its row model, and rows survive the trip to Parquet.

Every ``*_SCHEMA`` constant in the ``schemas`` package must equal ``arrow_schema(model)`` for
its row model, and one row per model (fully populated, and with only its required fields)
must come back equal from ``rows_to_table`` -> ``table_to_rows`` and from a Parquet file.
A few columns are pinned by hand so that a wrong derivation rule cannot go unnoticed.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel

import schemas
from schemas import ArrowType, arrow_schema, read_rows, rows_to_table, table_to_rows
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.elements import ElementRow
from schemas.evaluations import EVALUATIONS_SCHEMA, METRIC_COLUMNS, EvaluationQuestionRow, EvaluationRow
from schemas.headers import HeaderRow
from schemas.index_entries import IndexEntryRow
from schemas.mm_items import MmItemRow
from schemas.qa_pairs import QaFailureRow, QaPairRow
from schemas.quotes import QuoteRow
from schemas.refmatch import SegmentRow
from schemas.review import HeaderReviewRow, ReviewRow
from schemas.runs import RunRow

T0 = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=UTC)

# The row model of each table, keyed by the name of its schema constant.
ROW_MODELS: dict[str, type[BaseModel]] = {
    "DOCUMENTS_SCHEMA": DocumentRow,
    "ELEMENTS_SCHEMA": ElementRow,
    "CHUNKS_SCHEMA": ChunkRow,
    "HEADERS_SCHEMA": HeaderRow,
    "QA_PAIRS_SCHEMA": QaPairRow,
    "QA_FAILURES_SCHEMA": QaFailureRow,
    "QUOTES_SCHEMA": QuoteRow,
    "MM_ITEMS_SCHEMA": MmItemRow,
    "REVIEW_SCHEMA": ReviewRow,
    "HEADER_REVIEW_SCHEMA": HeaderReviewRow,
    "RUNS_SCHEMA": RunRow,
    "SEGMENTS_SCHEMA": SegmentRow,
    "EVALUATIONS_SCHEMA": EvaluationRow,
    "EVALUATION_QUESTIONS_SCHEMA": EvaluationQuestionRow,
    "INDEX_ENTRIES_SCHEMA": IndexEntryRow,
}

# One fully populated row per table (tests/schema_rows.json), keyed the same way. Some values are
# chosen to catch a narrow column: DocumentRow.size_bytes, RunRow.n_elements / n_chunks and
# MmItemRow.seed lie beyond int32, and the timestamps carry microseconds.
FULL_ROWS: dict[str, BaseModel] = {
    name: ROW_MODELS[name].model_validate(data)
    for name, data in json.loads((Path(__file__).parent / "schema_rows.json").read_text(encoding="utf-8")).items()
}


def _schema_modules():
    for info in pkgutil.iter_modules(schemas.__path__):
        yield importlib.import_module(f"schemas.{info.name}")


def _found_schemas() -> dict[str, pa.Schema]:
    found = {}
    for module in _schema_modules():
        for name, value in vars(module).items():
            if name.endswith("_SCHEMA") and isinstance(value, pa.Schema):
                found[name] = value
    return found


def _found_row_models() -> set[type[BaseModel]]:
    return {
        value
        for module in _schema_modules()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
        and name.endswith("Row")
    }


SCHEMAS = _found_schemas()


def _minimal(row: BaseModel) -> BaseModel:
    """The same row with only its required fields given (defaults for the rest)."""
    model = type(row)
    data = row.model_dump()
    return model.model_validate({k: v for k, v in data.items() if model.model_fields[k].is_required()})


def test_every_table_is_covered():
    assert set(SCHEMAS) == set(FULL_ROWS), "add a sample row for each new *_SCHEMA (and drop removed ones)"
    assert _found_row_models() == {type(row) for row in FULL_ROWS.values()}


@pytest.mark.parametrize("name", sorted(FULL_ROWS))
def test_schema_constant_is_derived_from_its_model(name):
    model = type(FULL_ROWS[name])
    derived = arrow_schema(model)
    constant = SCHEMAS[name]
    assert derived.equals(constant, check_metadata=True)
    assert [(f.name, f.type, f.nullable) for f in constant] == [(f.name, f.type, f.nullable) for f in derived]
    assert constant.names == list(model.model_fields)


@pytest.mark.parametrize("name", sorted(FULL_ROWS))
@pytest.mark.parametrize("variant", ["full", "minimal"])
def test_rows_round_trip(name, variant, tmp_path):
    row = FULL_ROWS[name] if variant == "full" else _minimal(FULL_ROWS[name])
    model, schema = type(row), SCHEMAS[name]

    table = rows_to_table([row], schema)
    assert table.schema.equals(schema)
    assert table_to_rows(table, model) == [row]

    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    assert pq.read_schema(path).equals(schema, check_metadata=False)
    assert read_rows(path, model, schema) == [row]


@pytest.mark.parametrize("name", sorted(FULL_ROWS))
def test_no_rows_give_an_empty_table_of_the_schema(name):
    table = rows_to_table([], SCHEMAS[name])
    assert table.num_rows == 0
    assert table.schema.equals(SCHEMAS[name])


# Columns whose Parquet type must not drift, written out by hand.
PINNED = [
    ("CHUNKS_SCHEMA", "token_count", pa.int32(), False),
    ("CHUNKS_SCHEMA", "slide", pa.int32(), True),
    ("CHUNKS_SCHEMA", "unit", pa.string(), False),
    ("CHUNKS_SCHEMA", "has_table", pa.bool_(), False),
    ("CHUNKS_SCHEMA", "heading_path", pa.list_(pa.string()), False),
    ("DOCUMENTS_SCHEMA", "size_bytes", pa.int64(), False),
    ("DOCUMENTS_SCHEMA", "n_elements", pa.int32(), False),
    ("DOCUMENTS_SCHEMA", "n_chunks", pa.int32(), False),
    ("DOCUMENTS_SCHEMA", "title", pa.string(), True),
    ("DOCUMENTS_SCHEMA", "change", pa.string(), False),
    ("DOCUMENTS_SCHEMA", "duplicate_of", pa.string(), True),
    ("ELEMENTS_SCHEMA", "bbox", pa.list_(pa.float64()), True),
    ("QUOTES_SCHEMA", "bbox", pa.list_(pa.float64()), False),
    ("MM_ITEMS_SCHEMA", "seed", pa.int64(), False),
    ("MM_ITEMS_SCHEMA", "gold_support", pa.list_(pa.float64()), False),
    ("RUNS_SCHEMA", "started_at", pa.timestamp("us", tz="UTC"), False),
    ("RUNS_SCHEMA", "n_elements", pa.int64(), False),
    ("RUNS_SCHEMA", "n_chunks", pa.int64(), False),
    ("RUNS_SCHEMA", "n_documents", pa.int32(), False),
    ("RUNS_SCHEMA", "n_duplicate", pa.int32(), False),
    ("RUNS_SCHEMA", "n_removed", pa.int32(), False),
    ("REVIEW_SCHEMA", "decided_at", pa.timestamp("us", tz="UTC"), True),
    ("QA_PAIRS_SCHEMA", "critic_grounded", pa.int32(), True),
    ("QA_PAIRS_SCHEMA", "critic_usable", pa.bool_(), True),
    ("QA_PAIRS_SCHEMA", "critic_reasons", pa.list_(pa.string()), False),
    ("REVIEW_SCHEMA", "applied_at", pa.timestamp("us", tz="UTC"), False),
    (
        "HEADERS_SCHEMA",
        "fields",
        pa.list_(pa.struct([pa.field("name", pa.string()), pa.field("value", pa.string()), pa.field("source", pa.string()),
                            pa.field("confidence", pa.float64())])),
        False,
    ),
]


@pytest.mark.parametrize(("table", "column", "arrow_type", "nullable"), PINNED, ids=[f"{t}.{c}" for t, c, _, _ in PINNED])
def test_pinned_columns(table, column, arrow_type, nullable):
    field = SCHEMAS[table].field(column)
    assert field.type == arrow_type
    assert field.nullable is nullable


class _Inner(BaseModel):
    a: int
    b: str | None = None


class _Sample(BaseModel):
    s: str
    lit: Literal["x", "y"] = "x"
    flag: bool
    i: int
    f: float | None = None
    when: datetime
    tags: list[str] = []
    nums: list[float] | None = None
    big: Annotated[int, ArrowType(pa.int64())]
    big_opt: Annotated[int, ArrowType(pa.int64())] | None = None
    loose: Annotated[str, ArrowType(nullable=True)]
    inner: _Inner
    inners: list[_Inner] = []


def test_derivation_rules():
    assert arrow_schema(_Sample).equals(
        pa.schema(
            [
                pa.field("s", pa.string(), nullable=False),
                pa.field("lit", pa.string(), nullable=False),
                pa.field("flag", pa.bool_(), nullable=False),
                pa.field("i", pa.int32(), nullable=False),
                pa.field("f", pa.float64()),
                pa.field("when", pa.timestamp("us", tz="UTC"), nullable=False),
                pa.field("tags", pa.list_(pa.string()), nullable=False),
                pa.field("nums", pa.list_(pa.float64())),
                pa.field("big", pa.int64(), nullable=False),
                pa.field("big_opt", pa.int64()),
                pa.field("loose", pa.string()),
                pa.field(
                    "inner",
                    pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())]),
                    nullable=False,
                ),
                pa.field(
                    "inners",
                    pa.list_(pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())])),
                    nullable=False,
                ),
            ]
        )
    )


def test_the_marker_leaves_validation_alone():
    assert DocumentRow.model_fields["size_bytes"].annotation is int
    with pytest.raises(ValueError):
        _Sample.model_validate(
            {"s": "", "flag": True, "i": 1, "when": T0, "big": "not a number", "loose": "", "inner": {"a": 1}}
        )


def test_unsupported_types_are_refused():
    class Bad(BaseModel):
        blob: bytes

    class Mixed(BaseModel):
        either: int | str

    with pytest.raises(TypeError, match="Bad.blob"):
        arrow_schema(Bad)
    with pytest.raises(TypeError, match="Mixed.either"):
        arrow_schema(Mixed)


def test_the_evaluation_table_has_a_column_per_metric():
    from tasks.evaluate.ranking import METRICS

    assert tuple(METRIC_COLUMNS) == tuple(METRICS)
    assert [f for f in EvaluationRow.model_fields if f in METRICS] == list(METRICS)


def test_downstream_tables_are_in_the_registry_and_never_versioned_or_queried():
    from ragprep.tables import QUERYABLE_TABLES, REGISTRY, VERSIONED_TABLES

    downstream = {name for name, table in REGISTRY.items() if table.downstream}
    assert downstream == {"index_entries", "evaluations", "evaluation_questions", "refmatch_segments"}
    assert not downstream & (set(VERSIONED_TABLES) | set(QUERYABLE_TABLES))


def test_a_downstream_table_is_written_at_its_path_in_its_schema(tmp_path):
    from ragprep.tables import TableStore

    row = FULL_ROWS["EVALUATIONS_SCHEMA"]
    TableStore.write_at("evaluations", [row], tmp_path / "e1.parquet")
    table = pq.read_table(tmp_path / "e1.parquet")
    assert table.schema.equals(EVALUATIONS_SCHEMA) and table.to_pylist() == [row.model_dump()]
    with pytest.raises(ValueError, match="working table"):
        TableStore.write_at("chunks", [], tmp_path / "chunks.parquet")
