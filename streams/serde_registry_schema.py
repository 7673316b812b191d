"""An Avro schema from a pydantic model, so a model class can be a registry serde's schema.

Mapping: str -> string, int -> long, float -> double, bool -> boolean, bytes -> bytes,
datetime -> long/timestamp-millis, date -> int/date, Decimal -> bytes/decimal (precision and
scale from ``condecimal``/``Field(max_digits, decimal_places)``, else 38/9), UUID ->
string/uuid, Enum -> enum, list[T] -> array, dict[str, T] -> map, a nested model -> record,
``T | None`` -> ``["null", T]`` with default null. A field with a default gets it (if JSON).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import types
import typing
import uuid
from typing import Any

_SIMPLE: dict[Any, Any] = {
    str: "string", int: "long", float: "double", bool: "boolean", bytes: "bytes",
    datetime.datetime: {"type": "long", "logicalType": "timestamp-millis"},
    datetime.date: {"type": "int", "logicalType": "date"},
    uuid.UUID: {"type": "string", "logicalType": "uuid"},
}


def avro_schema(model: type, namespace: str | None = None) -> dict[str, Any]:
    """The Avro record schema of a pydantic model class."""
    return _record(model, namespace, set())


def _record(model: type, namespace: str | None, seen: set[str]) -> Any:
    name = model.__name__
    if name in seen:
        return name
    seen.add(name)
    fields = []
    for field_name, info in model.model_fields.items():  # type: ignore[attr-defined]
        avro_type = _type(info.annotation, info, namespace, seen)
        field: dict[str, Any] = {"name": field_name, "type": avro_type}
        if not info.is_required():
            default = info.default
            if isinstance(default, enum.Enum):
                default = default.value
            if default is None or isinstance(default, str | int | float | bool | list | dict):
                field["type"] = _default_first(avro_type, default)
                field["default"] = default
        if info.description:
            field["doc"] = info.description
        fields.append(field)
    out: dict[str, Any] = {"type": "record", "name": name, "fields": fields}
    if namespace:
        out["namespace"] = namespace
    if model.__doc__:
        out["doc"] = model.__doc__.strip().splitlines()[0]
    return out


def _default_first(avro_type: Any, default: Any) -> Any:
    """Avro: a union's default must match its first branch."""
    if not isinstance(avro_type, list) or default is not None or avro_type[0] == "null":
        return avro_type
    return ["null", *[t for t in avro_type if t != "null"]]


def _type(tp: Any, info: Any, namespace: str | None, seen: set[str]) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _type(args[0], info, namespace, seen)
    if origin in (typing.Union, types.UnionType):
        branches = [_type(a, info, namespace, seen) for a in args if a is not type(None)]
        if type(None) in args:
            return ["null", *branches]
        return branches if len(branches) > 1 else branches[0]
    if origin in (list, set, tuple, frozenset):
        return {"type": "array", "items": _type(args[0] if args else str, info, namespace, seen)}
    if origin is dict:
        return {"type": "map", "values": _type(args[1] if args else str, info, namespace, seen)}
    if tp in _SIMPLE:
        return _SIMPLE[tp]
    if tp is decimal.Decimal:
        precision, scale = 38, 9
        for meta in getattr(info, "metadata", []):
            precision = getattr(meta, "max_digits", None) or precision
            scale = getattr(meta, "decimal_places", None) or scale
        return {"type": "bytes", "logicalType": "decimal", "precision": precision,
                "scale": scale}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "enum", "name": tp.__name__, "symbols": [str(m.value) for m in tp]}
    if isinstance(tp, type) and hasattr(tp, "model_fields"):
        return _record(tp, namespace, seen)
    raise TypeError(f"no Avro type for {tp!r} (field {getattr(info, 'title', '')})")
