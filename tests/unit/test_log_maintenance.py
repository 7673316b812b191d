"""Retention and compaction on real partition logs (no broker, no clock: time is passed in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.broker.records import (
    ATTR_TRANSACTIONAL,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    validate_produced,
)
from streams.broker.storage.cleaner import (
    CompactionConfig,
    needs_cleaning,
    plan_and_write,
    swap,
)
from streams.broker.storage.log import LogConfig, PartitionLog
from streams.broker.storage.retention import apply_retention

NOW = 10_000_000


def append(plog: PartitionLog, records: list[Record], **kwargs) -> int:
    batch = build_batch(records, **kwargs)
    return plog.append(bytearray(batch), validate_produced(batch)).base_offset


def read_all(plog: PartitionLog) -> list[Record]:
    out: list[Record] = []
    offset = plog.log_start_offset
    while offset < plog.next_offset:
        data = plog.read(offset, 1 << 20)
        if not data:
            break
        for pos, header in iter_batches(data):
            if not header.is_control:
                out.extend(decode_records(data[pos : pos + header.size]))
            offset = header.last_offset + 1
    return out


@pytest.fixture
def small_log(tmp_path: Path) -> PartitionLog:
    plog = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=300, index_interval_bytes=64))
    plog.open()
    yield plog
    plog.close()


def compact(plog: PartitionLog, config: CompactionConfig, now: int = NOW) -> None:
    plog.roll()
    plan = plan_and_write(plog, config, now)
    swap(plog, plan, now)


def test_retention_by_time_deletes_whole_old_segments(small_log: PartitionLog) -> None:
    for i in range(20):
        append(small_log, [Record(b"k", b"x" * 40, timestamp=1_000 + i)])
    for _ in range(5):
        append(small_log, [Record(b"k", b"y" * 40, timestamp=NOW - 10)])
    segments_before = len(small_log.segments)
    assert segments_before > 3
    deleted = apply_retention(small_log, retention_ms=1_000_000, retention_bytes=-1, now_ms=NOW)
    assert deleted > 0
    remaining = read_all(small_log)
    old = [r for r in remaining if r.timestamp < NOW - 1_000_000]
    assert len(old) < 20  # expired segments went
    assert [r.value for r in remaining][-5:] == [b"y" * 40] * 5
    assert small_log.log_start_offset == remaining[0].offset
    assert small_log.segments[0].base_offset <= small_log.log_start_offset


def test_retention_by_bytes_keeps_the_limit(small_log: PartitionLog) -> None:
    for _ in range(40):
        append(small_log, [Record(b"k", b"x" * 40, timestamp=NOW)])
    apply_retention(small_log, retention_ms=-1, retention_bytes=600, now_ms=NOW)
    assert small_log.size_bytes - small_log.segments[0].size < 600
    assert small_log.size_bytes >= 600 - 300
    assert read_all(small_log)[-1].offset == 39


def test_compaction_keeps_latest_per_key_and_offsets(small_log: PartitionLog) -> None:
    for i in range(30):
        append(small_log, [Record(f"k{i % 3}".encode(), f"v{i}".encode(), timestamp=NOW - 1000)])
    config = CompactionConfig(min_cleanable_dirty_ratio=0.0)
    small_log.roll()
    assert needs_cleaning(small_log, config, NOW)
    compact(small_log, config)
    survivors = read_all(small_log)
    assert {(r.key, r.value, r.offset) for r in survivors} == {
        (b"k0", b"v27", 27), (b"k1", b"v28", 28), (b"k2", b"v29", 29)
    }
    # a fetch of a removed offset returns the next existing one
    data = small_log.read(5, 1 << 20)
    first = next(iter(iter_batches(data)))[1]
    assert first.base_offset >= 5


def test_compaction_tombstones_expire_after_delete_retention(small_log: PartitionLog) -> None:
    append(small_log, [Record(b"a", b"1", timestamp=NOW - 1000)])
    append(small_log, [Record(b"a", None, timestamp=NOW - 1000)])
    append(small_log, [Record(b"b", b"2", timestamp=NOW - 1000)])
    config = CompactionConfig(min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)
    compact(small_log, config, NOW)
    assert [(r.key, r.value) for r in read_all(small_log)] == [(b"a", None), (b"b", b"2")]
    compact(small_log, config, NOW + 5000)  # past delete.retention.ms since the first clean
    assert [(r.key, r.value) for r in read_all(small_log)] == [(b"b", b"2")]


def test_compaction_respects_min_lag(small_log: PartitionLog) -> None:
    for i in range(10):
        append(small_log, [Record(b"k", f"v{i}".encode(), timestamp=NOW - 10)])
    small_log.roll()
    config = CompactionConfig(min_cleanable_dirty_ratio=0.0, min_compaction_lag_ms=60_000)
    assert not needs_cleaning(small_log, config, NOW)


def test_compaction_drops_aborted_transactions(small_log: PartitionLog) -> None:
    append(small_log, [Record(b"k", b"committed", timestamp=NOW - 1000)])
    append(small_log, [Record(b"k", b"aborted", timestamp=NOW - 1000)], producer_id=7,
           producer_epoch=0, base_sequence=0, attributes=ATTR_TRANSACTIONAL)
    marker = build_control_batch(7, 0, commit=False, timestamp=NOW - 1000)
    small_log.append(bytearray(marker), validate_produced(marker))
    compact(small_log, CompactionConfig(min_cleanable_dirty_ratio=0.0))
    assert [r.value for r in read_all(small_log)] == [b"committed"]


def test_compacted_log_survives_reopen(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "c-0", LogConfig(segment_bytes=200))
    plog.open()
    for i in range(20):
        append(plog, [Record(f"k{i % 2}".encode(), f"v{i}".encode(), timestamp=NOW - 1000)])
    compact(plog, CompactionConfig(min_cleanable_dirty_ratio=0.0))
    before = [(r.key, r.value, r.offset) for r in read_all(plog)]
    end = plog.next_offset
    plog.close()
    reopened = PartitionLog(tmp_path / "c-0", LogConfig(segment_bytes=200))
    reopened.open()
    assert [(r.key, r.value, r.offset) for r in read_all(reopened)] == before
    assert reopened.next_offset == end
    reopened.close()
