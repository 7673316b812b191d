"""Exactly-once under SIGKILL: a counting app is killed at random moments and restarted.

The committed output (read_committed) must be, per key, exactly the counts 1, 2, ..., n in
order: a duplicate would repeat or skip a count, a loss would end below n. Under
at_least_once nothing may be lost (every count up to n appears; duplicates are allowed). With
the record cache on, intermediate counts may be skipped (that is its point), so per key the
exactly-once output must be strictly increasing and end at the exact count.
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import RECENT_TS, wait_until

from .app_process import AppProcess
from .kafka_io import create_topics, produce, read_all

SCRIPT = Path(__file__).with_name("counting_app.py")
KEYS = [f"key{i}" for i in range(8)]
CHUNK = 400
KILLS = 4


class App(AppProcess):
    """counting_app.py in its own process."""

    def __init__(self, bootstrap: str, guarantee: str, state_dir: Path, log: Path,
                 cache_max_bytes: int = 0, config: dict | None = None) -> None:
        super().__init__(SCRIPT, [bootstrap, guarantee, str(state_dir), str(cache_max_bytes)],
                         log, env={"COUNTING_APP_CONFIG": json.dumps(config or {})},
                         state_dir=state_dir)


class CountingInput:
    """Random keys into ``crash-input`` in chunks, remembering how many each key got; the
    counting app's output is complete once every key's count reached that number."""

    def __init__(self, bootstrap: str, seed: int, chunk: int) -> None:
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.chunk = chunk
        self.expected: dict[str, int] = defaultdict(int)
        self.sent = 0

    def produce_chunk(self) -> None:
        records = []
        for _ in range(self.chunk):
            key = KEYS[self.rng.randrange(len(KEYS))]
            self.expected[key] += 1
            records.append((key.encode(), b"x", RECENT_TS + self.sent))
            self.sent += 1
        produce(self.bootstrap, "crash-input", records)

    def caught_up(self, records) -> bool:
        got = counts_by_key(records)
        return all(got.get(k) and max(got[k]) >= n for k, n in self.expected.items())

    def wrong_sequences(self, records) -> dict[str, tuple[list[int], int]]:
        """Keys whose counts are not exactly 1, 2, ..., n (a duplicate or a gap)."""
        got = counts_by_key(records)
        return {key: (got.get(key, [])[-10:], n) for key, n in self.expected.items()
                if got.get(key) != list(range(1, n + 1))}


def counts_by_key(records) -> dict[str, list[int]]:
    result: dict[str, list[int]] = defaultdict(list)
    for r in records:
        result[r.key.decode()].append(int.from_bytes(r.value, "big"))
    return result


@pytest.mark.parametrize(("guarantee", "cache_max_bytes"), [
    ("exactly_once_v2", 0), ("at_least_once", 0), ("exactly_once_v2", 10 * 1024 * 1024)])
def test_counting_survives_sigkill(broker, tmp_path, guarantee, cache_max_bytes) -> None:
    rng = random.Random(42 if guarantee == "exactly_once_v2" else 7)
    create_topics(broker.bootstrap, {"crash-input": 2})
    expected: dict[str, int] = defaultdict(int)
    state_dir = tmp_path / "state"

    def produce_chunk(index: int) -> None:
        records = []
        for i in range(CHUNK):
            key = KEYS[rng.randrange(len(KEYS))]
            expected[key] += 1
            records.append((key.encode(), b"x", RECENT_TS + 1_000 * index + i))
        produce(broker.bootstrap, "crash-input", records)

    for run in range(KILLS):
        produce_chunk(run)
        app = App(broker.bootstrap, guarantee, state_dir, tmp_path / f"app-{run}.log",
                  cache_max_bytes)
        try:
            wait_until(app.running, timeout=60, message=f"run {run} RUNNING")
            time.sleep(rng.uniform(0.1, 0.8))  # the crash moment (random), not a wait
        finally:
            app.kill()

    produce_chunk(KILLS)
    final = App(broker.bootstrap, guarantee, state_dir, tmp_path / "app-final.log",
                cache_max_bytes)
    try:
        wait_until(final.running, timeout=60, message="final run RUNNING")
        total = sum(expected.values())

        def complete(records) -> bool:
            got = counts_by_key(records)
            return all(got.get(k) and max(got[k]) >= n for k, n in expected.items())

        records = read_all(broker.bootstrap, "crash-counts", until=complete, timeout=120,
                           quiet=1.0)
    finally:
        final.stop()
    got = counts_by_key(records)
    assert set(got) == set(expected)
    if cache_max_bytes:
        for key, n in expected.items():
            counts = got[key]
            assert all(a < b for a, b in zip(counts, counts[1:], strict=False)), \
                f"{key}: a count repeated or went back: {counts}"
            assert counts[-1] == n, f"{key}: ended at {counts[-1]}, expected {n}"
        assert len(records) < total  # the cache did deduplicate
    elif guarantee == "exactly_once_v2":
        for key, n in expected.items():
            assert got[key] == list(range(1, n + 1)), f"{key}: duplicates or gaps"
        assert len(records) == total
    else:
        for key, n in expected.items():
            assert set(range(1, n + 1)) <= set(got[key]), f"{key}: lost updates"
    assert "CLOSED" in final.output()


def test_survivor_takes_over_the_tasks_and_state_of_a_killed_instance(broker, tmp_path) -> None:
    """Two processes share the tasks; one is SIGKILLed; the other restores its state from the
    changelog and the final counts are exact (exactly_once_v2)."""
    rng = random.Random(3)
    create_topics(broker.bootstrap, {"crash-input": 4})
    expected: dict[str, int] = defaultdict(int)

    def produce_chunk(index: int) -> None:
        records = []
        for i in range(CHUNK):
            key = KEYS[rng.randrange(len(KEYS))]
            expected[key] += 1
            records.append((key.encode(), b"x", RECENT_TS + 1_000 * index + i))
        produce(broker.bootstrap, "crash-input", records)

    produce_chunk(0)
    first = App(broker.bootstrap, "exactly_once_v2", tmp_path / "state-a", tmp_path / "a.log")
    second = App(broker.bootstrap, "exactly_once_v2", tmp_path / "state-b", tmp_path / "b.log")
    try:
        wait_until(lambda: first.running() and second.running(), timeout=60,
                   message="both instances RUNNING")
        wait_until(lambda: all(any((tmp_path / d / "crash-app").glob("*_*"))
                               for d in ("state-a", "state-b")),
                   timeout=60, message="both instances own tasks")
        second.kill()
        produce_chunk(1)

        def complete(records) -> bool:
            got = counts_by_key(records)
            return all(got.get(k) and max(got[k]) >= n for k, n in expected.items())

        records = read_all(broker.bootstrap, "crash-counts", until=complete, timeout=120,
                           quiet=1.0)
    finally:
        for app in (first, second):
            app.stop()
    got = counts_by_key(records)
    for key, n in expected.items():
        assert got[key] == list(range(1, n + 1)), f"{key}: duplicates or gaps"
    # the survivor now holds state for every task, including the ones it took over
    assert {p.name for p in (tmp_path / "state-a" / "crash-app").glob("*_*")} == {
        "0_0", "0_1", "0_2", "0_3"}
