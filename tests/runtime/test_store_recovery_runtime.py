"""Transactional stores after SIGKILL: a task restores only the changelog records after the
offsets stored in its own RocksDB, under at_least_once and exactly_once_v2.

A counting app runs with input flowing; it is SIGKILLed mid-stream and restarted on the same
state directory. Checked: each changelog partition's restoration starts exactly at the offset
its store holds (read from the killed instance's RocksDB), the records restored are at most
what the app processed in its last two commit intervals (one may be in flight under
exactly-once), far fewer than the changelog holds, and the final counts are exact under
exactly_once_v2 (no loss under at_least_once).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import wait_until

from streams.state.rocksdb import RocksDBBytesStore

from .kafka_io import create_topics, read_all
from .test_crash_runtime import SCRIPT, CountingInput, counts_by_key

CHANGELOG = "crash-app-crash-store-changelog"
PARTITIONS = 2
COMMIT_INTERVAL_MS = 200


class Counting:
    """The counting app as a child process, printing restore events and its progress."""

    def __init__(self, bootstrap: str, guarantee: str, state_dir: Path, log: Path) -> None:
        self.log = log
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(Path(__file__).parents[2]),
                   COUNTING_APP_PROGRESS="1", COUNTING_APP_CONFIG=json.dumps(
                       {"commit.interval.ms": COMMIT_INTERVAL_MS, "max.poll.records": 100}))
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(SCRIPT), bootstrap, guarantee, str(state_dir)],
                stdout=out, stderr=subprocess.STDOUT, env=env)

    def lines(self, prefix: str) -> list[str]:
        return [line[len(prefix) + 1:] for line in self.log.read_text(errors="replace")
                .splitlines() if line.startswith(prefix + " ")]

    def running(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"app exited with {self.proc.returncode}:\n"
                                 f"{self.log.read_text(errors='replace')}")
        return "RUNNING" in self.lines("STATE")

    def progress(self) -> list[tuple[int, int]]:
        """(records processed, commits) each time the commit count moved."""
        return [tuple(map(int, line.split())) for line in self.lines("PROGRESS")]  # type: ignore[misc]

    def restores(self) -> list[dict]:
        return [json.loads(line) for line in self.lines("RESTORE")]


def stored_offsets(state_dir: Path) -> dict[int, int]:
    """The changelog offsets each task's store holds, read from its RocksDB on disk."""
    result = {}
    for partition in range(PARTITIONS):
        directory = state_dir / "crash-app" / f"0_{partition}" / "rocksdb" / "crash-store"
        store = RocksDBBytesStore("crash-store", directory)
        try:
            offsets = store.stored_offsets()
        finally:
            store.close()
        result[partition] = offsets[(CHANGELOG, partition)]
    return result


def feed(source: CountingInput, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        source.produce_chunk()


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_sigkill_restores_only_the_tail_past_the_stored_offsets(broker, tmp_path,
                                                                guarantee) -> None:
    create_topics(broker.bootstrap, {"crash-input": PARTITIONS})
    source = CountingInput(broker.bootstrap, seed=11, chunk=30)
    state_dir = tmp_path / "state"
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(source, stop))
    first = Counting(broker.bootstrap, guarantee, state_dir, tmp_path / "first.log")
    second = None
    feeder.start()
    try:
        wait_until(first.running, timeout=60, message="first run RUNNING")
        # Enough history that a full restore would stand out: many commit intervals.
        wait_until(lambda: len(first.progress()) > 20 and first.progress()[-1][0] >= 1500,
                   timeout=120, message="the first run processed 1500 records")
        first.proc.send_signal(signal.SIGKILL)  # input still flowing
        first.proc.wait(10)
        progress = first.progress()
        stored = stored_offsets(state_dir)
        second = Counting(broker.bootstrap, guarantee, state_dir, tmp_path / "second.log")
        wait_until(second.running, timeout=60, message="restarted run RUNNING")
        wait_until(lambda: source.sent >= progress[-1][0] + 600, timeout=60,
                   message="more input after the restart")
    finally:
        stop.set()
        feeder.join()
    try:
        records = read_all(broker.bootstrap, "crash-counts", until=source.caught_up,
                           timeout=120, quiet=1.0)
    finally:
        for app in (first, second):
            if app is not None and app.proc.poll() is None:
                app.proc.send_signal(signal.SIGTERM)
                app.proc.wait(60)

    # Restoration started exactly where each store's own offsets said ...
    restores = second.restores()  # type: ignore[union-attr]
    starts = {r["partition"]: r["start"] for r in restores if r["event"] == "restore_start"}
    assert all(starts[p] == stored[p] for p in starts), (starts, stored)
    restored = sum(r["total"] for r in restores if r["event"] == "restore_end")
    # ... and took in at most the last two commit intervals' records (the count writes one
    # changelog record per input record), a small part of the changelog.
    per_interval = [b[0] - a[0] for a, b in zip(progress, progress[1:], strict=False)]
    last_two = max(per_interval[-2:]) * 2 + 1
    assert restored <= max(last_two, 2 * max(per_interval[-5:])), (restored, per_interval[-5:])
    assert restored < sum(stored.values()) / 5, (restored, stored)

    if guarantee == "exactly_once_v2":
        assert not source.wrong_sequences(records), "duplicates or gaps"
    else:
        got = counts_by_key(records)
        for key, n in source.expected.items():
            assert set(range(1, n + 1)) <= set(got[key]), f"{key}: lost updates"
