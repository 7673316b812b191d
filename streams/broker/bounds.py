"""Length sanity check for request bodies, run before kio decodes them.

kio's native reader reserves memory for an array (compact or legacy) from its count before
reading any element, so a single frame claiming billions of elements aborts the whole process
with an out-of-memory error (found by tests/integration/test_bad_input.py and tests/fuzz). This
walker follows the same
schema, reads only lengths and counts, and rejects any count or length larger than the bytes that
are left. It allocates nothing per element and never decodes values.
"""

from __future__ import annotations

import functools
import struct
import types
import typing
from dataclasses import fields
from typing import Any

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
    "datetime_i64": 8, "uuid": 16,
}


class BoundsError(ValueError):
    """The body claims more data than the frame holds."""


# A field step: (kafka type or None for a struct, is_array, nested plan or None, optional struct)
Step = tuple[str | None, bool, Any, bool]


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], len(args) != len(typing.get_args(hint))
    return hint, False


@functools.cache
def plan(entity_type: type) -> tuple[bool, tuple[Step, ...]]:
    """(flexible, steps) for an entity type; tagged fields live in the tag buffer, not here."""
    flexible = bool(getattr(entity_type, "__flexible__", False))
    hints = typing.get_type_hints(entity_type)
    steps: list[Step] = []
    for f in fields(entity_type):
        if "tag" in f.metadata:
            continue
        hint, optional = _unwrap_optional(hints[f.name])
        is_array = typing.get_origin(hint) is tuple
        if is_array:
            hint, _ = _unwrap_optional(typing.get_args(hint)[0])
        if hasattr(hint, "__dataclass_fields__"):
            steps.append((None, is_array, hint, optional and not is_array))
        else:
            steps.append((f.metadata.get("kafka_type"), is_array, None, False))
    return flexible, tuple(steps)


def check(entity_type: type, buf: bytes | memoryview, pos: int) -> int:
    """Walk a body of ``entity_type`` from ``pos``; returns the end position.

    Raises BoundsError when a length or count exceeds what is left in ``buf``.
    """
    return _entity(entity_type, buf, pos, len(buf))


def read_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint (flexible-version lengths and tags) that must end before ``end``."""
    result = shift = 0
    while True:
        if pos >= end:
            raise BoundsError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise BoundsError("varint too long")


def _length(buf: bytes | memoryview, pos: int, end: int, flexible: bool, wide: bool
            ) -> tuple[int, int]:
    """A string/bytes/array length (-1 for null) in the compact or legacy encoding."""
    if flexible:
        n, pos = read_uvarint(buf, pos, end)
        length = n - 1
    else:
        size = 4 if wide else 2
        if pos + size > end:
            raise BoundsError("truncated length")
        length = (_I32 if wide else _I16).unpack_from(buf, pos)[0]
        pos += size
    if length > end - pos:
        raise BoundsError(f"length {length} exceeds the {end - pos} bytes left")
    return length, pos


def _entity(entity_type: type, buf: bytes | memoryview, pos: int, end: int) -> int:
    flexible, steps = plan(entity_type)
    for kafka_type, is_array, nested, optional in steps:
        count = 1
        if is_array:
            count, pos = _length(buf, pos, end, flexible, True)
            if count < 0:
                continue
        for _ in range(count):
            if nested is not None:
                if optional:
                    if pos >= end:
                        raise BoundsError("truncated struct marker")
                    marker = buf[pos]
                    pos += 1
                    if marker == 0xFF:
                        continue
                pos = _entity(nested, buf, pos, end)
            else:
                pos = _primitive(kafka_type, buf, pos, end, flexible)
    if flexible:
        tags, pos = read_uvarint(buf, pos, end)
        if tags > end - pos:
            raise BoundsError(f"{tags} tagged fields in {end - pos} bytes")
        for _ in range(tags):
            _tag, pos = read_uvarint(buf, pos, end)
            size, pos = read_uvarint(buf, pos, end)
            if size > end - pos:
                raise BoundsError("truncated tagged field")
            pos += size
    return pos


def _primitive(kafka_type: str | None, buf: bytes | memoryview, pos: int, end: int,
               flexible: bool) -> int:
    fixed = _FIXED.get(kafka_type or "")
    if fixed is not None:
        if pos + fixed > end:
            raise BoundsError(f"truncated {kafka_type}")
        return pos + fixed
    if kafka_type == "string":
        length, pos = _length(buf, pos, end, flexible, False)
    elif kafka_type in ("bytes", "records"):
        length, pos = _length(buf, pos, end, flexible, True)
    else:
        raise BoundsError(f"unknown field type {kafka_type!r}")
    return pos + max(length, 0)
