"""Two promises of the stream thread's commit loop, each checked on a real app process.

1. at_least_once: record caches reach the changelog and the output only inside a commit,
   together with the input offsets. A crash after the app caught up must not restore state
   that is ahead of the committed input (that counted every record twice).
2. Processing runs in time slices: a backlog of slow records never keeps the event loop from
   heartbeating, so the instance keeps its tasks (no session timeout, no rebalance).
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections import defaultdict

from aiokafka import AIOKafkaConsumer, TopicPartition
from helpers import RECENT_TS, wait_until

from .kafka_io import create_topics, produce, read_all
from .test_crash_runtime import KEYS, App, counts_by_key

PARTITIONS = 4


def _committed_total(bootstrap: str, group: str, topic: str) -> int:
    async def run() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            total = 0
            for p in range(PARTITIONS):
                total += await consumer.committed(TopicPartition(topic, p)) or 0
            return total
        finally:
            await consumer.stop()

    return asyncio.run(run())


def _records(rng: random.Random, count: int, expected: dict[str, int], start: int
             ) -> list[tuple[bytes, bytes, int]]:
    records = []
    for i in range(count):
        key = KEYS[rng.randrange(len(KEYS))]
        expected[key] += 1
        records.append((key.encode(), b"x", RECENT_TS + start + i))
    return records


def test_at_least_once_crash_after_catching_up_does_not_count_twice(broker, tmp_path) -> None:
    rng = random.Random(5)
    create_topics(broker.bootstrap, {"crash-input": PARTITIONS})
    expected: dict[str, int] = defaultdict(int)
    produce(broker.bootstrap, "crash-input", _records(rng, 400, expected, 0))
    # A commit interval longer than the test: only a commit made because the app caught up
    # can cover what the caches flushed (before the fix they flushed without one).
    config = {"commit.interval.ms": 600_000}
    state_dir = tmp_path / "state"
    first = App(broker.bootstrap, "at_least_once", state_dir, tmp_path / "first.log",
                cache_max_bytes=10 * 1024 * 1024, config=config)
    try:
        wait_until(lambda: _committed_total(broker.bootstrap, "crash-app", "crash-input")
                   == 400, timeout=90, message="input offsets committed once caught up")
    finally:
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
    produce(broker.bootstrap, "crash-input", _records(rng, 80, expected, 400))
    second = App(broker.bootstrap, "at_least_once", state_dir, tmp_path / "second.log",
                 cache_max_bytes=10 * 1024 * 1024, config=config)
    try:
        def complete(records) -> bool:
            got = counts_by_key(records)
            return all(got.get(k) and max(got[k]) >= n for k, n in expected.items())

        records = read_all(broker.bootstrap, "crash-counts", "read_uncommitted",
                           until=complete, timeout=90, quiet=1.0)
    finally:
        second.proc.send_signal(signal.SIGTERM)
        second.proc.wait(60)
    got = counts_by_key(records)
    over = {key: max(got[key]) for key, n in expected.items() if max(got[key]) != n}
    assert not over, f"final counts differ from the input ({dict(expected)}): {over}"


def test_a_slow_backlog_does_not_starve_heartbeats(broker, tmp_path) -> None:
    rng = random.Random(9)
    create_topics(broker.bootstrap, {"crash-input": PARTITIONS})
    expected: dict[str, int] = defaultdict(int)
    # 2 ms per record (the app's peek): 4,000 buffered records would take 8 s in one go, past
    # the 6 s session timeout, if one iteration processed everything it had buffered.
    produce(broker.bootstrap, "crash-input", _records(rng, 4_000, expected, 0))
    config = {"max.poll.records": 1000, "buffered.records.per.partition": 1000}
    app = App(broker.bootstrap, "exactly_once_v2", tmp_path / "state", tmp_path / "app.log",
              config=config)
    try:
        def complete(records) -> bool:
            got = counts_by_key(records)
            return all(got.get(k) and max(got[k]) >= n for k, n in expected.items())

        records = read_all(broker.bootstrap, "crash-counts", until=complete, timeout=180,
                           quiet=0.5)
    finally:
        app.proc.send_signal(signal.SIGTERM)
        app.proc.wait(60)
    got = counts_by_key(records)
    for key, n in expected.items():
        assert got[key] == list(range(1, n + 1)), f"{key}: duplicates or gaps"
    output = app.output()
    assert output.count("STATE REBALANCING") == 1, output[-3000:]
    assert "session expired" not in output and "migrated" not in output, output[-3000:]
