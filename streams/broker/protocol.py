"""Kafka wire framing on top of kio's typed schemas.

Handlers work with kio request entities and answer with plain nested dicts; this module turns a
dict into the kio response entity of the version the client asked for. That keeps every handler
version-agnostic: fields a version lacks are dropped, fields it needs but the handler did not set
get Kafka's zero value.
"""

from __future__ import annotations

import datetime
import functools
import io
import struct
import types
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from . import bounds, nullcheck

_HEADER = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

API_VERSIONS_KEY = 18


class ProtocolError(Exception):
    """A frame that cannot be understood; the connection is closed after logging it."""


@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool
    client_host: str = ""
    session: Any = None  # the connection's security Session (principal, listener)


def parse_header(frame: bytes | memoryview) -> tuple[RequestContext, int]:
    """Read the request header; returns the context and the offset where the body starts.

    The header version depends on whether the *request* version is flexible, which we learn from
    kio's schema. An unknown key or version still yields a context (so the caller can answer
    UNSUPPORTED_VERSION with the right correlation id), with ``flexible=False``.
    """
    if len(frame) < 8:
        raise ProtocolError(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEADER.unpack_from(frame, 0)
    pos = 8
    if len(frame) < pos + 2:
        raise ProtocolError("truncated client id")
    (client_len,) = _I16.unpack_from(frame, pos)
    pos += 2
    client_id: str | None = None
    if client_len >= 0:
        if len(frame) < pos + client_len:
            raise ProtocolError("truncated client id")
        client_id = bytes(frame[pos : pos + client_len]).decode("utf-8", "replace")
        pos += client_len
    flexible = request_is_flexible(api_key, api_version)
    ctx = RequestContext(api_key, api_version, correlation_id, client_id, flexible)
    if flexible:
        pos = _skip_tagged_fields(frame, pos)
    return ctx, pos


def _read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    try:
        return bounds.read_uvarint(buf, pos, len(buf))
    except bounds.BoundsError as exc:
        raise ProtocolError(str(exc)) from None


def _skip_tagged_fields(buf: bytes | memoryview, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ProtocolError("truncated tagged field")
    return pos


@functools.cache
def request_is_flexible(api_key: int, api_version: int) -> bool:
    try:
        return bool(load_request_schema(api_key, api_version).__flexible__)
    except Exception:
        return False


@functools.cache
def _request_type(api_key: int, api_version: int) -> type:
    return load_request_schema(api_key, api_version)


@functools.cache
def _request_reader(api_key: int, api_version: int) -> Any:
    return entity_reader(load_request_schema(api_key, api_version))


@functools.cache
def _response_type(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


@functools.cache
def _response_writer(api_key: int, api_version: int) -> Any:
    return entity_writer(_response_type(api_key, api_version))


def decode_body(ctx: RequestContext, frame: bytes | memoryview, pos: int) -> Any:
    """Decode the request body with kio; any failure is a ProtocolError."""
    try:
        # kio's native reader reserves memory for an array from its count before reading it,
        # compact or legacy (a huge count aborts the process): check every count first.
        bounds.check(_request_type(ctx.api_key, ctx.api_version), frame, pos)
        entity, _size = _request_reader(ctx.api_key, ctx.api_version)(frame, pos)
        # kio reads a null array (compact 0 or legacy -1) as None even where the schema forbids it.
        nullcheck.check(entity)
    except Exception as exc:  # kio raises assorted errors on bad bytes
        raise ProtocolError(
            f"cannot decode api_key={ctx.api_key} v{ctx.api_version}: {exc}"
        ) from exc
    return entity


def encode_response(ctx: RequestContext, body: dict[str, Any]) -> bytes:
    """Frame a response: size, header (v0, or v1 with a tag buffer when flexible), body."""
    entity = build_entity(_response_type(ctx.api_key, ctx.api_version), body)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    out.write(_I32.pack(ctx.correlation_id))
    # ApiVersions answers with header v0 even for flexible versions (KIP-511).
    if ctx.flexible and ctx.api_key != API_VERSIONS_KEY:
        out.write(b"\0")
    _response_writer(ctx.api_key, ctx.api_version)(out, entity)
    size = out.tell() - 4
    out.seek(0)
    out.write(_I32.pack(size))
    return out.getvalue()  # one copy; bytes(getbuffer()) would add a second


def encode_api_versions_error(correlation_id: int, supported: dict[int, tuple[int, int]]) -> bytes:
    """UNSUPPORTED_VERSION in the v0 body layout, which every client parses to downgrade."""
    body = io.BytesIO()
    body.write(_I32.pack(correlation_id))
    body.write(_I16.pack(ErrorCode.unsupported_version.value))
    body.write(_I32.pack(len(supported)))
    for key in sorted(supported):
        lo, hi = supported[key]
        body.write(struct.pack(">hhh", key, lo, hi))
    payload = body.getvalue()
    return _I32.pack(len(payload)) + payload


# ---------------------------------------------------------------------------------------------
# dict -> kio entity


_ZERO_BY_KAFKA_TYPE: dict[str, Any] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": None,
    "error_code": ErrorCode.none,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "uuid": None,
    "datetime_i64": None,
}


@functools.cache
def _field_plan(entity_type: type) -> tuple[tuple[str, str | None, Any, Any, bool], ...]:
    """Per field: name, kafka type, nested entity type (or None), default, nullable."""
    hints = typing.get_type_hints(entity_type)
    plan = []
    for f in fields(entity_type):
        hint = hints[f.name]
        nested, nullable = _nested_entity(hint)
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = MISSING
        plan.append((f.name, f.metadata.get("kafka_type"), nested, default, nullable))
    return tuple(plan)


def _nested_entity(hint: Any) -> tuple[Any, bool]:
    """Return (entity type of a nested struct or tuple-of-struct, nullable)."""
    origin = typing.get_origin(hint)
    nullable = False
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) != len(typing.get_args(hint))
        hint = args[0]
        origin = typing.get_origin(hint)
    if origin is tuple:
        inner = typing.get_args(hint)[0]
        if hasattr(inner, "__dataclass_fields__"):
            return ("tuple", inner), nullable
        return None, nullable
    if hasattr(hint, "__dataclass_fields__"):
        return ("one", hint), nullable
    return None, nullable


def build_entity(entity_type: type, values: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for name, kafka_type, nested, default, nullable in _field_plan(entity_type):
        if name in values:
            value = values[name]
        elif default is not MISSING:
            continue
        elif nested is not None:
            value = None if (nullable and nested[0] == "one") else ([] if nested[0] == "tuple" else {})
        elif nullable:
            value = None
        else:
            value = _ZERO_BY_KAFKA_TYPE.get(kafka_type or "", 0)
        kwargs[name] = _convert(value, kafka_type, nested)
    return entity_type(**kwargs)


def _convert(value: Any, kafka_type: str | None, nested: Any) -> Any:
    if value is None:
        return None
    if nested is not None:
        kind, inner = nested
        if kind == "tuple":
            return tuple(v if not isinstance(v, dict) else build_entity(inner, v) for v in value)
        return build_entity(inner, value) if isinstance(value, dict) else value
    if kafka_type == "error_code":
        return value if isinstance(value, ErrorCode) else ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64" and isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    if isinstance(value, tuple | list) and not isinstance(value, bytes):
        return tuple(value)
    return value


def ms(value: datetime.timedelta | int | None) -> int:
    """Milliseconds from a kio timedelta field (or a plain int)."""
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)
