"""One module per artifact: a pydantic row model and the pyarrow schema of its table.

``rows_to_table`` turns validated rows into an Arrow table with the declared schema, so
Parquet files always carry the same column types whatever the rows contain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
from pydantic import BaseModel


def rows_to_table(rows: Iterable[BaseModel], schema: pa.Schema) -> pa.Table:
    records = [row.model_dump(mode="python") for row in rows]
    if not records:
        return schema.empty_table()
    return pa.Table.from_pylist(records, schema=schema)


def table_to_rows(table: pa.Table, model: type[BaseModel]) -> list[BaseModel]:
    return [model.model_validate(record) for record in table.to_pylist()]


def read_rows(path, model: type[BaseModel], schema: pa.Schema) -> list:
    """Rows of a Parquet table as models; columns added to the schema since it was written read as null."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for field in schema:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return [model.model_validate({k: v for k, v in r.items() if v is not None}) for r in table.to_pylist()]


def check_schema_matches(model: type[BaseModel], schema: pa.Schema) -> Sequence[str]:
    """Names that differ between a row model and its Arrow schema (empty when aligned)."""
    model_fields = set(model.model_fields)
    schema_fields = set(schema.names)
    return sorted(model_fields ^ schema_fields)
