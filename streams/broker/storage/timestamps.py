"""Exact record offsets for ListOffsets by timestamp.

The time index finds the first batch whose max timestamp reaches the target; the exact record
needs the batch's record timestamps, so this (rare, never hot) path decodes one batch,
decompressing it when needed.
"""

from __future__ import annotations

import gzip
import logging

from ..records import HEADER_SIZE, parse_header, read_varint

log = logging.getLogger(__name__)

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _decompress(codec: int, data: bytes) -> bytes | None:
    try:
        if codec == 1:
            return gzip.decompress(data)
        import cramjam

        if codec == 2:
            if data.startswith(_XERIAL_MAGIC):
                return _xerial_snappy(data, cramjam)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        if codec == 4:
            return bytes(cramjam.zstd.decompress(data))
    except Exception as exc:  # a codec we cannot read: fall back to the batch's base offset
        log.debug("cannot decompress batch (codec %d): %s", codec, exc)
    return None


def _xerial_snappy(data: bytes, cramjam) -> bytes:  # type: ignore[no-untyped-def]
    pos = 16  # magic(8) + version(4) + compatible version(4)
    out = bytearray()
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + size]))
        pos += size
    return bytes(out)


def first_record_at_or_after(batch: bytes, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record in ``batch`` with timestamp >= ``timestamp``."""
    header = parse_header(batch)
    if header.attributes & 0x08:  # LogAppendTime: every record carries maxTimestamp
        return header.base_offset, header.max_timestamp
    body: bytes | None = batch[HEADER_SIZE:]
    if header.compression:
        body = _decompress(header.compression, bytes(body))
    if body is None:
        return header.base_offset, header.max_timestamp
    pos = 0
    for _ in range(header.record_count):
        length, pos = read_varint(body, pos)
        start = pos
        pos += 1  # attributes
        ts_delta, pos = read_varint(body, pos)
        off_delta, pos = read_varint(body, pos)
        if header.base_timestamp + ts_delta >= timestamp:
            return header.base_offset + off_delta, header.base_timestamp + ts_delta
        pos = start + length
    return header.base_offset, header.max_timestamp
