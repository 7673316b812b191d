"""Exactly-once with the record cache on: SIGKILLed at random moments and restarted, a
counting app must still never emit a count twice nor lose one from its final state.

With the cache, intermediate counts may be skipped (that is the point of it), so per key the
committed output must be strictly increasing and end at the exact count."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from helpers import wait_until

from .kafka_io import create_topics, produce, read_all
from .test_crash_runtime import CHUNK, KEYS, SCRIPT, counts_by_key


def start_app(bootstrap: str, state_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(Path(__file__).parents[2]))
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, str(SCRIPT), bootstrap, "exactly_once_v2",
                                 str(state_dir), str(10 * 1024 * 1024)],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def running(proc: subprocess.Popen[bytes], log: Path) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"app exited with {proc.returncode}:\n{log.read_text()}")
    return "STATE RUNNING" in log.read_text(errors="replace")


def test_cached_counts_survive_sigkill_exactly_once(broker, tmp_path) -> None:
    rng = random.Random(11)
    create_topics(broker.bootstrap, {"crash-input": 2})
    expected: dict[str, int] = defaultdict(int)
    state_dir = tmp_path / "state"

    def produce_chunk(index: int) -> None:
        records = []
        for i in range(CHUNK):
            key = KEYS[rng.randrange(len(KEYS))]
            expected[key] += 1
            records.append((key.encode(), b"x", 1_000 * index + i))
        produce(broker.bootstrap, "crash-input", records)

    for run in range(3):
        produce_chunk(run)
        log = tmp_path / f"app-{run}.log"
        proc = start_app(broker.bootstrap, state_dir, log)
        try:
            wait_until(lambda p=proc, lg=log: running(p, lg), timeout=60,
                       message=f"run {run} RUNNING")
            time.sleep(rng.uniform(0.1, 0.8))  # the crash moment (random), not a wait
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    produce_chunk(3)
    log = tmp_path / "app-final.log"
    final = start_app(broker.bootstrap, state_dir, log)
    try:
        wait_until(lambda: running(final, log), timeout=60, message="final run RUNNING")

        def complete(records) -> bool:
            got = counts_by_key(records)
            return all(got.get(k) and max(got[k]) >= n for k, n in expected.items())

        records = read_all(broker.bootstrap, "crash-counts", until=complete, timeout=120,
                           quiet=1.0)
    finally:
        final.send_signal(signal.SIGTERM)
        final.wait(60)
    got = counts_by_key(records)
    assert set(got) == set(expected)
    for key, n in expected.items():
        counts = got[key]
        assert all(a < b for a, b in zip(counts, counts[1:], strict=False)), \
            f"{key}: a count repeated or went back: {counts}"
        assert counts[-1] == n, f"{key}: ended at {counts[-1]}, expected {n}"
    assert len(records) < sum(expected.values())  # the cache did deduplicate
    assert "CLOSED" in log.read_text()
