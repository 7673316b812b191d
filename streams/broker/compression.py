"""Record-batch codecs, for the few broker paths that must look inside a batch.

Produced batches are stored compressed as they came; only ListOffsets-by-timestamp, compaction
and key checks on compacted topics decompress. gzip comes from the stdlib, snappy/lz4/zstd from
cramjam. Snappy is accepted raw or in the xerial framing the Java client writes.
"""

from __future__ import annotations

import gzip

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class CodecError(ValueError):
    """A batch whose compressed payload cannot be decoded."""


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            if data.startswith(_XERIAL_MAGIC):
                return _xerial_snappy(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except Exception as exc:
        raise CodecError(f"cannot decompress codec {codec} payload: {exc}") from exc
    raise CodecError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CodecError(f"unknown compression codec {codec}")


def _xerial_snappy(data: bytes) -> bytes:
    pos = 16  # magic(8) + version(4) + compatible version(4)
    out = bytearray()
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + size]))
        pos += size
    return bytes(out)
