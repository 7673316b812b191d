"""Kafka request framing for the fuzzer: headers, kio bodies, and where the length fields are."""

from __future__ import annotations

import functools
import io
import struct
import types
import typing
from dataclasses import dataclass, fields
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer

_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
    "datetime_i64": 8, "uuid": 16,
}


def framed(payload: bytes) -> bytes:
    """A payload with its 4-byte size prefix."""
    return struct.pack(">i", len(payload)) + payload


@functools.cache
def schema(api_key: int, api_version: int) -> type | None:
    try:
        return load_request_schema(api_key, api_version)
    except Exception:
        return None


@dataclass(frozen=True, slots=True)
class Header:
    api_key: int
    api_version: int
    correlation_id: int
    body_pos: int  # where the body starts (after the tag buffer of a flexible header)
    flexible: bool


def parse_header(payload: bytes) -> Header:
    api_key, version, corr, client_len = struct.unpack_from(">hhih", payload)
    pos = 10 + max(client_len, 0)
    entity = schema(api_key, version)
    flexible = bool(entity is not None and entity.__flexible__)
    if flexible:
        pos += 1  # the clients we record send an empty header tag buffer
    return Header(api_key, version, corr, pos, flexible)


def decode(payload: bytes) -> tuple[Header, Any]:
    """The header and the kio request entity of a well-formed recorded frame."""
    header = parse_header(payload)
    entity_type = schema(header.api_key, header.api_version)
    assert entity_type is not None
    entity, _ = entity_reader(entity_type)(payload, header.body_pos)
    return header, entity


def encode(payload: bytes, header: Header, entity: Any) -> bytes:
    """``payload``'s header bytes followed by ``entity`` encoded with the header's schema."""
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return payload[: header.body_pos] + out.getvalue()


# -- length fields ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LengthField:
    """A length in a frame: ``kind`` is 'i16', 'i32', 'uvarint' (value + 1) or 'count'."""

    pos: int
    size: int  # bytes the encoded length occupies
    kind: str
    value: int  # the decoded length (-1 for null)
    what: str  # 'string', 'bytes', 'records', 'array', 'tags'


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def uvarint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def set_length(payload: bytes, field: LengthField, value: int) -> bytes:
    """Rewrite one length field; a compact (uvarint) length may change the frame size."""
    if field.kind in ("uvarint", "count"):
        encoded = uvarint(value + (field.kind == "uvarint"))
    elif field.kind == "i16":
        encoded = struct.pack(">h", max(-(2**15), min(2**15 - 1, value)))
    else:
        encoded = struct.pack(">i", max(-(2**31), min(2**31 - 1, value)))
    return payload[: field.pos] + encoded + payload[field.pos + field.size :]


def length_fields(payload: bytes) -> list[LengthField]:
    """Every length and count in a well-formed frame, the header's client id included."""
    header = parse_header(payload)
    found = [LengthField(8, 2, "i16", struct.unpack_from(">h", payload, 8)[0], "string")]
    entity_type = schema(header.api_key, header.api_version)
    if entity_type is not None:
        _walk(entity_type, payload, header.body_pos, found)
    return found


def _unwrap(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return next(a for a in typing.get_args(hint) if a is not type(None))
    return hint


def _length(buf: bytes, pos: int, flexible: bool, wide: bool, what: str,
            found: list[LengthField]) -> tuple[int, int]:
    if flexible:
        n, end = read_uvarint(buf, pos)
        found.append(LengthField(pos, end - pos, "uvarint", n - 1, what))
        return n - 1, end
    size = 4 if wide else 2
    value = struct.unpack_from(">i" if wide else ">h", buf, pos)[0]
    found.append(LengthField(pos, size, "i32" if wide else "i16", value, what))
    return value, pos + size


def _walk(entity_type: type, buf: bytes, pos: int, found: list[LengthField]) -> int:
    flexible = bool(entity_type.__flexible__)
    hints = typing.get_type_hints(entity_type)
    for f in fields(entity_type):
        if "tag" in f.metadata:
            continue
        hint = _unwrap(hints[f.name])
        optional = hint is not hints[f.name]
        count = 1
        if typing.get_origin(hint) is tuple:
            optional = False
            count, pos = _length(buf, pos, flexible, True, "array", found)
            hint = _unwrap(typing.get_args(hint)[0])
        for _ in range(max(count, 0)):
            if hasattr(hint, "__dataclass_fields__"):
                if optional:
                    pos += 1
                    if buf[pos - 1] == 0xFF:
                        continue
                pos = _walk(hint, buf, pos, found)
                continue
            kafka_type = f.metadata.get("kafka_type")
            if kafka_type in _FIXED:
                pos += _FIXED[kafka_type]
            else:
                wide = kafka_type != "string"
                length, pos = _length(buf, pos, flexible, wide, kafka_type or "?", found)
                pos += max(length, 0)
    if flexible:
        tags, end = read_uvarint(buf, pos)
        found.append(LengthField(pos, end - pos, "count", tags, "tags"))
        pos = end
        for _ in range(tags):
            _tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            pos += size
    return pos


# -- responses --------------------------------------------------------------------------------


def split_responses(data: bytes) -> list[bytes]:
    """Complete response payloads (without size prefixes) in what the broker sent."""
    out, pos = [], 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 4 or len(data) - pos - 4 < size:
            break
        out.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return out


def produce_error_codes(response: bytes, api_version: int) -> list[int]:
    """Per-partition error codes of a Produce response (empty if it cannot be read)."""
    from kio.index import load_response_schema

    try:
        entity_type = load_response_schema(0, api_version)
        pos = 4 + (1 if entity_type.__flexible__ else 0)
        entity, _ = entity_reader(entity_type)(response, pos)
    except Exception:  # noqa: BLE001 - an unreadable answer just means "not accepted"
        return []
    return [int(p.error_code.value) for t in entity.responses for p in t.partition_responses]
