"""Cast: change the type of the whole key/value or of some of its fields.

``spec`` is either one type (``int64``) for the whole key/value, or ``field:type`` pairs
(``age:int32,score:float64``). Target types: int8, int16, int32, int64, float32, float64,
boolean, string. Numbers narrow like Java casts (wrapping), strings parse, booleans become 1/0,
bytes cast to string as base64, Date/Time/Timestamp cast to string in ISO-8601 or to a number of
ms (days for Date). Casting a Struct, array or map is an error.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import struct as _struct
from collections.abc import Mapping
from typing import Any

from connect.data import (
    DataException,
    Date,
    Schema,
    SchemaType,
    Struct,
    Time,
    Timestamp,
    builder_from,
    value_to_string,
)
from connect.records import ConnectRecord
from connect.transforms._base import (
    KAFKA_PACKAGE,
    SMT,
    KeySide,
    ValueSide,
    replace_null_key,
    require_map,
    require_struct,
)
from connect.transforms._config import REQUIRED, ConfigKey, non_empty
from streams.config import ConfigError

TARGET_TYPES = {
    "int8": SchemaType.INT8, "int16": SchemaType.INT16, "int32": SchemaType.INT32,
    "int64": SchemaType.INT64, "float32": SchemaType.FLOAT32, "float64": SchemaType.FLOAT64,
    "boolean": SchemaType.BOOLEAN, "string": SchemaType.STRING,
}
_BITS = {SchemaType.INT8: 8, SchemaType.INT16: 16, SchemaType.INT32: 32, SchemaType.INT64: 64}


def _wrap(n: int, bits: int) -> int:
    """Java's narrowing conversion of an integer to ``bits`` bits."""
    mask = (1 << bits) - 1
    n &= mask
    return n - (1 << bits) if n >> (bits - 1) else n


def _float_to_int(f: float, bits: int) -> int:
    """Java's ``(byte)``/``(short)``/``(int)``/``(long)`` of a double: saturate, then narrow."""
    if f != f:
        return 0
    width = 64 if bits == 64 else 32
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    n = (hi if f > 0 else lo) if f in (float("inf"), float("-inf")) else max(lo, min(hi, int(f)))
    return _wrap(n, bits)


def _to_epoch_number(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        return Timestamp.from_logical(Timestamp.SCHEMA, value)
    if isinstance(value, _dt.date):
        return Date.from_logical(Date.SCHEMA, value)
    return Time.from_logical(Time.SCHEMA, value)


def cast_value(value: Any, target: SchemaType) -> Any:
    """Cast one value to ``target``; DataException when Kafka's Cast would refuse it."""
    if value is None:
        return None
    if isinstance(value, Struct | list | tuple | Mapping):
        raise DataException(f"Cast transformation does not support casting to/from "
                            f"{type(value).__name__}")
    if target is SchemaType.STRING:
        if isinstance(value, bytes | bytearray | memoryview):
            return base64.b64encode(bytes(value)).decode("ascii")
        if isinstance(value, _dt.datetime | _dt.date | _dt.time):
            schema = (Timestamp.SCHEMA if isinstance(value, _dt.datetime)
                      else Date.SCHEMA if isinstance(value, _dt.date) else Time.SCHEMA)
            return value_to_string(schema, value)
        return value_to_string(None, value)
    if isinstance(value, bytes | bytearray | memoryview):
        raise DataException(f"Unexpected type in Cast transformation: bytes can only be cast to "
                            f"string, not {target.value}")
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        value = _to_epoch_number(value)
    try:
        if target in _BITS:
            bits = _BITS[target]
            if isinstance(value, bool):
                return 1 if value else 0
            if isinstance(value, int):
                return _wrap(value, bits)
            if isinstance(value, float):
                return _float_to_int(value, bits)
            if isinstance(value, _decimal.Decimal):
                return _wrap(int(value), bits)
            if isinstance(value, str):
                n = int(value.strip())
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
                if not lo <= n <= hi:
                    raise ValueError(f"value out of range for {target.value}")
                return n
        elif target in (SchemaType.FLOAT32, SchemaType.FLOAT64):
            if isinstance(value, bool):
                f = 1.0 if value else 0.0
            elif isinstance(value, int | float | _decimal.Decimal):
                f = float(value)
            elif isinstance(value, str):
                f = float(value.strip())
            else:
                raise ValueError("unsupported type")
            if target is SchemaType.FLOAT32:
                f = _struct.unpack(">f", _struct.pack(">f", f))[0]
            return f
        elif target is SchemaType.BOOLEAN:
            if isinstance(value, bool):
                return value
            if isinstance(value, int | float | _decimal.Decimal):
                return value != 0
            if isinstance(value, str):
                return value.strip().lower() == "true"
    except (ValueError, OverflowError, _struct.error) as exc:
        raise DataException(f"Cast: cannot cast {value!r} to {target.value}: {exc}") from None
    raise DataException(f"Unexpected type in Cast transformation: {type(value).__name__}")


class Cast(SMT):
    """See the module docstring."""

    PURPOSE = "cast types"
    CONFIG = {
        "spec": ConfigKey("list", REQUIRED, "high",
                          "List of fields and the type to cast them to of the form "
                          "field1:type,field2:type to cast fields of Maps or Structs. A single "
                          "type to cast the entire value. Valid types are int8, int16, int32, "
                          "int64, float32, float64, boolean, and string.", non_empty),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        spec = self.config["spec"]
        self.whole: SchemaType | None = None
        self.casts: dict[str, SchemaType] = {}
        if len(spec) == 1 and ":" not in spec[0]:
            self.whole = self._type(spec[0])
            return
        for item in spec:
            name, sep, type_name = item.partition(":")
            if not sep or not name:
                raise ConfigError(f"{self.short_name()}: invalid cast mapping {item!r}; expected "
                                  f"field:type or a single type for the whole value")
            self.casts[name.strip()] = self._type(type_name)

    def _type(self, name: str) -> SchemaType:
        t = TARGET_TYPES.get(name.strip().lower())
        if t is None:
            raise ConfigError(f"{self.short_name()}: invalid type found in casting spec: "
                              f"{name.strip()!r}; valid types: {', '.join(TARGET_TYPES)}")
        return t

    @staticmethod
    def _target_schema(original: Schema, target: SchemaType) -> Schema:
        if original.type in (SchemaType.STRUCT, SchemaType.ARRAY, SchemaType.MAP):
            raise DataException(f"Cast transformation does not support casting to/from "
                                f"{original.type.name}")
        default = cast_value(original.default, target) if original.default is not None else None
        return Schema(target, optional=original.optional, default=default)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if self.whole is not None:
            if schema is None:
                return self.updated(record, None, cast_value(value, self.whole))  # type: ignore[attr-defined]
            new_schema = self.cached_schema(schema,
                                            lambda: self._target_schema(schema, self.whole))
            return self.updated(record, new_schema, cast_value(value, self.whole))  # type: ignore[attr-defined]
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = {k: cast_value(v, self.casts[k]) if k in self.casts else v
                       for k, v in original.items()}
            return self.updated(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)

        def build() -> Schema:
            builder = builder_from(struct.schema, copy_optional=True)
            for f in struct.schema.fields:
                target = self.casts.get(f.name)
                builder.field(f.name, f.schema if target is None
                              else self._target_schema(f.schema, target))
            return builder.build()

        new_schema = self.cached_schema(struct.schema, build)
        out = Struct(new_schema)
        get = struct.get if self.config["replace.null.with.default"] else struct.get_without_default
        for f in struct.schema.fields:
            v = get(f)
            target = self.casts.get(f.name)
            out.put(f.name, v if target is None else cast_value(v, target))
        return self.updated(record, new_schema, out)  # type: ignore[attr-defined]


class CastKey(KeySide, Cast):
    KAFKA_NAME = KAFKA_PACKAGE + "Cast$Key"


class CastValue(ValueSide, Cast):
    KAFKA_NAME = KAFKA_PACKAGE + "Cast$Value"
