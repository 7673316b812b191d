"""Confluent's ``io.confluent.connect.json.JsonSchemaConverter``: JSON with a registered JSON
Schema, in Confluent's wire format (magic byte 0, 4-byte schema id, UTF-8 JSON).

Connect <-> JSON Schema as Confluent's ``JsonSchemaData`` does it in outline: STRUCT <-> an
object with ``properties`` (the schema name as ``title``; required fields listed in
``required``, optional ones as ``oneOf: [null, T]``), integers <-> ``integer`` and floats <->
``number`` with the Connect type in ``connect.type``, BYTES <-> base64 ``string``
(``connect.type: bytes``), ARRAY <-> ``array``, MAP with string keys <-> an object with
``additionalProperties``; logical types keep their Connect name in ``title`` (Date as days,
Time/Timestamp as milliseconds, Decimal as a number). A schema registered by another producer
reads as integer -> INT64, number -> FLOAT64. Settings as :mod:`connect.converters.avro`.
"""

from __future__ import annotations

import base64
import decimal
import json
from typing import Any

from connect.converters.avro import RegistryConverter
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

_LOGICAL = {Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time, Timestamp.LOGICAL_NAME: Timestamp,
            Decimal.LOGICAL_NAME: Decimal}
_INTS = {"int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16, "int32": SchemaBuilder.int32,
         "int64": SchemaBuilder.int64}


def connect_to_json_schema(schema: Schema) -> dict[str, Any]:
    t, name = schema.type, schema.name
    out: dict[str, Any]
    if name in _LOGICAL:
        if name == Decimal.LOGICAL_NAME:
            out = {"type": "number", "title": name,
                   "connect.parameters": dict(schema.parameters or {})}
        else:
            out = {"type": "integer", "title": name,
                   "connect.type": "int32" if name != Timestamp.LOGICAL_NAME else "int64"}
    elif t in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
        out = {"type": "integer", "connect.type": t.value}
    elif t in (SchemaType.FLOAT32, SchemaType.FLOAT64):
        out = {"type": "number", "connect.type": t.value}
    elif t is SchemaType.BOOLEAN:
        out = {"type": "boolean"}
    elif t is SchemaType.STRING:
        out = {"type": "string"}
    elif t is SchemaType.BYTES:
        out = {"type": "string", "connect.type": "bytes"}
    elif t is SchemaType.ARRAY:
        assert schema.value_schema is not None
        out = {"type": "array", "items": _field(schema.value_schema)}
    elif t is SchemaType.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is not SchemaType.STRING:
            raise DataException("JsonSchemaConverter writes MAP schemas with STRING keys only")
        out = {"type": "object", "connect.type": "map",
               "additionalProperties": _field(schema.value_schema)}
    else:
        out = {"type": "object"}
        if name:
            out["title"] = name
        out["properties"] = {f.name: _field(f.schema) for f in schema.fields}
        required = [f.name for f in schema.fields if not f.schema.optional]
        if required:
            out["required"] = required
        out["additionalProperties"] = False
    return out


def _field(schema: Schema) -> dict[str, Any]:
    inner = connect_to_json_schema(schema)
    if schema.optional:
        return {"oneOf": [{"type": "null"}, inner]}
    return inner


def json_schema_to_connect(js: Any, optional: bool = False) -> Schema:
    builder = _builder(js)
    if optional:
        builder.optional()
    return builder.build()


def _builder(js: Any) -> SchemaBuilder:
    if js is True or js == {}:
        return SchemaBuilder.string()  # anything: carried as JSON text
    for key in ("oneOf", "anyOf"):
        if key in js:
            branches = [b for b in js[key] if b.get("type") != "null"]
            if len(branches) == 1:
                return _builder(branches[0]).optional()
            return SchemaBuilder.string()
    kind = js.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        b = _builder({**js, "type": rest[0] if len(rest) == 1 else "string"})
        return b.optional() if "null" in kind else b
    title = js.get("title")
    if title == Decimal.LOGICAL_NAME:
        params = js.get("connect.parameters") or {}
        return Decimal.builder(int(params.get("scale", 0)))
    if title in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return _LOGICAL[title].builder()
    if kind == "integer":
        return _INTS.get(js.get("connect.type", "int64"), SchemaBuilder.int64)()
    if kind == "number":
        return SchemaBuilder.float32() if js.get("connect.type") == "float32" \
            else SchemaBuilder.float64()
    if kind == "boolean":
        return SchemaBuilder.bool()
    if kind == "string":
        return SchemaBuilder.bytes() if js.get("connect.type") == "bytes" \
            else SchemaBuilder.string()
    if kind == "array":
        return SchemaBuilder.array(json_schema_to_connect(js.get("items", True)))
    if kind == "object" or "properties" in js:
        props = js.get("properties")
        if not props and isinstance(js.get("additionalProperties"), dict):
            return SchemaBuilder.map(Schema.STRING_SCHEMA,
                                     json_schema_to_connect(js["additionalProperties"]))
        builder = SchemaBuilder.struct()
        if title:
            builder.name(title)
        required = set(js.get("required", []))
        for name, sub in (props or {}).items():
            fb = _builder(sub)
            if name not in required and not fb.is_optional:
                fb.optional()
            builder.field(name, fb.build())
        return builder
    return SchemaBuilder.string()


def from_connect_value(value: Any, schema: Schema) -> Any:
    if value is None:
        return None
    if isinstance(value, Struct):
        return {f.name: from_connect_value(value.get(f), f.schema) for f in value.schema.fields}
    name = schema.name
    if name in _LOGICAL:
        if name == Decimal.LOGICAL_NAME:
            return float(value) if isinstance(value, decimal.Decimal) else value
        return _LOGICAL[name].from_logical(schema, value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list | tuple):
        assert schema.value_schema is not None
        return [from_connect_value(v, schema.value_schema) for v in value]
    if isinstance(value, dict):
        assert schema.value_schema is not None
        return {k: from_connect_value(v, schema.value_schema) for k, v in value.items()}
    return value


def to_connect_value(value: Any, schema: Schema) -> Any:
    if value is None:
        return None
    t, name = schema.type, schema.name
    if name in _LOGICAL:
        if name == Decimal.LOGICAL_NAME:
            return decimal.Decimal(str(value)).quantize(
                decimal.Decimal(1).scaleb(-Decimal.scale_of(schema)))
        return _LOGICAL[name].to_logical(schema, int(value))
    if t is SchemaType.STRUCT:
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
    if t is SchemaType.BYTES:
        return base64.b64decode(value)
    if t in (SchemaType.FLOAT32, SchemaType.FLOAT64):
        return float(value)
    if t is SchemaType.STRING and not isinstance(value, str):
        return json.dumps(value)
    return value


class JsonSchemaConverter(RegistryConverter):
    """``io.confluent.connect.json.JsonSchemaConverter``."""

    schema_type = "JSON"

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        super().configure(configs, is_key)
        self._write_cache: dict[Schema, tuple[str, str | None]] = {}

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if schema is None:
            raise DataException("JsonSchemaConverter needs a schema")
        hit = self._write_cache.get(schema)
        if hit is None:
            hit = (json.dumps(connect_to_json_schema(schema)), schema.name)
            self._write_cache[schema] = hit
        schema_id = self.schema_id(topic, hit[0], hit[1])
        payload = json.dumps(from_connect_value(value, schema), separators=(",", ":"))
        return self.header(schema_id) + payload.encode()

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        schema_id, payload = self.split(topic, value)
        schema = self.cached(schema_id,
                             lambda reg: json_schema_to_connect(json.loads(reg.schema)))
        try:
            data = json.loads(bytes(payload))
            return SchemaAndValue(schema, to_connect_value(data, schema))
        except (ValueError, TypeError, AttributeError) as exc:
            raise DataException(f"JsonSchemaConverter cannot read schema id {schema_id} from "
                                f"topic {topic!r}: {exc}") from exc
