"""Kafka's JsonConverter: the ``{"schema":..., "payload":...}`` envelope or plain JSON.

Output is byte-identical to what Kafka (Jackson, compact) writes, so Java sinks read our topics
and we read theirs: keys in Kafka's order (``type``, ``items``/``keys``+``values``/``fields``,
``optional``, ``name``, ``version``, ``doc``, ``parameters``, ``default``; a struct field's schema
ends with ``"field"``), no spaces, floats as Java prints them (``1.0E10``), bytes as base64.

Settings: ``schemas.enable`` (default true), ``schemas.cache.size`` (1000),
``decimal.format`` (``BASE64`` default | ``NUMERIC``), ``replace.null.with.default`` (true).
"""

from __future__ import annotations

import base64
import binascii
import decimal as _decimal
import json
import re
import struct
from collections import OrderedDict
from collections.abc import Mapping, Sequence
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
    _java_double_str,
)

_JSON_TYPE = {
    SchemaType.BOOLEAN: "boolean", SchemaType.INT8: "int8", SchemaType.INT16: "int16",
    SchemaType.INT32: "int32", SchemaType.INT64: "int64", SchemaType.FLOAT32: "float",
    SchemaType.FLOAT64: "double", SchemaType.BYTES: "bytes", SchemaType.STRING: "string",
    SchemaType.ARRAY: "array", SchemaType.MAP: "map", SchemaType.STRUCT: "struct",
}
_FROM_JSON_TYPE = {v: k for k, v in _JSON_TYPE.items()}
# One decoder for all calls: json.loads with parse_float builds a new one each time.
# With a schema, numbers are read as Decimal so DECIMAL/FLOAT fields keep their exact digits.
_DECODER = json.JSONDecoder(parse_float=_decimal.Decimal)
# Schemaless reads turn every non-integer number into a float anyway, and float(text) is the
# same correctly rounded double as float(Decimal(text)): the C scanner's own float parsing then
# yields the final value directly, with no second walk over the decoded tree.
_PLAIN_DECODE = json.JSONDecoder().decode
_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_LOWER_HEX_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")


class _Raw(str):
    """Already-encoded JSON text."""


def _json_str(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    if "\\u00" in encoded:  # Jackson writes control-character escapes in upper case
        encoded = _LOWER_HEX_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), encoded)
    return encoded


def _float32_str(value: float) -> str:
    """Java's ``Float.toString``: the shortest decimal that reads back as the same float32."""
    if value != value or value in (float("inf"), float("-inf")):
        return _java_double_str(value)
    target = struct.pack(">f", value)
    f32 = struct.unpack(">f", target)[0]
    for digits in range(1, 10):
        candidate = float(f"{f32:.{digits}g}")
        if struct.pack(">f", candidate) == target:
            return _java_double_str(candidate)
    return _java_double_str(f32)


def _plain_decimal(value: _decimal.Decimal) -> str:
    return format(value, "f")


def _encode(node: Any) -> str:
    """Compact JSON for the node tree built by the converter (dicts keep insertion order)."""
    if node is None:
        return "null"
    if isinstance(node, _Raw):
        return str(node)
    if isinstance(node, str):
        return _json_str(node)
    if node is True:
        return "true"
    if node is False:
        return "false"
    if isinstance(node, int):
        return str(node)
    if isinstance(node, float):
        return _java_double_str(node)
    if isinstance(node, dict):
        return "{" + ",".join(f"{_json_str(k)}:{_encode(v)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ",".join(_encode(v) for v in node) + "]"
    raise DataException(f"cannot encode {type(node).__name__} as JSON")


_SAFE_SCALARS = (str, int, bool, type(None))
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode


def _plain_json_safe(value: Any, depth: int = 0) -> bool:
    """True when ``json.dumps`` writes exactly Jackson's bytes for this schemaless value.

    That holds for str/int/bool/None, floats Python and Java print alike, lists and str-keyed
    dicts of those; anything else (bytes, big floats, int keys, Structs) takes the slow path.
    """
    t = type(value)
    if t in _SAFE_SCALARS:
        return True
    if t is float:
        return value == 0 or 1e-3 <= abs(value) < 1e7
    if depth > 32:
        return False
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or not _plain_json_safe(v, depth + 1):
                return False
        return True
    if t is list:
        return all(_plain_json_safe(v, depth + 1) for v in value)
    return False


class JsonConverter:
    """Converter and header converter for JSON; see the module docstring."""

    def __init__(self) -> None:
        self.schemas_enable = True
        self.decimal_numeric = False
        self.replace_null_with_default = True
        self.cache_size = 1000
        self.is_key = False
        self._to_json_cache: OrderedDict[Schema, dict[str, Any]] = OrderedDict()
        self._to_connect_cache: OrderedDict[str, Schema] = OrderedDict()

    # -- configuration ---------------------------------------------------------------------------
    def configure(self, configs: dict[str, Any], is_key: bool = False) -> None:
        from streams.config import ConfigError

        self.is_key = is_key
        self.schemas_enable = config_bool(configs, "schemas.enable", True)
        self.replace_null_with_default = config_bool(configs, "replace.null.with.default", True)
        fmt = str(configs.get("decimal.format", "BASE64")).strip().upper()
        if fmt not in ("BASE64", "NUMERIC"):
            raise ConfigError(f"invalid value {fmt!r} for configuration decimal.format: "
                              f"must be BASE64 or NUMERIC")
        self.decimal_numeric = fmt == "NUMERIC"
        try:
            self.cache_size = int(configs.get("schemas.cache.size", 1000))
        except ValueError:
            raise ConfigError(f"invalid value {configs.get('schemas.cache.size')!r} for "
                              f"configuration schemas.cache.size: expected an integer") from None

    def close(self) -> None:
        """Nothing to release."""

    # -- Converter -------------------------------------------------------------------------------
    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is None and _plain_json_safe(value):
            text = _DUMPS(value)
            if "\\u00" not in text:  # Jackson upper-cases control-character escapes
                if self.schemas_enable:
                    text = '{"schema":null,"payload":' + text + "}"
                return text.encode("utf-8")
        payload = self._to_json(schema, value)
        if self.schemas_enable:
            node = {"schema": self.as_json_schema(schema), "payload": payload}
        else:
            node = payload
        return _encode(node).encode("utf-8")

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL  # type: ignore[attr-defined]
        try:
            if not self.schemas_enable:
                return SchemaAndValue(None, _PLAIN_DECODE(bytes(value).decode("utf-8")))
            node = _DECODER.decode(bytes(value).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataException("Converting byte[] to Kafka Connect data failed due to "
                                f"serialization error: {exc}") from exc
        if not (isinstance(node, dict) and len(node) == 2 and "schema" in node
                and "payload" in node):
            raise DataException(_ENVELOPE_ERROR)
        schema = self.as_connect_schema(node["schema"])
        return SchemaAndValue(schema, self._to_connect(schema, node["payload"]))

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]
                         ) -> tuple[list[Schema | None], list[Any]]:
        """``to_connect_data`` over many values, as parallel schema and value lists (see
        :func:`connect.converters.base.to_connect_batch`); same results and errors.

        Schemaless values are decoded in one comprehension with no per-value wrapper; if any
        fails, the batch is redone value by value to raise that value's DataException.
        """
        if not self.schemas_enable:
            decode = _PLAIN_DECODE
            try:
                out = [None if v is None else decode(v.decode("utf-8")) for v in values]
                return [None] * len(out), out
            except Exception:  # noqa: BLE001 - redone per value for the exact error
                pass
        convert = self.to_connect_data
        pairs = [convert(topic, v) for v in values]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    # -- HeaderConverter -------------------------------------------------------------------------
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    # -- schemas ---------------------------------------------------------------------------------
    def as_json_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        """Kafka's JSON form of a schema (None for no schema)."""
        if schema is None:
            return None
        cached = self._to_json_cache.get(schema)
        if cached is not None:
            return cached
        node: dict[str, Any] = {"type": _JSON_TYPE[schema.type]}
        if schema.type is SchemaType.ARRAY:
            node["items"] = self.as_json_schema(schema.value_schema)
        elif schema.type is SchemaType.MAP:
            node["keys"] = self.as_json_schema(schema.key_schema)
            node["values"] = self.as_json_schema(schema.value_schema)
        elif schema.type is SchemaType.STRUCT:
            fields = []
            for f in schema.fields:
                field_node = dict(self.as_json_schema(f.schema) or {})
                field_node["field"] = f.name
                fields.append(field_node)
            node["fields"] = fields
        node["optional"] = schema.optional
        if schema.name is not None:
            node["name"] = schema.name
        if schema.version is not None:
            node["version"] = schema.version
        if schema.doc is not None:
            node["doc"] = schema.doc
        if schema.parameters is not None:
            node["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            node["default"] = self._to_json(schema, schema.default)
        self._remember(self._to_json_cache, schema, node)
        return node

    def as_connect_schema(self, node: Any) -> Schema | None:
        """Parse Kafka's JSON schema form; DataException on anything malformed."""
        if node is None:
            return None
        if not isinstance(node, dict):
            raise DataException("Schema must be a JSON object or null")
        key = json.dumps(node, sort_keys=True, default=str)
        cached = self._to_connect_cache.get(key)
        if cached is not None:
            return cached
        type_name = node.get("type")
        if not isinstance(type_name, str):
            raise DataException("Schema must contain 'type' field")
        if type_name not in _FROM_JSON_TYPE:
            raise DataException(f"Unknown schema type: {type_name}")
        t = _FROM_JSON_TYPE[type_name]
        if t is SchemaType.ARRAY:
            items = node.get("items")
            if items is None:
                raise DataException("Array schema did not specify the element type")
            builder = SchemaBuilder.array(self._required_schema(items))
        elif t is SchemaType.MAP:
            if "keys" not in node:
                raise DataException("Map schema did not specify the key type")
            if "values" not in node:
                raise DataException("Map schema did not specify the value type")
            builder = SchemaBuilder.map(self._required_schema(node["keys"]),
                                        self._required_schema(node["values"]))
        elif t is SchemaType.STRUCT:
            builder = SchemaBuilder.struct()
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise DataException('Struct schema\'s "fields" argument is not an array.')
            for f in fields:
                name = f.get("field") if isinstance(f, dict) else None
                if not isinstance(name, str):
                    raise DataException("Struct schema's field name not specified properly")
                builder.field(name, self._required_schema(f))
        else:
            builder = SchemaBuilder(t)
        if node.get("optional") is True:
            builder.optional()
        else:
            builder.required()
        if isinstance(node.get("name"), str):
            builder.name(node["name"])
        if isinstance(node.get("version"), int) and not isinstance(node.get("version"), bool):
            builder.version(node["version"])
        if isinstance(node.get("doc"), str):
            builder.doc(node["doc"])
        params = node.get("parameters")
        if isinstance(params, dict):
            for k, v in params.items():
                if not isinstance(v, str):
                    raise DataException("Schema parameters must have string values.")
                builder.parameter(k, v)
        if "default" in node and node["default"] is not None:
            builder.default_value(self._to_connect(builder.build(_skip_default=True),
                                                   node["default"]))
        schema = builder.build()
        self._remember(self._to_connect_cache, key, schema)
        return schema

    def _required_schema(self, node: Any) -> Schema:
        schema = self.as_connect_schema(node)
        if schema is None:
            raise DataException("nested schemas may not be null")
        return schema

    def _remember(self, cache: OrderedDict, key: Any, value: Any) -> None:
        if self.cache_size <= 0:
            return
        cache[key] = value
        if len(cache) > self.cache_size:
            cache.popitem(last=False)

    # -- values: Connect -> JSON node ------------------------------------------------------------
    def _to_json(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            if schema is None:
                return None
            if schema.default is not None and self.replace_null_with_default:
                return self._to_json(schema, schema.default)
            if schema.optional:
                return None
            raise DataException(
                "Conversion error: null value for field that is required and has no default value")
        if schema is not None and schema.name is not None:
            value = self._logical_to_json(schema, value)
            if isinstance(value, _Raw):
                return value
        t = schema.type if schema is not None else _schemaless_type(value)
        try:
            if t in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError
                return value
            if t is SchemaType.FLOAT32:
                if not isinstance(value, float | int) or isinstance(value, bool):
                    raise TypeError
                return _Raw(_float32_str(float(value)))
            if t is SchemaType.FLOAT64:
                if isinstance(value, _decimal.Decimal) and schema is None:
                    return _Raw(_plain_decimal(value))
                if not isinstance(value, float | int) or isinstance(value, bool):
                    raise TypeError
                return float(value)
            if t is SchemaType.BOOLEAN:
                if not isinstance(value, bool):
                    raise TypeError
                return value
            if t is SchemaType.STRING:
                if not isinstance(value, str):
                    raise TypeError
                return value
            if t is SchemaType.BYTES:
                if not isinstance(value, bytes | bytearray | memoryview):
                    raise TypeError
                return base64.b64encode(bytes(value)).decode("ascii")
            if t is SchemaType.ARRAY:
                if not isinstance(value, list | tuple):
                    raise TypeError
                item_schema = schema.value_schema if schema is not None else None
                return [self._to_json(item_schema, v) for v in value]
            if t is SchemaType.MAP:
                return self._map_to_json(schema, value)
            if t is SchemaType.STRUCT:
                if not isinstance(value, Struct):
                    raise TypeError
                if schema is None:
                    raise DataException("Struct values need a schema (Struct.schema)")
                if value.schema != schema:
                    raise DataException("Mismatching schema.")
                get = value.get if self.replace_null_with_default else value.get_without_default
                return {f.name: self._to_json(f.schema, get(f)) for f in schema.fields}
        except TypeError:
            type_str = t.name if schema is not None else "unknown schema"
            raise DataException(f"Invalid type for {type_str}: {type(value).__name__}") from None
        raise DataException(f"Couldn't convert {value!r} to JSON.")

    def _map_to_json(self, schema: Schema | None, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise TypeError
        if schema is None:
            object_mode = all(isinstance(k, str) for k in value)
            ks = vs = None
        else:
            object_mode = schema.key_schema.type is SchemaType.STRING
            ks, vs = schema.key_schema, schema.value_schema
        if object_mode:
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = self._to_json(ks, k)
                out[key if isinstance(key, str) else _encode(key)] = self._to_json(vs, v)
            return out
        return [[self._to_json(ks, k), self._to_json(vs, v)] for k, v in value.items()]

    def _logical_to_json(self, schema: Schema, value: Any) -> Any:
        name = schema.name
        try:
            if name == Decimal.LOGICAL_NAME:
                if not isinstance(value, _decimal.Decimal):
                    raise DataException(f"Invalid type for Decimal, expected Decimal but was "
                                        f"{type(value).__name__}")
                if self.decimal_numeric:
                    return _Raw(_plain_decimal(value))
                return Decimal.from_logical(schema, value)
            if name == Date.LOGICAL_NAME:
                return Date.from_logical(schema, value)
            if name == Time.LOGICAL_NAME:
                return Time.from_logical(schema, value)
            if name == Timestamp.LOGICAL_NAME:
                return Timestamp.from_logical(schema, value)
        except (AttributeError, TypeError) as exc:
            raise DataException(f"Invalid type for {name}: {type(value).__name__}") from exc
        return value

    # -- values: JSON node -> Connect ------------------------------------------------------------
    def _to_connect(self, schema: Schema | None, node: Any) -> Any:
        if schema is None:
            return _schemaless_from_json(node)
        if node is None:
            if schema.default is not None and self.replace_null_with_default:
                return schema.default
            if schema.optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type.name} field")
        t = schema.type
        name = schema.name
        if name == Decimal.LOGICAL_NAME and isinstance(node, int | _decimal.Decimal):
            return _decimal.Decimal(node)
        result: Any
        if t in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
            if isinstance(node, bool) or not isinstance(node, int | _decimal.Decimal):
                raise DataException(f"Invalid {t.name} value: {node!r}")
            result = int(node)
        elif t in (SchemaType.FLOAT32, SchemaType.FLOAT64):
            if isinstance(node, bool) or not isinstance(node, int | _decimal.Decimal):
                raise DataException(f"Invalid {t.name} value: {node!r}")
            result = float(node)
        elif t is SchemaType.BOOLEAN:
            if not isinstance(node, bool):
                raise DataException(f"Invalid BOOLEAN value: {node!r}")
            result = node
        elif t is SchemaType.STRING:
            if not isinstance(node, str):
                raise DataException(f"Invalid STRING value: {node!r}")
            result = node
        elif t is SchemaType.BYTES:
            if not isinstance(node, str):
                raise DataException("Invalid bytes field")
            try:
                result = base64.b64decode(node, validate=True)
            except binascii.Error as exc:
                raise DataException("Invalid bytes field") from exc
        elif t is SchemaType.ARRAY:
            if not isinstance(node, list):
                raise DataException(f"Invalid ARRAY value: {node!r}")
            result = [self._to_connect(schema.value_schema, v) for v in node]
        elif t is SchemaType.MAP:
            result = self._map_to_connect(schema, node)
        else:
            if not isinstance(node, dict):
                raise DataException(f"Structs should be encoded as JSON objects, but found "
                                    f"{_node_type(node)}")
            result = Struct(schema)
            for f in schema.fields:
                result.put(f, self._to_connect(f.schema, node.get(f.name)))
        if name == Decimal.LOGICAL_NAME:
            return Decimal.to_logical(schema, result)
        if name == Date.LOGICAL_NAME:
            return Date.to_logical(schema, result)
        if name == Time.LOGICAL_NAME:
            return Time.to_logical(schema, result)
        if name == Timestamp.LOGICAL_NAME:
            return Timestamp.to_logical(schema, result)
        return result

    def _map_to_connect(self, schema: Schema, node: Any) -> dict[Any, Any]:
        ks, vs = schema.key_schema, schema.value_schema
        if ks.type is SchemaType.STRING:
            if not isinstance(node, dict):
                raise DataException("Maps with string fields should be encoded as JSON objects, "
                                    f"but found {_node_type(node)}")
            return {k: self._to_connect(vs, v) for k, v in node.items()}
        if not isinstance(node, list):
            raise DataException("Maps with non-string fields should be encoded as JSON array of "
                                f"tuples, but found {_node_type(node)}")
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list):
                raise DataException(f"Found invalid map entry instead of array tuple: "
                                    f"{_node_type(entry)}")
            if len(entry) != 2:
                raise DataException(f"Found invalid map entry, expected length 2 but found :"
                                    f"{len(entry)}")
            key = self._to_connect(ks, entry[0])
            result[_hashable_key(key)] = self._to_connect(vs, entry[1])
        return result


def _hashable_key(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(key)
    if isinstance(key, dict):
        return tuple(key.items())
    return key


def _node_type(node: Any) -> str:
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, int | float | _decimal.Decimal):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    if isinstance(node, list):
        return "ARRAY"
    return "OBJECT"


def _schemaless_type(value: Any) -> SchemaType:
    if isinstance(value, bool):
        return SchemaType.BOOLEAN
    if isinstance(value, int):
        return SchemaType.INT64
    if isinstance(value, float | _decimal.Decimal):
        return SchemaType.FLOAT64
    if isinstance(value, str):
        return SchemaType.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return SchemaType.BYTES
    if isinstance(value, list | tuple):
        return SchemaType.ARRAY
    if isinstance(value, Mapping):
        return SchemaType.MAP
    if isinstance(value, Struct):
        return SchemaType.STRUCT
    raise DataException(f"Python type {type(value).__name__} does not have a corresponding "
                        f"schema type.")


def _schemaless_from_json(node: Any) -> Any:
    """Schemaless read: integers stay int (INT64), decimals become float, objects become dicts."""
    if isinstance(node, _decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [_schemaless_from_json(v) for v in node]
    if isinstance(node, dict):
        return {k: _schemaless_from_json(v) for k, v in node.items()}
    return node
