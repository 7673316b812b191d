"""Record batch (magic 2) surgery with the CRC32C recomputed, and decompression bombs."""

from __future__ import annotations

import functools
import random
import struct
import zlib

import crc32c
import lz4.frame
import zstandard

# baseOffset i64 | batchLength i32 | leaderEpoch i32 | magic i8 | crc u32 | attributes i16
# | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64
# | producerEpoch i16 | baseSequence i32 | recordCount i32
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = 61
CRC_POS, CRC_START = 17, 21
ATTRIBUTES, LAST_DELTA, PRODUCER_ID, RECORD_COUNT = 21, 23, 43, 57
TRANSACTIONAL, CONTROL = 0x10, 0x20
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
MiB = 1 << 20


def split(records: bytes) -> list[bytes]:
    """The complete batches in a record set (a partial trailing batch is dropped)."""
    out, pos = [], 0
    while len(records) - pos >= HEADER_SIZE:
        (length,) = struct.unpack_from(">i", records, pos + 8)
        if length < HEADER_SIZE - 12 or pos + 12 + length > len(records):
            break
        out.append(records[pos : pos + 12 + length])
        pos += 12 + length
    return out


def reseal(batch: bytes | bytearray) -> bytes:
    """Fix batchLength to the bytes present and recompute the CRC32C over attributes onwards."""
    buf = bytearray(batch)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, CRC_POS, crc32c.crc32c(bytes(buf[CRC_START:])))
    return bytes(buf)


def patch(batch: bytes, pos: int, fmt: str, value: int) -> bytes:
    """Overwrite one header field and reseal."""
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, pos, value)
    return reseal(buf)


def attributes(batch: bytes) -> int:
    return struct.unpack_from(">h", batch, ATTRIBUTES)[0]


def with_attributes(batch: bytes, value: int) -> bytes:
    return patch(batch, ATTRIBUTES, ">h", value)


def with_body(batch: bytes, body: bytes, codec: int | None = None) -> bytes:
    """The same header over a new records body (compressed with ``codec`` bits if given)."""
    head = batch[:HEADER_SIZE]
    if codec is not None:
        head = bytes(head[:ATTRIBUTES]) + struct.pack(
            ">h", (attributes(batch) & ~0x07) | codec) + head[ATTRIBUTES + 2 :]
    return reseal(head + body)


def build(body: bytes, *, attrs: int = 0, count: int = 1, producer_id: int = -1,
          epoch: int = -1, sequence: int = -1, timestamp: int = 0) -> bytes:
    """A batch from scratch around ``body`` (records, possibly compressed per ``attrs``)."""
    head = HEADER.pack(0, 0, 0, 2, 0, attrs, count - 1, timestamp, timestamp, producer_id,
                       epoch, sequence, count)
    return reseal(head + body)


def varint(n: int) -> bytes:
    """A zigzag varint as used inside records."""
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record(key: bytes | None, value: bytes | None, offset_delta: int = 0) -> bytes:
    """One uncompressed record (no headers)."""
    body = b"\0" + varint(0) + varint(offset_delta)
    for part in (key, value):
        body += varint(-1) if part is None else varint(len(part)) + part
    body += varint(0)
    return varint(len(body)) + body


def control_record(commit: bool) -> bytes:
    """The key/value of a COMMIT or ABORT marker, as a transaction coordinator writes it."""
    return record(struct.pack(">hh", 0, int(commit)), struct.pack(">hi", 0, 0))


def garbage_records(rng: random.Random, batch: bytes) -> tuple[str, bytes]:
    """Random bytes where the records go, records with lying varints, or a few bytes changed
    (which may still parse: only the first two are labelled garbage); the CRC stays valid."""
    body = bytearray(batch[HEADER_SIZE:])
    kind = rng.randrange(3)
    if kind == 0 or not body:
        label, body = "garbage records", bytearray(rng.randbytes(rng.randrange(1, 200)))
    elif kind == 1:
        label = "record bytes changed"
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    else:  # a record whose key length claims far more than is there
        label = "garbage records"
        body = bytearray(varint(40) + b"\0" + varint(0) + varint(0) + varint(2**31 - 1) + b"x")
    return f"{label} (valid CRC)", with_body(batch, bytes(body))


# -- decompression bombs ----------------------------------------------------------------------


@functools.cache
def bomb_body(codec: int) -> bytes:
    """A small payload expanding to hundreds of MB of zeros (cached: built once per process)."""
    zeros = bytes(MiB)
    if codec == ZSTD:
        stream = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join(stream.compress(zeros) for _ in range(768)) + stream.flush()
    if codec == GZIP:
        stream = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(stream.compress(zeros) for _ in range(400)) + stream.flush()
    if codec == LZ4:
        stream = lz4.frame.LZ4FrameCompressor(compression_level=9)
        return stream.begin() + b"".join(stream.compress(zeros) for _ in range(128)) + \
            stream.flush()
    raise ValueError(f"no bomb for codec {codec}")


def lying_size_body(codec: int) -> bytes:
    """A tiny payload whose header declares a gigantic decompressed size."""
    if codec == ZSTD:  # frame header: single segment, 8-byte content size of 2**40
        frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 64)
        descriptor = 0x20 | 0xC0  # single segment, 8-byte frame content size
        return frame[:4] + bytes([descriptor]) + struct.pack("<Q", 1 << 40) + frame[6:]
    if codec == SNAPPY:  # raw snappy: a uvarint length, then literals
        return bytes([0xFE, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00x"
    if codec == LZ4:  # frame descriptor with a content size of 2**40 and a bad header checksum
        return b"\x04\x22\x4d\x18" + bytes([0x68, 0x40]) + struct.pack("<Q", 1 << 40) + \
            b"\x00" + b"\x00\x00\x00\x00"
    if codec == GZIP:  # a gzip trailer claiming 4 GiB of output around a tiny stream
        data = zlib.compressobj(9, zlib.DEFLATED, 31)
        out = data.compress(b"x" * 64) + data.flush()
        return out[:-4] + struct.pack("<I", 0xFFFFFFFF)
    raise ValueError(f"no lying size for codec {codec}")
