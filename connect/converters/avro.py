"""Confluent's ``io.confluent.connect.avro.AvroConverter``: Avro with a schema registry.

Records are in Confluent's wire format (magic byte 0, 4-byte schema id, Avro binary), so
Confluent's converters and serializers read what this writes and the other way round.
Connect schemas map to Avro as Confluent's ``AvroData`` maps them: STRUCT <-> record (the
schema name, else ``io.confluent.connect.avro.ConnectDefault``), optional <-> a union with
``null`` first, INT8/INT16 <-> int with ``connect.type``, Decimal <-> bytes/decimal
(``connect.decimal.precision``, default 64), Date <-> int/date, Time <-> int/time-millis,
Timestamp <-> long/timestamp-millis; Avro enums become STRING (the enum name in the
``io.confluent.connect.avro.Enum`` parameter), fixed becomes BYTES, and ``timestamp-micros``
becomes a Timestamp that keeps its microseconds.

Settings (``value.converter.`` prefix stripped): ``schema.registry.url`` (required),
``auto.register.schemas`` (true), ``use.latest.version`` (false),
``key.subject.name.strategy``/``value.subject.name.strategy`` (TopicNameStrategy).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import json
import struct
import threading
from typing import Any

from connect.converters.base import config_bool
from connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SchemaType,
    Struct,
    Time,
    Timestamp,
)

MAGIC = 0
_ID = struct.Struct(">I")
DEFAULT_NAME = "io.confluent.connect.avro.ConnectDefault"
ENUM_PARAM = "io.confluent.connect.avro.Enum"
FIXED_PARAM = "connect.avro.fixed.size"
PRECISION_PARAM = "connect.decimal.precision"
MICROS_PARAM = "connect.avro.timestamp.micros"
UNION_NAME = "io.confluent.connect.avro.Union"
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")


class RegistryConverter:
    """What the three registry converters share: settings, subjects, ids, the header."""

    schema_type = "AVRO"

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        from streams.registry.client import SchemaRegistryClient

        url = configs.get("schema.registry.url")
        if not url:
            raise DataException(f"{type(self).__name__} needs schema.registry.url")
        self.is_key = is_key
        self.client = SchemaRegistryClient(str(url))
        self.auto_register = config_bool(configs, "auto.register.schemas", True)
        self.use_latest = config_bool(configs, "use.latest.version", False)
        strategy = str(configs.get("key.subject.name.strategy" if is_key else
                                   "value.subject.name.strategy", "TopicNameStrategy"))
        self.strategy = strategy.rsplit(".", 1)[-1]
        if self.strategy not in STRATEGIES:
            raise DataException(f"unknown subject name strategy {strategy!r}; use one of "
                                f"{STRATEGIES}")
        self._lock = threading.Lock()
        self._read_cache: dict[int, Any] = {}

    def subject(self, topic: str, record_name: str | None) -> str:
        if self.strategy == "TopicNameStrategy":
            return f"{topic}-{'key' if self.is_key else 'value'}"
        if not record_name:
            raise DataException(f"{self.strategy} needs a named schema")
        return record_name if self.strategy == "RecordNameStrategy" else f"{topic}-{record_name}"

    def schema_id(self, topic: str, text: str, record_name: str | None,
                  references: Any = ()) -> int:
        subject = self.subject(topic, record_name)
        if self.use_latest:
            return self.client.get_latest_version(subject).id
        if self.auto_register:
            return self.client.register(subject, text, self.schema_type, references)
        return self.client.lookup(subject, text, self.schema_type, references).id

    @staticmethod
    def header(schema_id: int) -> bytes:
        return bytes((MAGIC,)) + _ID.pack(schema_id)

    @staticmethod
    def split(topic: str, value: bytes) -> tuple[int, memoryview]:
        view = memoryview(value)
        if len(view) < 5 or view[0] != MAGIC:
            raise DataException(f"record from topic {topic!r} is not in the schema registry "
                                "wire format (magic byte 0 and a 4-byte schema id)")
        return _ID.unpack_from(view, 1)[0], view[5:]

    def cached(self, schema_id: int, build: Any) -> Any:
        with self._lock:
            hit = self._read_cache.get(schema_id)
        if hit is None:
            hit = build(self.client.get_schema(schema_id))
            with self._lock:
                self._read_cache[schema_id] = hit
        return hit


# -- Avro schema -> Connect schema ----------------------------------------------------------

def avro_to_connect(avro: Any, names: dict[str, Any] | None = None,
                    optional: bool = False, default: Any = None) -> Schema:
    """The Connect schema for a (parsed JSON) Avro schema."""
    names = {} if names is None else names
    builder = _avro_builder(avro, names)
    if optional:
        builder.optional()
    if default is not None:
        builder.default_value(default)
    return builder.build()


def _avro_builder(avro: Any, names: dict[str, Any], ns: str = "") -> SchemaBuilder:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null" and b != {"type": "null"}]
        if len(branches) == 1:
            return _avro_builder(branches[0], names, ns).optional()
        union = SchemaBuilder.struct().name(UNION_NAME)
        for i, b in enumerate(branches):
            union.field(_branch_name(b, i), _avro_builder(b, names, ns).optional().build())
        if len(branches) != len(avro):
            union.optional()
        return union
    if isinstance(avro, str):
        if avro in names:
            return _avro_builder(names[avro], names, ns)
        full = f"{ns}.{avro}" if ns and "." not in avro else avro
        if full in names:
            return _avro_builder(names[full], names, ns)
        avro = {"type": avro}
    kind = avro.get("type")
    if isinstance(kind, dict | list):
        return _avro_builder(kind, names, ns)
    logical = avro.get("logicalType")
    if logical == "decimal":
        return Decimal.builder(int(avro.get("scale", 0))).parameter(
            PRECISION_PARAM, str(avro.get("precision", 64)))
    if logical == "date" and kind == "int":
        return Date.builder()
    if logical == "time-millis" and kind == "int":
        return Time.builder()
    if logical == "timestamp-millis" and kind == "long":
        return Timestamp.builder()
    if logical == "timestamp-micros" and kind == "long":
        return Timestamp.builder().parameter(MICROS_PARAM, "true")
    simple = {"int": SchemaBuilder.int32, "long": SchemaBuilder.int64,
              "float": SchemaBuilder.float32, "double": SchemaBuilder.float64,
              "boolean": SchemaBuilder.bool, "string": SchemaBuilder.string,
              "bytes": SchemaBuilder.bytes}
    if kind in simple:
        connect_type = avro.get("connect.type")
        if kind == "int" and connect_type in ("int8", "int16"):
            return getattr(SchemaBuilder, connect_type)()
        return simple[kind]()
    if kind == "array":
        return SchemaBuilder.array(_avro_builder(avro["items"], names, ns).build())
    if kind == "map":
        return SchemaBuilder.map(Schema.STRING_SCHEMA,
                                 _avro_builder(avro["values"], names, ns).build())
    full = _full(avro, ns)
    names.setdefault(full, avro)
    if kind == "enum":
        builder = SchemaBuilder.string().parameter(ENUM_PARAM, full)
        for symbol in avro.get("symbols", []):
            builder.parameter(f"{ENUM_PARAM}.{symbol}", symbol)
        return builder
    if kind == "fixed":
        return SchemaBuilder.bytes().name(full).parameter(FIXED_PARAM, str(avro["size"]))
    if kind in ("record", "error"):
        inner_ns = full.rpartition(".")[0]
        builder = SchemaBuilder.struct().name(full)
        if avro.get("doc"):
            builder.doc(avro["doc"])
        for f in avro.get("fields", []):
            fb = _avro_builder(f["type"], names, inner_ns)
            if "default" in f and f["default"] is not None:
                # a default Connect cannot hold (e.g. a record): read without it
                with contextlib.suppress(DataException, ValueError, TypeError):
                    fb.default_value(_default(f["default"], fb.build()))
            builder.field(f["name"], fb.build())
        return builder
    raise DataException(f"unsupported Avro type {kind!r}")


def _full(avro: dict[str, Any], ns: str) -> str:
    name = avro["name"]
    namespace = avro.get("namespace", ns)
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _branch_name(avro: Any, index: int) -> str:
    if isinstance(avro, str):
        return avro.rpartition(".")[2]
    if isinstance(avro, dict):
        return str(avro.get("name") or avro.get("type"))
    return f"branch{index}"


def _default(value: Any, schema: Schema) -> Any:
    if schema.type is SchemaType.BYTES and isinstance(value, str):
        return value.encode("latin-1")
    if schema.type in (SchemaType.FLOAT32, SchemaType.FLOAT64):
        return float(value)
    return value


# -- Connect schema -> Avro schema ----------------------------------------------------------

def connect_to_avro(schema: Schema, defined: set[str] | None = None) -> Any:
    """The Avro schema (JSON) for a Connect schema; optional schemas become null unions."""
    defined = set() if defined is None else defined
    avro = _connect_avro(schema, defined)
    if schema.optional:
        return ["null", avro] if not isinstance(avro, list) else avro
    return avro


def _connect_avro(schema: Schema, defined: set[str]) -> Any:
    name, params = schema.name, schema.parameters or {}
    if name == Decimal.LOGICAL_NAME:
        return {"type": "bytes", "logicalType": "decimal",
                "precision": int(params.get(PRECISION_PARAM, 64)),
                "scale": Decimal.scale_of(schema)}
    if name == Date.LOGICAL_NAME:
        return {"type": "int", "logicalType": "date"}
    if name == Time.LOGICAL_NAME:
        return {"type": "int", "logicalType": "time-millis"}
    if name == Timestamp.LOGICAL_NAME:
        micros = params.get(MICROS_PARAM) == "true"
        return {"type": "long", "logicalType": "timestamp-micros" if micros
                else "timestamp-millis"}
    t = schema.type
    if t is SchemaType.STRING and ENUM_PARAM in params:
        full = params[ENUM_PARAM]
        if full in defined:
            return full
        defined.add(full)
        symbols = [v for k, v in params.items() if k.startswith(ENUM_PARAM + ".")]
        return {"type": "enum", "name": full.rpartition(".")[2],
                **({"namespace": full.rpartition(".")[0]} if "." in full else {}),
                "symbols": symbols}
    if t is SchemaType.BYTES and FIXED_PARAM in params and name:
        return {"type": "fixed", "name": name, "size": int(params[FIXED_PARAM])}
    primitive = {SchemaType.INT32: "int", SchemaType.INT64: "long",
                 SchemaType.FLOAT32: "float", SchemaType.FLOAT64: "double",
                 SchemaType.BOOLEAN: "boolean", SchemaType.STRING: "string",
                 SchemaType.BYTES: "bytes"}
    if t in primitive:
        return primitive[t]
    if t in (SchemaType.INT8, SchemaType.INT16):
        return {"type": "int", "connect.type": t.value}
    if t is SchemaType.ARRAY:
        assert schema.value_schema is not None
        return {"type": "array", "items": connect_to_avro(schema.value_schema, defined)}
    if t is SchemaType.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is not SchemaType.STRING:
            raise DataException("AvroConverter writes MAP schemas with STRING keys only")
        return {"type": "map", "values": connect_to_avro(schema.value_schema, defined)}
    full = name or DEFAULT_NAME
    if full in defined:
        return full
    defined.add(full)
    record: dict[str, Any] = {"type": "record", "name": full.rpartition(".")[2]}
    if "." in full:
        record["namespace"] = full.rpartition(".")[0]
    if schema.doc:
        record["doc"] = schema.doc
    fields = []
    for f in schema.fields:
        field: dict[str, Any] = {"name": f.name, "type": connect_to_avro(f.schema, defined)}
        if f.schema.optional and f.schema.default is None:
            field["default"] = None
        elif f.schema.default is not None:
            field["default"] = _avro_default(f.schema.default)
        fields.append(field)
    record["fields"] = fields
    return record


def _avro_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal | dt.date | dt.time):
        return None
    return value


# -- values -----------------------------------------------------------------------------------

def to_connect_value(value: Any, schema: Schema) -> Any:
    """A value fastavro read (dicts, logical types already decoded) as a Connect value."""
    if value is None:
        return None
    t = schema.type
    if t is SchemaType.STRUCT:
        if schema.name == UNION_NAME:
            out = Struct(schema)
            for f in schema.fields:  # the first branch the value fits
                try:
                    out.put(f, to_connect_value(value, f.schema))
                    return out
                except (DataException, TypeError, ValueError, AttributeError):
                    continue
            raise DataException(f"no union branch of {schema.fields} fits {value!r}")
        out = Struct(schema)
        for f in schema.fields:
            out.put(f, to_connect_value(value.get(f.name), f.schema))
        return out
    if t is SchemaType.ARRAY:
        assert schema.value_schema is not None
        return [to_connect_value(v, schema.value_schema) for v in value]
    if t is SchemaType.MAP:
        assert schema.value_schema is not None
        return {k: to_connect_value(v, schema.value_schema) for k, v in value.items()}
    if schema.name == Timestamp.LOGICAL_NAME and isinstance(value, int):
        return Timestamp.to_logical(schema, value)
    if schema.name == Date.LOGICAL_NAME and isinstance(value, int):
        return Date.to_logical(schema, value)
    if t is SchemaType.STRING and not isinstance(value, str):
        return str(value)
    return value


def from_connect_value(value: Any, schema: Schema | None) -> Any:
    """A Connect value as fastavro writes it (Structs -> dicts)."""
    if value is None:
        return None
    if isinstance(value, Struct):
        if value.schema.name == UNION_NAME:
            for f in value.schema.fields:
                inner = value.get(f)
                if inner is not None:
                    return from_connect_value(inner, f.schema)
            return None
        return {f.name: from_connect_value(value.get(f), f.schema) for f in value.schema.fields}
    if isinstance(value, list | tuple):
        inner = schema.value_schema if schema is not None else None
        return [from_connect_value(v, inner) for v in value]
    if isinstance(value, dict):
        inner = schema.value_schema if schema is not None else None
        return {k: from_connect_value(v, inner) for k, v in value.items()}
    return value


class AvroConverter(RegistryConverter):
    """``io.confluent.connect.avro.AvroConverter``."""

    schema_type = "AVRO"

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        super().configure(configs, is_key)
        self._write_cache: dict[Schema, tuple[str, Any, str | None]] = {}

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        import fastavro

        if value is None:
            return None
        if schema is None:
            raise DataException("AvroConverter needs a schema (schemaless data has none: use "
                                "JsonConverter with schemas.enable=false for that)")
        hit = self._write_cache.get(schema)
        if hit is None:
            avro = connect_to_avro(schema)
            text = json.dumps(avro)
            record_name = schema.name or (DEFAULT_NAME if schema.type is SchemaType.STRUCT
                                          else None)
            hit = (text, fastavro.parse_schema(avro), record_name)
            self._write_cache[schema] = hit
        text, parsed, record_name = hit
        schema_id = self.schema_id(topic, text, record_name)
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, from_connect_value(value, schema))
        except (ValueError, TypeError, AttributeError) as exc:
            raise DataException(f"AvroConverter cannot write {value!r} for topic {topic!r}: "
                                f"{exc}") from exc
        return self.header(schema_id) + out.getvalue()

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        import fastavro

        if value is None:
            return SchemaAndValue(None, None)
        schema_id, payload = self.split(topic, value)

        def build(registered: Any) -> tuple[Any, Schema]:
            avro = json.loads(registered.schema)
            return fastavro.parse_schema(avro), avro_to_connect(avro)

        parsed, connect_schema = self.cached(schema_id, build)
        try:
            raw = fastavro.schemaless_reader(io.BytesIO(payload), parsed, None)
        except Exception as exc:
            raise DataException(f"AvroConverter cannot read schema id {schema_id} from topic "
                                f"{topic!r}: {exc}") from exc
        return SchemaAndValue(connect_schema, to_connect_value(raw, connect_schema))
