"""One module per artifact: a pydantic row model and the pyarrow schema of its table.

The schema is derived from the model (``arrow_schema``), so the two cannot drift apart.
``rows_to_table`` turns validated rows into an Arrow table with that schema, so Parquet files
always carry the same column types whatever the rows contain.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel


@dataclass(frozen=True)
class ArrowType:
    """``Annotated`` marker overriding how ``arrow_schema`` stores a field.

    ``type`` replaces the default Arrow type (e.g. ``Annotated[int, ArrowType(pa.int64())]``);
    ``nullable`` replaces the nullability read from the annotation. Pydantic ignores the
    marker, so validation is unchanged.
    """

    type: pa.DataType | None = None
    nullable: bool | None = None


_DEFAULT_TYPES: dict[Any, pa.DataType] = {
    str: pa.string(),
    bool: pa.bool_(),
    int: pa.int32(),
    float: pa.float64(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a row model: its fields in declaration order.

    ``str``/``Literal[str, ...]`` -> string, ``bool`` -> bool_, ``int`` -> int32,
    ``float`` -> float64, ``datetime`` -> timestamp("us", UTC), ``list[X]`` -> list_(X), a
    nested model -> struct of its fields; a field is nullable iff its annotation admits
    ``None``. An ``ArrowType`` marker in ``Annotated[...]`` overrides type or nullability.
    """
    return pa.schema(_arrow_fields(model))


def _arrow_fields(model: type[BaseModel]) -> list[pa.Field]:
    fields = []
    for name, info in model.model_fields.items():
        where = f"{model.__name__}.{name}"
        annotation, nullable, marker = _unwrap(info.annotation, where)
        marker = _merge(_markers(info.metadata), marker)
        arrow_type = marker.type if marker.type is not None else _arrow_type(annotation, where)
        if marker.nullable is not None:
            nullable = marker.nullable
        fields.append(pa.field(name, arrow_type, nullable=nullable))
    return fields


def _markers(metadata: Iterable[Any]) -> ArrowType:
    found = ArrowType()
    for item in metadata:
        if isinstance(item, ArrowType):
            found = _merge(found, item)
    return found


def _merge(first: ArrowType, then: ArrowType) -> ArrowType:
    return ArrowType(
        type=then.type if then.type is not None else first.type,
        nullable=then.nullable if then.nullable is not None else first.nullable,
    )


def _unwrap(annotation: Any, where: str) -> tuple[Any, bool, ArrowType]:
    """Strip ``Annotated`` and ``| None``: (bare type, admits None, ArrowType markers found)."""
    nullable = False
    marker = ArrowType()
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            marker = _merge(_markers(annotation.__metadata__), marker)
            annotation = annotation.__origin__
        elif origin is Union or origin is types.UnionType:
            args = get_args(annotation)
            rest = [a for a in args if a is not type(None)]
            nullable = nullable or len(rest) < len(args)
            if len(rest) != 1:
                raise TypeError(f"{where}: no Arrow type for the union {annotation!r}")
            annotation = rest[0]
        else:
            return annotation, nullable, marker


def _arrow_type(annotation: Any, where: str) -> pa.DataType:
    if annotation in _DEFAULT_TYPES:
        return _DEFAULT_TYPES[annotation]
    origin = get_origin(annotation)
    if origin is Literal:
        if all(isinstance(v, str) for v in get_args(annotation)):
            return pa.string()
    elif origin is list:
        (item,) = get_args(annotation)
        item, _, marker = _unwrap(item, f"{where}[]")
        return pa.list_(marker.type if marker.type is not None else _arrow_type(item, f"{where}[]"))
    elif inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return pa.struct(_arrow_fields(annotation))
    raise TypeError(f"{where}: no Arrow type for {annotation!r}; mark it with Annotated[..., ArrowType(...)]")


def rows_to_table(rows: Iterable[BaseModel], schema: pa.Schema) -> pa.Table:
    """Validated rows as an Arrow table of exactly ``schema`` (an empty table when there are none)."""
    records = [row.model_dump(mode="python") for row in rows]
    if not records:
        return schema.empty_table()
    return pa.Table.from_pylist(records, schema=schema)


def table_to_rows(table: pa.Table, model: type[BaseModel]) -> list[BaseModel]:
    """An Arrow table's records as validated rows of ``model``."""
    return [model.model_validate(record) for record in table.to_pylist()]


def read_rows(path, model: type[BaseModel], schema: pa.Schema) -> list:
    """Rows of a Parquet table as models; columns added to the schema since it was written read as null."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for field in schema:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return [model.model_validate({k: v for k, v in r.items() if v is not None}) for r in table.to_pylist()]

