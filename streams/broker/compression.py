"""Record-batch codecs, for the broker paths that must look inside a batch.

Produced batches are validated like Kafka's LogValidator does, which means decompressing them
(``decompress_bounded``), and are then stored compressed as they came; ListOffsets-by-timestamp
and compaction decompress too. gzip, snappy, lz4 and zstd come from cramjam. Snappy is accepted
raw or in the xerial framing the Java client writes.
"""

from __future__ import annotations

import gzip
import mmap
import threading

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
# What cramjam's *_into functions say when the output buffer is full (Rust's WriteZero).
_BUFFER_FULL = "failed to write whole buffer"
# Pages of the reusable output buffer above this are handed back to the OS after each use.
_KEEP_RESIDENT = 4 << 20


class CodecError(ValueError):
    """A batch whose compressed payload cannot be decoded."""


class TooLarge(CodecError):
    """A payload that decompresses to more than the caller's limit (a decompression bomb)."""


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


# ---------------------------------------------------------------------------------------------
# bounded decompression (produce validation)

_local = threading.local()


def _buffer(limit: int) -> mmap.mmap:
    """This thread's output buffer of ``limit + 1`` bytes: an anonymous mapping, so only the
    pages a payload really fills become resident, and it is reused (no page faults per batch)."""
    buf: mmap.mmap | None = getattr(_local, "buffer", None)
    if buf is None or len(buf) != limit + 1:
        if buf is not None:
            buf.close()
        buf = _local.buffer = mmap.mmap(-1, limit + 1)
    return buf


def decompress_bounded(codec: int, data: bytes | memoryview, limit: int) -> bytes:
    """Decompress at most ``limit`` bytes; beyond that raise TooLarge without going further.

    Kafka's own decompression is unbounded; here the output goes into a fixed buffer, so a
    32 KB payload holding 1 GiB costs ``limit`` bytes of memory and a few milliseconds. cramjam
    releases the GIL while it decompresses, so callers run this in a worker thread.
    """
    if codec == NONE:
        if len(data) > limit:
            raise TooLarge(f"{len(data)} bytes exceed the limit of {limit}")
        return bytes(data)
    if codec == SNAPPY:
        return _snappy_bounded(bytes(data), limit)
    into = {GZIP: cramjam.gzip.decompress_into, LZ4: cramjam.lz4.decompress_into,
            ZSTD: cramjam.zstd.decompress_into}.get(codec)
    if into is None:
        raise CodecError(f"unknown compression codec {codec}")
    out = _buffer(limit)
    try:
        size = into(bytes(data), out)
    except Exception as exc:
        if _BUFFER_FULL in str(exc):
            raise TooLarge(
                f"codec {codec} payload decompresses to more than {limit} bytes"
            ) from None
        raise CodecError(f"cannot decompress codec {codec} payload: {exc}") from None
    finally:
        if len(out) > _KEEP_RESIDENT:
            out.madvise(mmap.MADV_DONTNEED, _KEEP_RESIDENT)
    if size > limit:
        raise TooLarge(f"codec {codec} payload decompresses to more than {limit} bytes")
    return out[:size]


def _snappy_bounded(data: bytes, limit: int) -> bytes:
    """Snappy blocks state their uncompressed length up front: check it before decoding."""
    try:
        if not data.startswith(_XERIAL_MAGIC):
            if cramjam.snappy.decompress_raw_len(data) > limit:
                raise TooLarge(f"snappy payload decompresses to more than {limit} bytes")
            return bytes(cramjam.snappy.decompress_raw(data))
        pos, total, parts = 16, 0, []
        while pos + 4 <= len(data):
            size = int.from_bytes(data[pos : pos + 4], "big")
            block = data[pos + 4 : pos + 4 + size]
            total += cramjam.snappy.decompress_raw_len(block)
            if total > limit:
                raise TooLarge(f"snappy payload decompresses to more than {limit} bytes")
            parts.append(bytes(cramjam.snappy.decompress_raw(block)))
            pos += 4 + size
        return b"".join(parts)
    except TooLarge:
        raise
    except Exception as exc:
        raise CodecError(f"cannot decompress snappy payload: {exc}") from None
