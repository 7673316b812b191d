"""FetchResponse v4-v12 written by hand, so that record sets can stay in their segment files.

kio needs every record set as bytes in memory; this encoder writes the same bytes (a unit test
compares it with kio for every version) but leaves a ``FileSlice`` where a partition's records
are, for the connection to send with sendfile(2). Layout (FetchResponse.json): v5 adds
log_start_offset, v7 the top-level error_code and session_id (KIP-227), v11
preferred_read_replica (KIP-392), v12 is flexible (KIP-482: compact lengths, tag buffers).
"""

from __future__ import annotations

import struct
from typing import Any

from ..storage.slices import FileSlice, Frame

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, lso
_I64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")  # producer_id, first_offset


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_fetch(version: int, correlation_id: int, body: dict[str, Any]) -> Frame:
    """The framed response (size, header, body) for a handler's dict; a partition's
    ``records`` may be bytes, None or a FileSlice."""
    flexible = version >= 12
    parts: list[bytes | bytearray | FileSlice] = []
    out = bytearray(b"\0\0\0\0")  # size, patched below
    out += _I32.pack(correlation_id)
    if flexible:
        out += b"\0"  # response header v1: tag buffer
    out += _I32.pack(body.get("throttle_time", 0))
    if version >= 7:
        out += _I16.pack(body.get("error_code", 0))
        out += _I32.pack(body.get("session_id", 0))
    topics = body["responses"]
    _array_len(out, len(topics), flexible)
    for topic in topics:
        name = topic["topic"].encode()
        if flexible:
            out += _uvarint(len(name) + 1)
        else:
            out += _I16.pack(len(name))
        out += name
        partitions = topic["partitions"]
        _array_len(out, len(partitions), flexible)
        for p in partitions:
            out += _PARTITION.pack(p["partition_index"], p["error_code"], p["high_watermark"],
                                   p.get("last_stable_offset", -1))
            if version >= 5:
                out += _I64.pack(p.get("log_start_offset", -1))
            aborted = p.get("aborted_transactions")
            if aborted is None:
                out += b"\0" if flexible else b"\xff\xff\xff\xff"
            else:
                _array_len(out, len(aborted), flexible)
                for txn in aborted:
                    out += _ABORTED.pack(txn["producer_id"], txn["first_offset"])
                    if flexible:
                        out += b"\0"
            if version >= 11:
                out += _I32.pack(p.get("preferred_read_replica", -1))
            records = p.get("records")
            if records is None:
                out += b"\0" if flexible else b"\xff\xff\xff\xff"
            else:
                size = records.size if type(records) is FileSlice else len(records)
                out += _uvarint(size + 1) if flexible else _I32.pack(size)
                if type(records) is FileSlice:
                    parts.append(out)
                    parts.append(records)
                    out = bytearray()
                else:
                    out += records
            if flexible:
                out += b"\0"  # partition tag buffer
        if flexible:
            out += b"\0"  # topic tag buffer
    if flexible:
        out += b"\0"  # body tag buffer
    parts.append(out)
    frame = Frame(parts)
    first = parts[0]
    assert isinstance(first, bytearray)
    _I32.pack_into(first, 0, len(frame) - 4)
    return frame


def _array_len(out: bytearray, n: int, flexible: bool) -> None:
    out += _uvarint(n + 1) if flexible else _I32.pack(n)
