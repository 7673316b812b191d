"""Retention says why it deletes segments, in Kafka's words (UnifiedLog.deleteSegments)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from streams.broker.records import Record, build_batch, validate_produced
from streams.broker.storage.log import LogConfig, PartitionLog
from streams.broker.storage.retention import apply_retention

NOW = 10_000_000


@pytest.fixture
def plog(tmp_path: Path) -> PartitionLog:
    log = PartitionLog(tmp_path / "t-0", LogConfig(segment_bytes=300, index_interval_bytes=64))
    log.open()
    yield log
    log.close()


def fill(plog: PartitionLog, count: int, timestamp: int) -> None:
    for _ in range(count):
        batch = build_batch([Record(b"k", b"x" * 40, timestamp)])
        plog.append(bytearray(batch), validate_produced(batch))


def deletions(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "Deleting segments" in r.getMessage()]


def test_time_retention_logs_the_breach(plog, caplog) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    fill(plog, 20, 1_000)
    fill(plog, 3, NOW)
    assert apply_retention(plog, retention_ms=60_000, retention_bytes=-1, now_ms=NOW) > 0
    [line] = deletions(caplog)
    assert line.startswith("[t-0] Deleting segments due to retention time 60000ms breach based "
                           "on the largest record timestamp in the segment: LogSegment(baseOffset=0,")


def test_size_retention_logs_the_breach(plog, caplog) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    fill(plog, 40, NOW)
    assert apply_retention(plog, retention_ms=-1, retention_bytes=600, now_ms=NOW) > 0
    [line] = deletions(caplog)
    assert "Deleting segments due to retention size in bytes 600 breach. Log size after " \
           f"deletion will be {plog.size_bytes}.: LogSegment(baseOffset=0," in line


def test_nothing_deleted_nothing_logged(plog, caplog) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    fill(plog, 5, NOW)
    assert apply_retention(plog, retention_ms=60_000, retention_bytes=-1, now_ms=NOW) == 0
    assert deletions(caplog) == []
