"""Client batch validation (LogValidator's checks), bounded decompression, and a log that puts
itself back as it was when a write fails."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import crc32c
import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from streams.broker.compression import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    TooLarge,
    compress,
    decompress_bounded,
)
from streams.broker.records import (
    ATTR_CONTROL,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    parse_header,
    validate_produced,
    write_varint,
)
from streams.broker.storage.log import LogConfig, PartitionLog, StorageError
from streams.broker.validation import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
    BatchRejected,
    check_client_batch,
    check_records,
)

LIMIT = 1 << 20


def check(batch: bytes, compacted: bool = False, limit: int = LIMIT) -> None:
    [(pos, header)] = validate_produced(batch)
    check_client_batch(header)
    check_records(batch, pos, header, compacted, limit)


def rejected(batch: bytes, compacted: bool = False, limit: int = LIMIT) -> BatchRejected:
    with pytest.raises(BatchRejected) as info:
        check(batch, compacted, limit)
    return info.value


def resealed(records: bytes, count: int, last_offset_delta: int | None = None,
             attributes: int = 0) -> bytes:
    """A batch with a correct CRC around arbitrary record bytes."""
    tail = struct.pack(">hiqqqhii", attributes,
                       count - 1 if last_offset_delta is None else last_offset_delta,
                       1000, 1000, -1, -1, -1, count) + records
    return struct.pack(">qiibI", 0, 9 + len(tail), 0, 2, crc32c.crc32c(tail)) + tail


def record_bytes(offset_delta: int, key: bytes | None, value: bytes | None,
                 headers: list[tuple[bytes, bytes | None]] | None = None,
                 ts_delta: int = 0, pad_length: int = 0) -> bytes:
    body = bytearray(b"\0")
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    for part in (key, value):
        write_varint(body, -1 if part is None else len(part))
        body += part or b""
    write_varint(body, len(headers or []))
    for hkey, hvalue in headers or []:
        write_varint(body, len(hkey))
        body += hkey
        write_varint(body, -1 if hvalue is None else len(hvalue))
        body += hvalue or b""
    out = bytearray()
    write_varint(out, len(body) + pad_length)
    return bytes(out + body)


# -- good batches pass ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [0, GZIP, SNAPPY, LZ4, ZSTD])
def test_good_batches_of_every_codec_pass(codec: int) -> None:
    records = [Record(f"k{i}".encode(), b"v" * (i * 37 % 300), 1000 + i * 70,
                      (("h", b"x" * i), ("n", None)) if i % 3 else ())
               for i in range(300)]  # two-byte varints: offset deltas, timestamps, lengths
    records += [Record(None, None, 99_999_999_999)]
    check(build_batch(records, attributes=codec))


def test_batches_written_by_aiokafka_pass() -> None:
    builder = DefaultRecordBatchBuilder(2, 0, -1, -1, -1, 0, 1 << 20)
    for i in range(200):
        builder.append(i, 1_700_000_000_000 + i, b"key" if i % 2 else None, b"x" * i,
                       [("trace", b"abc"), ("empty", b"")])
    check(bytes(builder.build()))


def test_compacted_topics_need_keys_and_name_every_keyless_record() -> None:
    batch = build_batch([Record(b"a", b"1"), Record(None, b"2"), Record(b"", b"3"),
                         Record(None, None)], attributes=ZSTD)
    check(batch)  # fine on a delete topic
    error = rejected(batch, compacted=True)
    assert error.code == INVALID_RECORD
    assert [i for i, _ in error.record_errors] == [1, 3]
    assert "Compacted topic cannot accept message without key" in error.record_errors[0][1]


# -- bad batches are refused ---------------------------------------------------------------------

GOOD = record_bytes(0, b"k", b"v")
BAD_RECORDS = {
    "length-shorter-than-fields": (record_bytes(0, b"k", b"v", pad_length=-1), 1),
    "length-longer-than-fields": (record_bytes(0, b"k", b"v", pad_length=1) + b"\0", 1),
    "length-below-minimum": (b"\x02\x00", 1),
    "negative-length": (b"\x01" + GOOD, 1),
    "length-past-the-batch": (b"\xfe\x01" + GOOD[1:], 1),
    "fewer-records-than-count": (GOOD, 2),
    "bytes-after-the-last-record": (GOOD + b"\x00", 1),
    "offset-delta-not-its-index": (record_bytes(1, b"k", b"v"), 1),
    "offset-deltas-swapped": (record_bytes(1, b"k", b"v") + record_bytes(0, b"k", b"v"), 2),
    "key-length-below-minus-one": (b"\x0e\x00\x00\x00\x03\x00\x00\x00", 1),
    "negative-header-count": (record_bytes(0, b"k", b"v")[:-1] + b"\x01", 1),
    "negative-header-key-length": (b"\x10\x00\x00\x00\x01\x01\x02\x01\x01", 1),
    "header-past-the-record": (record_bytes(0, b"k", b"v", [(b"hh", b"vvvv")])[:-2], 1),
    "varint-too-long": (b"\x0e\x00" + b"\x80" * 11 + b"\x00\x00\x01\x01\x00", 1),
    "truncated-varint": (b"\x06\x00\x00\x00\x01\x01\x80", 1),
}


@pytest.mark.parametrize("name", sorted(BAD_RECORDS))
@pytest.mark.parametrize("codec", [0, GZIP, ZSTD])
def test_records_that_do_not_parse_are_invalid(name: str, codec: int) -> None:
    records, count = BAD_RECORDS[name]
    payload = compress(codec, records)
    error = rejected(resealed(payload, count, attributes=codec))
    assert error.code == INVALID_RECORD, error
    assert error.record_errors and error.record_errors[0][0] >= 0


def test_batch_level_checks() -> None:
    marker = build_control_batch(1, 0, commit=True, timestamp=1000)
    assert rejected(marker).code == INVALID_RECORD
    assert "control" in rejected(marker).message
    not_a_marker = build_batch([Record(b"k", b"v")], attributes=ATTR_CONTROL)
    assert rejected(not_a_marker).code == INVALID_RECORD
    gap = resealed(GOOD, 1, last_offset_delta=3)
    assert rejected(gap).code == INVALID_RECORD
    assert "Inconsistent batch offset range" in rejected(gap).message


def test_undecodable_compressed_payload_is_corrupt() -> None:
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        assert rejected(resealed(b"definitely not compressed", 1, attributes=codec)).code \
            == CORRUPT_MESSAGE


# -- bounded decompression -----------------------------------------------------------------------


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_decompression_stops_at_the_limit(codec: int) -> None:
    bomb = compress(codec, bytes(8 << 20))
    assert len(bomb) < 1 << 20
    with pytest.raises(TooLarge):
        decompress_bounded(codec, bomb, 1 << 20)
    assert decompress_bounded(codec, bomb, 8 << 20) == bytes(8 << 20)
    batch = build_batch([Record(b"k", bytes(2 << 20))], attributes=codec)
    assert rejected(batch, limit=1 << 20).code == MESSAGE_TOO_LARGE
    check(batch, limit=4 << 20)


# -- a failed write leaves the log as it was -----------------------------------------------------


def open_log(directory: Path) -> PartitionLog:
    log = PartitionLog(directory, LogConfig(index_interval_bytes=0))
    log.open()
    return log


def append(log: PartitionLog, value: bytes) -> int:
    batch = bytearray(build_batch([Record(b"k", value, 1000)]))
    return log.append(batch, validate_produced(bytes(batch))).base_offset


def values(log: PartitionLog) -> list[bytes | None]:
    data = log.read(0, 1 << 20)
    return [r.value for pos, h in iter_batches(data) for r in decode_records(data[pos:pos + h.size])]


@pytest.mark.parametrize("failure", ["short-log-write", "enospc-log-write", "enospc-index-write"])
def test_failed_write_is_rolled_back(tmp_path: Path, monkeypatch, failure: str) -> None:
    log = open_log(tmp_path)
    assert append(log, b"one") == 0
    size = log.active.size
    real_pwrite, real_write = os.pwrite, os.write

    def short_pwrite(fd: int, data: bytes, pos: int) -> int:
        return real_pwrite(fd, bytes(data)[: len(data) // 2], pos)

    def no_space(*_args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    if failure == "short-log-write":
        monkeypatch.setattr(os, "pwrite", short_pwrite)
    elif failure == "enospc-log-write":
        monkeypatch.setattr(os, "pwrite", no_space)
    else:
        monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(StorageError):
        append(log, b"lost" * 100)
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    monkeypatch.setattr(os, "write", real_write)
    assert (log.next_offset, log.active.size, os.fstat(log.active.fd).st_size) == (1, size, size)
    assert append(log, b"two") == 1
    assert values(log) == [b"one", b"two"]
    log.close()
    reopened = open_log(tmp_path)
    assert reopened.next_offset == 2 and values(reopened) == [b"one", b"two"]
    assert reopened.read(1, 1)[:8] == struct.pack(">q", 1)
    reopened.close()


def test_unreadable_control_batch_on_disk_is_skipped(tmp_path: Path, caplog) -> None:
    log = open_log(tmp_path)
    append(log, b"one")
    bad = bytearray(build_batch([Record(b"x", b"")], producer_id=3, producer_epoch=0,
                                attributes=ATTR_CONTROL | 0x10))
    struct.pack_into(">q", bad, 0, 1)
    log.active.append(bad, [(0, parse_header(bad))])
    log.close()
    reopened = open_log(tmp_path)
    assert reopened.next_offset == 2
    assert [r.getMessage() for r in caplog.records if "control" in r.getMessage()]
    assert append(reopened, b"two") == 2
    reopened.close()
