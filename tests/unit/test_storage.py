"""Partition logs on disk: segment roll, reads across segments, recovery and index rebuilds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streams.broker.records import (
    Record,
    build_batch,
    decode_records,
    iter_batches,
    validate_produced,
)
from streams.broker.storage.log import LogConfig, PartitionLog

TS = 1_000_000


def open_log(directory: Path, **config: int) -> PartitionLog:
    log = PartitionLog(directory, LogConfig(**config))
    log.open()
    return log


def append(log: PartitionLog, first: int, count: int = 3, size: int = 50) -> int:
    """Append one batch of ``count`` records numbered from ``first``; returns its base offset."""
    records = [Record(f"k{first + i}".encode(), bytes([first % 251]) * size + b"%d" % (first + i),
                      TS + 10 * (first + i), (("n", b"%d" % (first + i)),))
               for i in range(count)]
    data = build_batch(records)
    return log.append(bytearray(data), validate_produced(data)).base_offset


def read_all(log: PartitionLog, start: int = 0, max_bytes: int = 200) -> list[Record]:
    """Fetch-style reads from ``start`` to the end, ``max_bytes`` at a time."""
    out: list[Record] = []
    offset = start
    while offset < log.next_offset:
        data = log.read(offset, max_bytes)
        assert data, f"no data at offset {offset} below {log.next_offset}"
        for _pos, header in iter_batches(data):
            batch = data[_pos : _pos + header.size]
            out.extend(r for r in decode_records(batch) if r.offset >= offset)
            offset = header.last_offset + 1
    return out


def fill(log: PartitionLog, batches: int, count: int = 3) -> None:
    for b in range(batches):
        assert append(log, b * count, count) == b * count


def check_contents(log: PartitionLog, total: int) -> None:
    records = read_all(log)
    assert [r.offset for r in records] == list(range(total))
    assert [r.key for r in records] == [f"k{i}".encode() for i in range(total)]
    assert [r.timestamp for r in records] == [TS + 10 * i for i in range(total)]
    # Reads starting at every offset (mid-batch too) begin with the batch holding it.
    for offset in range(total):
        data = log.read(offset, 1)
        [(_pos, header)] = list(iter_batches(data))
        assert header.base_offset <= offset <= header.last_offset


def segment_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


def test_segments_roll_by_size_and_reads_span_them(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=1024, index_interval_bytes=256)
    fill(log, 40)
    assert len(log.segments) > 3
    batch_size = len(build_batch([Record(b"k0", b"x" * 52, TS)] * 3))
    for segment in log.segments:
        assert 0 < segment.size <= 1024 + batch_size
    for segment in log.segments[:-1]:
        assert segment.size + batch_size > 1024 - batch_size  # rolled only when nearly full
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and bases[0] == 0
    for previous, segment in zip(log.segments, log.segments[1:], strict=False):
        assert segment.base_offset == previous.next_offset
    assert [p.name for p in segment_files(tmp_path, ".log")] == [
        f"{b:020d}.log" for b in bases]
    check_contents(log, 120)
    log.close()

    reopened = open_log(tmp_path, segment_bytes=1024, index_interval_bytes=256)
    assert reopened.next_offset == 120
    check_contents(reopened, 120)
    assert append(reopened, 120) == 120
    check_contents(reopened, 123)
    reopened.close()


def test_offset_for_timestamp_across_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=1024, index_interval_bytes=0)
    fill(log, 30)
    for offset in range(90):
        assert log.offset_for_timestamp(TS + 10 * offset) == (offset, TS + 10 * offset)
        assert log.offset_for_timestamp(TS + 10 * offset - 3) == (offset, TS + 10 * offset)
    assert log.offset_for_timestamp(TS + 10 * 89 + 1) is None
    log.close()


@pytest.mark.parametrize("damage", ["truncate-mid-batch", "truncate-mid-header", "flip-crc-byte",
                                    "zero-fill", "garbage-tail"])
def test_recovery_cuts_exactly_the_torn_batch(tmp_path: Path, damage: str) -> None:
    log = open_log(tmp_path, segment_bytes=4096, index_interval_bytes=100)
    fill(log, 30)  # several segments; damage goes into the active one
    assert len(log.segments) > 1
    active = log.segments[-1]
    last_batch_at = max(p for p, _ in iter_batches(os.pread(active.fd, active.size, 0)))
    good_end = active.size
    last_base = active.next_offset - 3
    log.close()

    path = segment_files(tmp_path, ".log")[-1]
    data = bytearray(path.read_bytes())
    if damage == "truncate-mid-batch":
        data = data[: last_batch_at + 70]
        expected_end, expected_next = last_batch_at, last_base
    elif damage == "truncate-mid-header":
        data = data[: last_batch_at + 30]
        expected_end, expected_next = last_batch_at, last_base
    elif damage == "flip-crc-byte":
        data[-5] ^= 0x40  # inside the last batch's records: its CRC no longer matches
        expected_end, expected_next = last_batch_at, last_base
    elif damage == "zero-fill":
        data += bytes(4096)  # a file extended by the crash but never written
        expected_end, expected_next = good_end, last_base + 3
    else:
        data += os.urandom(500)
        expected_end, expected_next = good_end, last_base + 3
    path.write_bytes(bytes(data))

    recovered = open_log(tmp_path, segment_bytes=4096, index_interval_bytes=100)
    assert recovered.segments[-1].size == expected_end
    assert path.stat().st_size == expected_end
    assert recovered.next_offset == expected_next
    check_contents(recovered, expected_next)
    # The rebuilt index points at real batch starts.
    active = recovered.segments[-1]
    starts = {p for p, _ in iter_batches(os.pread(active.fd, active.size, 0))}
    assert set(active.index_positions) <= starts
    # Appends continue right after the cut.
    assert append(recovered, expected_next) == expected_next
    check_contents(recovered, expected_next + 3)
    recovered.close()


def test_corrupt_batch_in_the_middle_cuts_from_there(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=100)
    fill(log, 10)
    positions = [p for p, _ in iter_batches(os.pread(log.active.fd, log.active.size, 0))]
    log.close()
    path = segment_files(tmp_path, ".log")[0]
    data = bytearray(path.read_bytes())
    data[positions[4] + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    recovered = open_log(tmp_path, index_interval_bytes=100)
    assert recovered.next_offset == 12
    assert recovered.active.size == positions[4]
    check_contents(recovered, 12)
    recovered.close()


@pytest.mark.parametrize("how", ["deleted", "garbage", "truncated"])
def test_index_files_are_rebuilt(tmp_path: Path, how: str) -> None:
    log = open_log(tmp_path, segment_bytes=2048, index_interval_bytes=200)
    fill(log, 40)
    assert len(log.segments) > 3
    log.close()
    originals = {p.name: p.read_bytes()
                 for p in segment_files(tmp_path, ".index") + segment_files(tmp_path, ".timeindex")}
    assert originals
    for name in originals:
        path = tmp_path / name
        if how == "deleted":
            path.unlink()
        elif how == "garbage":
            path.write_bytes(b"\xff" * 37)
        else:
            path.write_bytes(b"")

    reopened = open_log(tmp_path, segment_bytes=2048, index_interval_bytes=200)
    assert reopened.next_offset == 120
    check_contents(reopened, 120)
    for offset in range(0, 120, 7):
        assert reopened.offset_for_timestamp(TS + 10 * offset) == (offset, TS + 10 * offset)
    reopened.close()
    rebuilt = {p.name: p.read_bytes()
               for p in segment_files(tmp_path, ".index") + segment_files(tmp_path, ".timeindex")}
    assert rebuilt == originals


@pytest.mark.parametrize("index_interval_bytes", [0, 4096])
def test_read_returns_a_whole_batch_larger_than_max_bytes(tmp_path: Path,
                                                          index_interval_bytes: int) -> None:
    """Regression (Segment.read): a batch bigger than both max_bytes and the read-ahead chunk
    must still come back whole (KIP-74), and the next one must be reachable by its offset."""
    log = open_log(tmp_path, index_interval_bytes=index_interval_bytes)
    first = append(log, 0, count=3, size=2000)
    second = append(log, 3, count=3, size=2000)
    assert (first, second) == (0, 3)
    stored = log.read(0, 1 << 20)
    [(_, h1), (p2, h2)] = list(iter_batches(stored))
    assert h1.size > 6000 and h2.size > 6000

    for offset in (0, 1, 2):  # from the batch start or from inside it
        data = log.read(offset, 300)
        assert data == stored[:h1.size]
        assert [r.offset for r in decode_records(data)] == [0, 1, 2]

    data = log.read(second, 300)
    assert data == stored[p2:p2 + h2.size]
    assert [r.offset for r in decode_records(data)] == [3, 4, 5]
    assert log.read(second + 3, 300) == b""
    log.close()
