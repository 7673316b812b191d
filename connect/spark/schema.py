"""Records -> a Spark table schema and column-wise ``pyarrow`` batches.

The table schema is a Spark ``StructType``: the record value's fields, then ``_key`` (if asked),
the Kafka metadata ``_topic``, ``_partition``, ``_offset``, ``_timestamp`` and, when partitioning
by it, ``_date`` (the UTC date of the record timestamp). It comes from a Connect schema, a pydantic
model, or is inferred from schemaless values (dicts) and merged across records like Spark's JSON
inference: int+float -> double, a field missing in some records is nullable, incompatible types
-> string. Connect ``Time`` values (Spark has no usable TIME type) become ``HH:MM:SS.ffffff``
strings. Every column is nullable.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from connect.data import Date, Decimal, Schema, SchemaType, Struct, Time, Timestamp

TOPIC, PARTITION, OFFSET, TIMESTAMP = "_topic", "_partition", "_offset", "_timestamp"
KEY, DATE, VALUE = "_key", "_date", "value"
META_TYPES: dict[str, DataType] = {
    TOPIC: StringType(), PARTITION: IntegerType(), OFFSET: LongType(), TIMESTAMP: TimestampType(),
}
RESERVED = {TOPIC, PARTITION, OFFSET, TIMESTAMP, KEY, DATE}
_MS_PER_DAY = 86_400_000

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_INT_RANK = {ByteType: 0, ShortType: 1, IntegerType: 2, LongType: 3}


# -- Connect schemas -------------------------------------------------------------------------
def from_connect(schema: Schema) -> DataType:
    """The Spark type for a Connect schema (logical Decimal/Date/Time/Timestamp included)."""
    name, t = schema.name, schema.type
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale_of(schema)
        precision = int((schema.parameters or {}).get("connect.decimal.precision", 38))
        if scale > 38 or precision > 38:
            raise ValueError(f"decimal precision {precision} / scale {scale} exceeds Spark's 38")
        return DecimalType(max(precision, scale, 1), scale)
    if name == Date.LOGICAL_NAME:
        return DateType()
    if name == Time.LOGICAL_NAME:
        return StringType()
    if name == Timestamp.LOGICAL_NAME:
        return TimestampType()
    simple: dict[SchemaType, DataType] = {
        SchemaType.INT8: ByteType(), SchemaType.INT16: ShortType(), SchemaType.INT32: IntegerType(),
        SchemaType.INT64: LongType(), SchemaType.FLOAT32: FloatType(),
        SchemaType.FLOAT64: DoubleType(), SchemaType.BOOLEAN: BooleanType(),
        SchemaType.STRING: StringType(), SchemaType.BYTES: BinaryType(),
    }
    if t in simple:
        return simple[t]
    if t is SchemaType.ARRAY:
        assert schema.value_schema is not None
        return ArrayType(from_connect(schema.value_schema), True)
    if t is SchemaType.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return MapType(from_connect(schema.key_schema), from_connect(schema.value_schema), True)
    return StructType([StructField(f.name, from_connect(f.schema), True) for f in schema.fields])


def _needs_plain(schema: Schema) -> bool:
    if schema.name == Time.LOGICAL_NAME or schema.type is SchemaType.STRUCT:
        return True
    return any(_needs_plain(s) for s in (schema.key_schema, schema.value_schema) if s is not None)


def plain(value: Any, schema: Schema | None) -> Any:
    """A Connect value as plain Python for Arrow: Structs -> dicts, Time -> text."""
    if value is None:
        return None
    if isinstance(value, Struct):
        return {f.name: plain(value.get(f), f.schema) for f in value.schema.fields}
    if isinstance(value, dt.time):
        return value.isoformat()
    if schema is not None and not _needs_plain(schema):
        return value
    if isinstance(value, list | tuple):
        inner = schema.value_schema if schema is not None else None
        return [plain(v, inner) for v in value]
    if isinstance(value, Mapping):
        ks = schema.key_schema if schema is not None else None
        vs = schema.value_schema if schema is not None else None
        return {plain(k, ks): plain(v, vs) for k, v in value.items()}
    return value


def value_columns(value: Any) -> dict[str, Any]:
    """The column values a record value contributes: a dict's/Struct's fields, else ``value``."""
    if value is None:
        return {}
    if isinstance(value, Struct):
        return plain(value, value.schema)
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    return {VALUE: plain(value, None)}


# -- inference from values ---------------------------------------------------------------------
def infer(value: Any) -> DataType:
    """The Spark type of a schemaless Python value (NullType for None or an empty list)."""
    if value is None:
        return NullType()
    if isinstance(value, bool):
        return BooleanType()
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return LongType()
        return DecimalType(38, 0) if abs(value) < 10**38 else DoubleType()
    if isinstance(value, float):
        return DoubleType()
    if isinstance(value, str):
        return StringType()
    if isinstance(value, bytes | bytearray | memoryview):
        return BinaryType()
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        scale = min(38, max(0, -exponent)) if isinstance(exponent, int) else 18
        return DecimalType(38, scale)
    if isinstance(value, dt.datetime):
        return TimestampType()
    if isinstance(value, dt.date):
        return DateType()
    if isinstance(value, Struct):
        return from_connect(value.schema)
    if isinstance(value, list | tuple):
        element: DataType = NullType()
        for item in value:
            element = merge(element, infer(item))
        return ArrayType(element, True)
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return StructType([StructField(k, infer(v), True) for k, v in value.items()])
        key: DataType = NullType()
        val: DataType = NullType()
        for k, v in value.items():
            key, val = merge(key, infer(k)), merge(val, infer(v))
        return MapType(key, val, True)
    return StringType()  # time, UUID, enums, anything else: rendered as text


def merge(a: DataType, b: DataType) -> DataType:
    """The narrowest type that holds values of both (Spark JSON-inference rules)."""
    if a == b or isinstance(b, NullType):
        return a
    if isinstance(a, NullType):
        return b
    if isinstance(a, _INTEGRAL) and isinstance(b, _INTEGRAL):
        return a if _INT_RANK[type(a)] >= _INT_RANK[type(b)] else b
    numeric = (*_INTEGRAL, FloatType, DoubleType, DecimalType)
    if isinstance(a, numeric) and isinstance(b, numeric):
        if isinstance(a, DecimalType) and isinstance(b, DecimalType):
            return DecimalType(38, max(a.scale, b.scale))
        if isinstance(a, DecimalType | DoubleType | FloatType) or isinstance(
                b, DecimalType | DoubleType | FloatType):
            if isinstance(a, DecimalType) and isinstance(b, _INTEGRAL):
                return a
            if isinstance(b, DecimalType) and isinstance(a, _INTEGRAL):
                return b
            return DoubleType()
    if isinstance(a, DateType | TimestampType) and isinstance(b, DateType | TimestampType):
        return TimestampType()
    if isinstance(a, StructType) and isinstance(b, StructType):
        fields = {f.name: f.dataType for f in a.fields}
        for f in b.fields:
            fields[f.name] = merge(fields.get(f.name, NullType()), f.dataType)
        return StructType([StructField(n, t, True) for n, t in fields.items()])
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(merge(a.elementType, b.elementType), True)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return MapType(merge(a.keyType, b.keyType), merge(a.valueType, b.valueType), True)
    return StringType()


def finalize(t: DataType) -> DataType:
    """Replace types nothing was seen for (NullType) with string; make everything nullable."""
    if isinstance(t, NullType):
        return StringType()
    if isinstance(t, StructType):
        return StructType([StructField(f.name, finalize(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(finalize(t.elementType), True)
    if isinstance(t, MapType):
        key = finalize(t.keyType)
        return MapType(key, finalize(t.valueType), True)
    return t


_SIMPLE: dict[type, DataType] = {
    bool: BooleanType(), float: DoubleType(), str: StringType(), bytes: BinaryType(),
    type(None): NullType(),
}


def infer_column(values: list[Any]) -> DataType:
    """The merged type of many values, column-wise (C-speed type scans, recursion per level)."""
    kinds = set(map(type, values))
    found: DataType = NullType()
    dicts: list[Any] = []
    lists: list[Any] = []
    for kind in kinds:
        if kind in _SIMPLE:
            found = merge(found, _SIMPLE[kind])
        elif kind is int:
            ints = [v for v in values if type(v) is int]
            found = merge(found, merge(infer(min(ints)), infer(max(ints))))
        elif kind is dict:
            dicts += [v for v in values if type(v) is dict]
        elif kind is list:
            lists += [v for v in values if type(v) is list]
        else:
            for v in values:
                if type(v) is kind:
                    found = merge(found, infer(v))
    if lists:
        found = merge(found, ArrayType(infer_column([x for v in lists for x in v]), True))
    if dicts:
        names = dict.fromkeys(k for d in dicts for k in d)
        if all(type(k) is str for k in names):
            found = merge(found, StructType([
                StructField(k, infer_column([d.get(k) for d in dicts]), True) for k in names]))
        else:
            found = merge(found, MapType(infer_column(list(names)),
                                         infer_column([v for d in dicts for v in d.values()]),
                                         True))
    return found


class ValueTypeAccumulator:
    """Merges the value columns of many records (first-seen column order)."""

    def __init__(self) -> None:
        self.columns: dict[str, DataType] = {}
        self._schemas: dict[int, Schema] = {}
        self._values: list[dict[str, Any]] = []

    def add(self, value: Any, schema: Schema | None) -> None:
        if schema is not None and schema.type is SchemaType.STRUCT:
            self._schemas.setdefault(id(schema), schema)
        elif schema is not None and not isinstance(value, Mapping):
            self._merge({VALUE: from_connect(schema)})
        else:
            self._values.append(value_columns(value))

    def _merge(self, found: dict[str, DataType]) -> None:
        columns = self.columns
        for name, t in found.items():
            current = columns.get(name)
            columns[name] = t if current is None else merge(current, t)

    def struct(self) -> StructType:
        for schema in self._schemas.values():
            self._merge({f.name: from_connect(f.schema) for f in schema.fields})
        rows = self._values
        if rows:
            self._merge({k: infer_column([r.get(k) for r in rows])
                         for k in dict.fromkeys(k for r in rows for k in r)})
        self._schemas, self._values = {}, []
        return StructType([StructField(n, finalize(t), True) for n, t in self.columns.items()
                           if n not in RESERVED])


# -- pydantic models ---------------------------------------------------------------------------
def from_annotation(annotation: Any, metadata: list[Any] | None = None) -> DataType:
    """The Spark type for a Python type annotation (as pydantic models declare fields)."""
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return from_annotation(args[0], [*args[1:], *(metadata or [])])
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return from_annotation(inner[0], metadata) if len(inner) == 1 else StringType()
    if origin is typing.Literal:
        found: DataType = NullType()
        for literal in args:
            found = merge(found, infer(literal))
        return finalize(found)
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set):
        element = args[0] if args else Any
        return ArrayType(from_annotation(element), True)
    if origin in (dict, Mapping) or annotation is dict:
        key, val = args if len(args) == 2 else (str, Any)
        return MapType(from_annotation(key), from_annotation(val), True)
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return model_struct(annotation)
        if issubclass(annotation, bool):
            return BooleanType()
        if issubclass(annotation, enum.Enum):
            return finalize(infer(next(iter(annotation)).value))
        if issubclass(annotation, int):
            return LongType()
        if issubclass(annotation, float):
            return DoubleType()
        if issubclass(annotation, decimal.Decimal):
            digits = next((m.max_digits for m in metadata or [] if getattr(m, "max_digits", None)),
                          38)
            places = next((m.decimal_places for m in metadata or []
                           if getattr(m, "decimal_places", None) is not None), 18)
            return DecimalType(min(38, max(digits, places)), min(38, places))
        if issubclass(annotation, bytes):
            return BinaryType()
        if issubclass(annotation, dt.datetime):
            return TimestampType()
        if issubclass(annotation, dt.date):
            return DateType()
    return StringType()  # str, time, UUID, Any and everything else: text


def model_struct(model: type) -> StructType:
    """A pydantic model's fields as a Spark struct (every field nullable)."""
    fields = []
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        column = info.alias or name
        fields.append(StructField(column, from_annotation(info.annotation, list(info.metadata)),
                                  True))
    return StructType(fields)


# -- the table schema and Arrow batches ---------------------------------------------------------
def table_struct(values: StructType, key_type: DataType | None, with_date: bool) -> StructType:
    """Value columns (minus reserved names), then ``_key``, the Kafka metadata and ``_date``."""
    fields = [f for f in values.fields if f.name not in RESERVED]
    if key_type is not None:
        fields.append(StructField(KEY, key_type, True))
    fields += [StructField(n, t, True) for n, t in META_TYPES.items()]
    if with_date:
        fields.append(StructField(DATE, DateType(), True))
    return StructType(fields)


def render(value: Any) -> str:
    """Text for a value stored in a string column."""
    if isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return render(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dt.time | dt.date):
        return value.isoformat()
    if isinstance(value, Struct):
        value = plain(value, value.schema)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def coerce(value: Any, t: DataType) -> Any:
    """Best-effort conversion of one value to what Arrow accepts for ``t`` (slow path)."""
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(t, StringType):
        return render(value)
    if isinstance(t, BinaryType) and isinstance(value, str):
        return value.encode()
    if isinstance(t, _INTEGRAL):
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"{value!r} is not an integer")
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{value!r} is not an integer")
        return value
    if isinstance(t, DecimalType) and isinstance(value, int | float | str):
        return decimal.Decimal(str(value))
    if isinstance(t, StructType):
        if isinstance(value, Struct):
            value = plain(value, value.schema)
        if not isinstance(value, Mapping):
            raise ValueError(f"{type(value).__name__} is not a struct")
        return {f.name: coerce(value.get(f.name), f.dataType) for f in t.fields}
    if isinstance(t, ArrayType):
        if not isinstance(value, list | tuple):
            raise ValueError(f"{type(value).__name__} is not an array")
        return [coerce(v, t.elementType) for v in value]
    if isinstance(t, MapType):
        if not isinstance(value, Mapping):
            raise ValueError(f"{type(value).__name__} is not a map")
        return {coerce(k, t.keyType): coerce(v, t.valueType) for k, v in value.items()}
    return value


class BatchBuilder:
    """Builds ``pyarrow`` record batches in the table's layout, column by column.

    The fast path hands whole columns to Arrow; when Arrow refuses a column, its values are
    coerced one by one and the rows that still do not fit are reported as bad, not written.
    """

    def __init__(self, struct: StructType) -> None:
        self.struct = struct
        self.arrow_schema = to_arrow_schema(struct, timezone="UTC")
        names = set(struct.names)
        self.value_fields = [(f.name, f.dataType, self.arrow_schema.field(f.name).type)
                             for f in struct.fields if f.name not in RESERVED]
        self.value_names = frozenset(n for n, _, _ in self.value_fields)
        self.key_type = struct[KEY].dataType if KEY in names else None
        self.meta = [n for n in (TOPIC, PARTITION, OFFSET, TIMESTAMP, DATE) if n in names]
        # Value columns Arrow's JSON reader produces exactly as the per-record path would:
        # JSON-native types only (no map, decimal, binary, date/time, narrow numbers).
        self.json_schema = pa.schema([pa.field(n, a, True) for n, _, a in self.value_fields]) \
            if self.value_fields and all(_json_native(t) for _, t, _ in self.value_fields) \
            else None

    def build(self, values: list[dict[str, Any]], keys: list[Any], topic: str, partition: int,
              offsets: list[int], timestamps: list[int | None],
              value_columns: dict[str, pa.Array] | None = None
              ) -> tuple[pa.RecordBatch, dict[int, str]]:
        """One batch for rows of one topic-partition, and ``{row index: error}`` of bad rows.

        ``value_columns`` (already in the table's Arrow types, e.g. parsed by
        :func:`read_json_objects`) replaces ``values``."""
        bad: dict[int, str] = {}
        n = len(offsets)
        columns: dict[str, pa.Array] = {}
        if value_columns is not None:
            columns.update(value_columns)
        else:
            for name, t, arrow_type in self.value_fields:
                columns[name] = self._column([v.get(name) for v in values], t, arrow_type, name,
                                             bad)
        if self.key_type is not None:
            columns[KEY] = self._column(keys, self.key_type, self.arrow_schema.field(KEY).type,
                                        KEY, bad)
        ms = pa.array(timestamps, pa.int64())
        meta = {
            TOPIC: pa.array([topic] * n, pa.string()),
            PARTITION: pa.array([partition] * n, pa.int32()),
            OFFSET: pa.array(offsets, pa.int64()),
            TIMESTAMP: ms.cast(pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
            DATE: pc.divide(ms, _MS_PER_DAY).cast(pa.int32()).cast(pa.date32()),
        }
        columns.update({name: meta[name] for name in self.meta})
        batch = pa.RecordBatch.from_arrays([columns[f.name] for f in self.arrow_schema],
                                           schema=self.arrow_schema)
        if bad:
            batch = batch.filter(pa.array([i not in bad for i in range(n)]))
        return batch, bad

    def _column(self, column: list[Any], t: DataType, arrow_type: pa.DataType, name: str,
                bad: dict[int, str]) -> pa.Array:
        kinds = set(map(type, column))
        fast = not (isinstance(t, StringType) and kinds - {str, type(None)}
                    or isinstance(t, _INTEGRAL) and float in kinds)
        if fast:
            try:
                return pa.array(column, arrow_type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                pass
        fixed: list[Any] = []
        for i, value in enumerate(column):
            try:
                fixed.append(coerce(value, t))
            except Exception as exc:
                bad.setdefault(i, f"column {name!r}: cannot store {value!r} as "
                                  f"{t.simpleString()}: {exc}")
                fixed.append(None)
        try:
            return pa.array(fixed, arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        for i, item in enumerate(fixed):  # slowest path: find the values Arrow refuses
            try:
                pa.array([item], arrow_type)
            except Exception as exc:
                bad.setdefault(i, f"column {name!r}: cannot store {column[i]!r} as "
                                  f"{t.simpleString()}: {exc}")
                fixed[i] = None
        return pa.array(fixed, arrow_type)


def _json_native(t: DataType) -> bool:
    if isinstance(t, BooleanType | LongType | DoubleType | StringType):
        return True
    if isinstance(t, ArrayType):
        return _json_native(t.elementType)
    if isinstance(t, StructType):
        return all(_json_native(f.dataType) for f in t.fields)
    return False


def read_json_objects(values: list[bytes], schema: pa.Schema
                      ) -> tuple[dict[str, pa.Array], list[str]] | None:
    """Columns of ``schema`` parsed in bulk from JSON-object texts (one per row; missing fields
    null), and the names of top-level fields the schema lacks (dropped; the caller warns); or
    None when Arrow cannot take this batch exactly: a value that is not a single one-line JSON
    object, malformed or not UTF-8, or a value not of its column's type (the caller then decodes
    record by record, reporting the bad ones). Unknown fields inside a struct column are dropped
    without being named."""
    n = len(values)
    if not n:
        return None
    data = b"\n".join(values)
    # every value one line starting with '{' (so one object per line: checked by the row count)
    if data[:1] != b"{" or data.count(b"\n") != n - 1 or data.count(b"\n{") != n - 1 \
            or b"\r" in data:
        return None
    try:
        data.decode("utf-8")  # Arrow does not validate string bytes
    except ValueError:
        return None
    # First with unknown fields inferred, to name them; if they do not let themselves be inferred
    # (mixed types) or sit inside a struct column (whose type they change), without them.
    for unexpected in ("infer", "ignore"):
        try:
            table = pa_json.read_json(
                pa.BufferReader(data),
                read_options=pa_json.ReadOptions(
                    block_size=max(1 << 20, min(len(data) + 1, 1 << 26))),
                parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                                   unexpected_field_behavior=unexpected))
        except (pa.ArrowException, ValueError):
            continue
        known = table.select(list(range(len(schema)))) if table.num_columns > len(schema) \
            else table
        if table.num_rows != n or known.schema != schema:
            continue
        unknown = table.column_names[len(schema):]
        return ({name: pa.concat_arrays(column.chunks) if column.num_chunks != 1
                 else column.chunk(0)
                 for name, column in zip(known.column_names, known.columns, strict=True)},
                unknown)
    return None


def ddl_type(t: DataType) -> str:
    """SQL DDL for a Spark type, with nested field names quoted."""
    if isinstance(t, StructType):
        return "struct<" + ",".join(f"{quote(f.name)}:{ddl_type(f.dataType)}"
                                    for f in t.fields) + ">"
    if isinstance(t, ArrayType):
        return f"array<{ddl_type(t.elementType)}>"
    if isinstance(t, MapType):
        return f"map<{ddl_type(t.keyType)},{ddl_type(t.valueType)}>"
    return t.simpleString()


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
