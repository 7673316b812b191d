"""Blocks reserved past a segment's end (prealloc.py) never show in its size, and are given back
when it rolls; reads, recovery and a reopened log see exactly the appended batches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streams.broker.records import Record, build_batch, validate_produced
from streams.broker.storage import prealloc
from streams.broker.storage.log import LogConfig, PartitionLog


def _append(log: PartitionLog, n: int) -> None:
    batch = bytearray(build_batch([Record(None, os.urandom(1000)) for _ in range(n)]))
    log.append(batch, validate_produced(bytes(batch)))


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_reserve_keeps_the_size_and_is_given_back_on_roll(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT)
    try:
        if not prealloc.reserve(fd, 0, 1 << 20):
            pytest.skip("no fallocate(FALLOC_FL_KEEP_SIZE) on this file system")
    finally:
        os.close(fd)
    log = PartitionLog(tmp_path / "p", LogConfig(segment_bytes=1 << 20))
    log.open()
    for _ in range(20):
        _append(log, 10)
    first = log.segments[0]
    assert os.path.getsize(first.log_path) == first.size  # the size is the log's end
    assert _allocated(first.log_path) > first.size  # blocks reserved ahead
    for _ in range(200):
        _append(log, 10)
    assert len(log.segments) > 1
    assert _allocated(first.log_path) < first.size + 64 * 1024  # given back at the roll
    data = log.read(0, 1 << 30)
    assert len(data) == first.size
    end = log.next_offset
    log.close()
    reopened = PartitionLog(tmp_path / "p", LogConfig(segment_bytes=1 << 20))
    reopened.open()
    assert reopened.next_offset == end  # recovery cut nothing
    reopened.close()
