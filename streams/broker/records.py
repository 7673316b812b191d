"""Record batch v2 (magic 2): header parsing, validation and building.

The broker never decodes the records inside a produced batch: everything it needs (offset delta,
timestamps, producer id/epoch/sequence, flags, count) lives in the 61-byte header. It only builds
batches itself for internal topics and transaction markers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from .compression import compress, decompress

HEADER_SIZE = 61
# baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 | attributes i16
# | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16
# | baseSequence i32 | recordCount i32
_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET = struct.Struct(">q")
_CRC_START = 21  # attributes onwards are covered by the CRC
LOG_OVERHEAD = 12  # baseOffset + batchLength

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_LOG_APPEND = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class InvalidBatch(ValueError):
    """A produced batch failed validation; maps to CORRUPT_MESSAGE / INVALID_RECORD."""


@dataclass(slots=True, frozen=True)
class BatchHeader:
    base_offset: int
    length: int  # bytes after the batchLength field
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def parse_header(buf: bytes | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise InvalidBatch("batch shorter than its 61-byte header")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: bytes | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each complete batch; stops at a partial trailing batch."""
    pos = 0
    end = len(buf)
    while end - pos >= HEADER_SIZE:
        header = parse_header(buf, pos)
        if header.length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > end:
            return
        yield pos, header
        pos += header.size


def validate_produced(buf: bytes) -> list[tuple[int, BatchHeader]]:
    """Check each batch in a produce request: framing, magic 2, CRC32C, record count.

    Returns (position, header) per batch. Raises InvalidBatch on the first problem.
    """
    if not buf:
        raise InvalidBatch("empty record set")
    view = memoryview(buf)
    batches: list[tuple[int, BatchHeader]] = []
    pos = 0
    while pos < len(buf):
        header = parse_header(view, pos)
        if header.magic != 2:
            raise InvalidBatch(f"unsupported record batch magic {header.magic} (need 2)")
        if header.length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > len(buf):
            raise InvalidBatch("batch length does not match the bytes sent")
        if header.last_offset_delta < 0 or header.record_count <= 0:
            raise InvalidBatch("batch has no records")
        if header.last_offset_delta + 1 < header.record_count:
            raise InvalidBatch("lastOffsetDelta smaller than the record count")
        actual = crc32c.crc32c(view[pos + _CRC_START : pos + header.size])
        if actual != header.crc:
            raise InvalidBatch(f"CRC32C mismatch (stored {header.crc:#x}, computed {actual:#x})")
        batches.append((pos, header))
        pos += header.size
    return batches


def patch_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Set the base offset in place; the CRC does not cover it."""
    _OFFSET.pack_into(buf, pos, base_offset)


def set_log_append_time(buf: bytearray, pos: int, header: BatchHeader, now_ms: int) -> None:
    """Rewrite a batch for message.timestamp.type=LogAppendTime and recompute its CRC."""
    attrs = header.attributes | ATTR_TIMESTAMP_LOG_APPEND
    struct.pack_into(">h", buf, pos + 21, attrs)
    struct.pack_into(">q", buf, pos + 27, now_ms)  # baseTimestamp
    struct.pack_into(">q", buf, pos + 35, now_ms)  # maxTimestamp
    crc = crc32c.crc32c(memoryview(buf)[pos + _CRC_START : pos + header.size])
    struct.pack_into(">I", buf, pos + 17, crc)


# ---------------------------------------------------------------------------------------------
# building batches (internal topics, control markers, tests)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def write_varint(out: bytearray, n: int) -> None:
    """Signed zigzag varint as used inside records."""
    v = _zigzag(n)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


@dataclass(slots=True)
class Record:
    key: bytes | None
    value: bytes | None
    timestamp: int = 0
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset: int = 0


def _encode_record(offset_delta: int, timestamp_delta: int, record: Record) -> bytes:
    body = bytearray(b"\0")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    for part in (record.key, record.value):
        if part is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(part))
            body += part
    write_varint(body, len(record.headers))
    for hkey, hvalue in record.headers:
        encoded = hkey.encode()
        write_varint(body, len(encoded))
        body += encoded
        if hvalue is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(hvalue))
            body += hvalue
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


def build_batch(
    records: list[Record],
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    preserve_offsets: bool = False,
) -> bytes:
    """Encode a magic-2 batch, compressed with the codec in ``attributes``' low bits.

    With ``preserve_offsets`` the records keep their own offsets (compaction rewrites batches
    with gaps); otherwise they are numbered from ``base_offset``.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    if preserve_offsets:
        base_offset = records[0].offset
        deltas = [r.offset - base_offset for r in records]
    else:
        deltas = list(range(len(records)))
    base_ts = records[0].timestamp
    max_ts = max(r.timestamp for r in records)
    body = b"".join(
        _encode_record(d, r.timestamp - base_ts, r) for d, r in zip(deltas, records, strict=True)
    )
    if attributes & ATTR_COMPRESSION_MASK:
        body = compress(attributes & ATTR_COMPRESSION_MASK, body)
    tail = struct.pack(
        ">hiqqqhii",
        attributes,
        deltas[-1],
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    ) + body
    crc = crc32c.crc32c(tail)
    length = 4 + 1 + 4 + len(tail)  # leaderEpoch + magic + crc + rest
    return struct.pack(">qiibI", base_offset, length, 0, 2, crc) + tail


def build_control_batch(
    producer_id: int, producer_epoch: int, commit: bool, timestamp: int, coordinator_epoch: int = 0
) -> bytes:
    """A COMMIT or ABORT transaction marker."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [Record(key, value, timestamp)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
    )


def decode_records(batch: bytes | memoryview) -> list[Record]:
    """Decode every record of a batch, decompressing it if needed (never on the hot path)."""
    header = parse_header(batch)
    body = bytes(batch[HEADER_SIZE : header.size])
    if header.compression:
        body = decompress(header.compression, body)
    pos = 0
    out: list[Record] = []
    for _ in range(header.record_count):
        _length, pos = read_varint(body, pos)
        pos += 1  # attributes
        ts_delta, pos = read_varint(body, pos)
        off_delta, pos = read_varint(body, pos)
        parts: list[bytes | None] = []
        for _part in range(2):
            size, pos = read_varint(body, pos)
            if size < 0:
                parts.append(None)
            else:
                parts.append(body[pos : pos + size])
                pos += size
        nheaders, pos = read_varint(body, pos)
        headers = []
        for _h in range(nheaders):
            size, pos = read_varint(body, pos)
            hkey = body[pos : pos + size].decode()
            pos += size
            size, pos = read_varint(body, pos)
            hval = None if size < 0 else body[pos : pos + size]
            if size > 0:
                pos += size
            headers.append((hkey, hval))
        timestamp = header.max_timestamp if header.attributes & ATTR_TIMESTAMP_LOG_APPEND else (
            header.base_timestamp + ts_delta
        )
        out.append(Record(parts[0], parts[1], timestamp, tuple(headers),
                          header.base_offset + off_delta))
    return out
