"""Client batches checked before they reach the log, as Kafka's LogValidator does.

``validate_produced`` (records.py) checks framing and the CRC, which is all the broker needs for
its own batches. A client's batch must also be an ordinary data batch (no control flag: only the
transaction coordinator writes markers), its offsets must match its count, and every record must
parse to exactly its stated length (DefaultRecord.readFrom), with a key on compacted topics.

An uncompressed batch is walked once, inline: one pass over the varints of each record. A
compressed batch is decompressed into a bounded buffer first (a decompression bomb is refused
once it passes the limit), which the produce handler does in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compression import CodecError, TooLarge, decompress_bounded
from .records import HEADER_SIZE, BatchHeader

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_RECORD = 87

# Smallest record body: attributes, timestampDelta, offsetDelta, keyLength, valueLength and
# headerCount, one byte each.
_MIN_RECORD_BODY = 6
_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


@dataclass
class BatchRejected(Exception):
    """A client batch Kafka would refuse: the error code, a message, and per-record errors
    (index of the record inside its batch, message), as ProduceResponse v8+ carries them."""

    code: int
    message: str
    record_errors: list[tuple[int, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


class _VarintTooLong(ValueError):
    pass


class _BadRecord(Exception):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def check_client_batch(header: BatchHeader) -> None:
    """Header checks of LogValidator.validateBatch for AppendOrigin.CLIENT."""
    if header.is_control:
        raise BatchRejected(
            INVALID_RECORD, "Clients are not allowed to write control records"
        )
    if header.last_offset_delta + 1 != header.record_count:
        raise BatchRejected(
            INVALID_RECORD,
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of "
            f"records {header.record_count}",
        )


def check_records(
    data: bytes, pos: int, header: BatchHeader, compacted: bool, max_decompressed: int
) -> None:
    """Walk every record of the batch at ``pos``; raise BatchRejected on the first bad one.

    Compressed batches are decompressed first, at most ``max_decompressed`` bytes.
    """
    if header.compression:
        try:
            body = decompress_bounded(
                header.compression, memoryview(data)[pos + HEADER_SIZE : pos + header.size],
                max_decompressed,
            )
        except TooLarge as exc:
            raise BatchRejected(MESSAGE_TOO_LARGE, f"cannot decompress the batch: {exc}") from None
        except CodecError as exc:
            raise BatchRejected(CORRUPT_MESSAGE, str(exc)) from None
        start, end = 0, len(body)
    else:
        body, start, end = data, pos + HEADER_SIZE, pos + header.size
    try:
        keyless = walk_records(body, start, end, header.record_count, compacted)
    except _BadRecord as exc:
        raise BatchRejected(INVALID_RECORD, str(exc), [(exc.index, str(exc))]) from None
    if keyless:
        errors = [(i, "Compacted topic cannot accept message without key") for i in keyless]
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise BatchRejected(
            INVALID_RECORD,
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            errors,
        )


def walk_records(buf: bytes, pos: int, end: int, count: int, need_key: bool) -> list[int]:
    """Parse ``count`` records in ``buf[pos:end]`` exactly as DefaultRecord.readFrom does.

    Returns the indexes of records without a key when ``need_key``; raises _BadRecord for a
    record that does not parse to its length, an offset delta out of order, or bytes left over.
    This loop is the produce hot path: varints of one and two bytes (values below 8192) are
    decoded inline and kept zigzag-encoded where only their sign or size matters. After a
    record, ``_uniform_run`` checks the records that follow with the same layout
    in one pass of strided slices (C speed), which is most records of most batches; where records
    differ, it is tried less and less often (every 64 records at most).
    """
    keyless: list[int] = []
    index = 0
    chunk = 1  # records walked one by one before the next try of a uniform run
    try:
        while index < count:
            for index in range(index, min(count, index + chunk)):  # noqa: B020 (the walk goes on from there)
                first = pos
                b = buf[pos]  # record length
                if b < 0x80:
                    size = b
                    pos += 1
                elif (c := buf[pos + 1]) < 0x80:
                    size = (b & 0x7F) | (c << 7)
                    pos += 2
                else:
                    size, pos = _uvarint(buf, pos, _MAX_VARINT_BYTES)
                stop = pos + (size >> 1)  # size is still zigzag-encoded: odd means negative
                if size & 1 or size < _MIN_RECORD_BODY << 1 or stop > end:
                    size = (size >> 1) ^ -(size & 1)
                    raise _BadRecord(index, f"Invalid record size {size} at record {index}")
                p = pos + 1  # attributes: unused in v2 (Kafka reads and ignores them)
                if buf[p] < 0x80:  # timestampDelta: any value, only its encoding is checked
                    p += 1
                elif buf[p + 1] < 0x80:
                    p += 2
                else:
                    _, p = _uvarint(buf, p, _MAX_VARLONG_BYTES)
                b = buf[p]  # offsetDelta
                if b < 0x80:
                    delta = b
                    p += 1
                elif (c := buf[p + 1]) < 0x80:
                    delta = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    delta, p = _uvarint(buf, p, _MAX_VARINT_BYTES)
                if delta != index << 1:
                    raise _BadRecord(index, f"Record {index} has offset delta "
                                            f"{(delta >> 1) ^ -(delta & 1)}, expected {index}")
                b = buf[p]  # key length
                if b < 0x80:
                    length = b
                    p += 1
                elif (c := buf[p + 1]) < 0x80:
                    length = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    length, p = _uvarint(buf, p, _MAX_VARINT_BYTES)
                if not length & 1:
                    p += length >> 1
                elif length != 1:
                    raise _BadRecord(index, f"Invalid key length in record {index}")
                elif need_key:
                    keyless.append(index)
                b = buf[p]  # value length
                if b < 0x80:
                    length = b
                    p += 1
                elif (c := buf[p + 1]) < 0x80:
                    length = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    length, p = _uvarint(buf, p, _MAX_VARINT_BYTES)
                if not length & 1:
                    p += length >> 1
                elif length != 1:
                    raise _BadRecord(index, f"Invalid value length in record {index}")
                if buf[p] == 0:  # header count 0
                    p += 1
                else:
                    p = _skip_headers(buf, p, index)
                if p != stop:
                    raise _BadRecord(
                        index,
                        f"Invalid record size: expected to read {stop - pos} bytes in record "
                        f"payload, but instead read {p - pos}",
                    )
                pos = stop
            index += 1
            if index < count:
                run = _uniform_run(buf, first, pos, end, index, count - index)
                if run > 0:
                    if keyless and keyless[-1] == index - 1:
                        keyless.extend(range(index, index + run))
                    index += run
                    pos += run * (pos - first)
                # Where runs are short or missing, try less often (every 64 records at most).
                chunk = 1 if run >= 16 else min(chunk * 2, 64)
    except IndexError:
        raise _BadRecord(index, f"Found invalid record structure at record {index}") from None
    except _VarintTooLong:
        raise _BadRecord(index, f"Varint is too long in record {index}") from None
    if pos != end:
        raise _BadRecord(index, "Incorrect declared batch size, records still remaining in file")
    return keyless


# Offset deltas as a record stores them: byte ``b`` of the ``width``-byte varint of zigzag(i),
# for every index ``i`` below the limit (a small index in a wider varint is the non-minimal
# encoding, which Kafka's readVarint accepts too). Records past _RUN_INDEX_LIMIT are walked one
# by one.
_RUN_INDEX_LIMIT = 1 << 17
_LOW7 = bytes(range(0x80, 0x100, 2))  # first byte of a multi-byte varint of 2i, i mod 64
_OFFSET_DELTA_BYTES: dict[int, tuple[tuple[bytes, ...], int]] = {
    1: ((bytes(range(0, 0x80, 2)),), 64),
    2: ((_LOW7 * 128, b"".join(bytes([v]) * 64 for v in range(128))), 8192),
    3: ((_LOW7 * (_RUN_INDEX_LIMIT // 64),
         b"".join(bytes([0x80 | v]) * 64 for v in range(128)) * (_RUN_INDEX_LIMIT // 8192),
         b"".join(bytes([v]) * 8192 for v in range(_RUN_INDEX_LIMIT // 8192))),
        _RUN_INDEX_LIMIT),
}
_RUN_MAX = 4096  # records checked per run: bounds the work of a run that turns out short


def _uniform_run(buf: bytes, first: int, start: int, end: int, index: int, left: int) -> int:
    """How many records from ``start`` on (record ``index``) have exactly the layout of the
    valid record at ``first``, which must have no headers: the same length, key length, value
    length and header count bytes, a timestamp delta varint of the same width, and offset
    deltas ``index, index + 1, ...`` of the same width. Such records parse exactly as that one
    did, so every check of the record walk holds for them. Attributes, timestamps, keys and
    values may differ (Kafka reads attributes and timestamp deltas without checking values).

    Returns the count (> 0), or ``-n`` when the next ``n`` records must be walked one by one.
    """
    if start >= end or buf[start] != buf[first]:
        return -1  # the next record's length differs
    stride = start - first
    # Field positions in the template, relative to ``first``; it parsed already, so the
    # varints are well formed and end inside it.
    t0 = _varint_end(buf, first) - first + 1  # after the length and the attributes
    o0 = _varint_end(buf, first + t0) - first
    k0 = _varint_end(buf, first + o0) - first
    ke = _varint_end(buf, first + k0) - first
    key = _varint(buf, first + k0)[0]
    v0 = ke + max(key, 0)
    ve = _varint_end(buf, first + v0) - first
    h0 = ve + max(_varint(buf, first + v0)[0], 0)
    table = _OFFSET_DELTA_BYTES.get(k0 - o0)
    if table is None or h0 != stride - 1 or buf[first + h0] != 0:
        return -1  # offset deltas past the tables, or headers: record by record
    delta_bytes, index_limit = table
    most = min(left, (end - start) // stride, index_limit - index, _RUN_MAX)
    if most < 2:
        return -1
    limit = start + most * stride
    n = most
    for j in range(t0 - 1):  # the length varint: equal bytes mean equal strides
        column = buf[start + j : limit : stride]
        n = min(n, len(column) - len(column.lstrip(buf[first + j : first + j + 1])))
    if n < 2:
        return -1
    limit = start + n * stride
    for j in range(t0, o0 - 1):  # timestampDelta: continuation bits as in the template
        if min(buf[start + j : limit : stride]) < 0x80:
            return -n
    if max(buf[start + o0 - 1 : limit : stride]) >= 0x80:
        return -n
    for b, j in enumerate(range(o0, k0)):
        if buf[start + j : limit : stride] != delta_bytes[b][index : index + n]:
            return -n
    for j in (*range(k0, ke), *range(v0, ve), h0):
        if buf[start + j : limit : stride].count(buf[first + j]) != n:
            return -n
    return n


def _varint_end(buf: bytes, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


def _skip_headers(buf: bytes, p: int, index: int) -> int:
    count, p = _varint(buf, p)
    if count < 0:
        raise _BadRecord(index, f"Found invalid number of record headers {count}")
    for _ in range(count):
        length, p = _varint(buf, p)
        if length < 0:
            raise _BadRecord(index, f"Invalid negative header key size {length}")
        p += length
        length, p = _varint(buf, p)
        if length >= 0:
            p += length
        elif length != -1:
            raise _BadRecord(index, f"Invalid header value size {length}")
    return p


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (ByteUtils.readVarint)."""
    raw, pos = _uvarint(buf, pos, _MAX_VARINT_BYTES)
    return (raw >> 1) ^ -(raw & 1), pos


def _uvarint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """The raw (still zigzag-encoded) value of a varint of at most ``max_bytes`` bytes."""
    result = 0
    shift = 0
    start = pos
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if pos - start >= max_bytes:
            raise _VarintTooLong
