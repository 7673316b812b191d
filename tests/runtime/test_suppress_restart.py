"""Suppressed windows survive a restart or a rebalance: the buffer comes back from its
changelog.

A windowed count + ``suppress(until_window_closes)`` (exactly_once_v2, 2 partitions) buffers
20 windows whose close time is not reached, and is stopped (SIGTERM) or killed (SIGKILL, its
state directory deleted so that everything comes from the changelog). A new instance then sees
stream time pass the windows' close on every partition: each of the 20 final counts must
arrive exactly once.
"""

from __future__ import annotations

import shutil
import signal
from collections import Counter
from pathlib import Path

import pytest
from helpers import RECENT_TS, wait_until

from streams import KafkaStreams
from streams.runtime import State

from .app_process import AppProcess
from .kafka_io import committed_offsets, create_topics, produce, read_all
from .suppress_app import APP_ID, GRACE_MS, WINDOW_MS, topology

SCRIPT = Path(__file__).with_name("suppress_app.py")
INPUT = "suppress-input"
KEYS = [f"k{i}" for i in range(5)]
WINDOWS = 4  # 5 keys x 4 windows = 20 windows


def start_app(bootstrap: str, state_dir: Path, log: Path) -> AppProcess:
    return AppProcess(SCRIPT, [bootstrap, str(state_dir)], log, state_dir=state_dir)


def buffer_changelog() -> str:
    (store,) = [s for s in topology().stores if s.startswith("KTABLE-SUPPRESS-STATE-STORE-")]
    return f"{APP_ID}-{store}-changelog"


def _windows() -> tuple[dict[str, int], list[tuple[bytes, bytes, int]]]:
    """Input for 20 windows (none of them closes) and each window's final count."""
    expected: dict[str, int] = {}
    records = []
    for w in range(WINDOWS):
        for i, key in enumerate(KEYS):
            n = 1 + (i + w) % 3
            expected[f"{key}@{RECENT_TS + w * WINDOW_MS}"] = n
            records += [(key.encode(), b"x", RECENT_TS + w * WINDOW_MS + 10 * j)
                        for j in range(n)]
    return expected, records


@pytest.mark.parametrize("stop", ["sigterm", "sigkill-and-wipe"])
def test_suppressed_windows_survive_a_restart(broker, tmp_path, stop) -> None:
    create_topics(broker.bootstrap, {"suppress-input": 2, "suppress-final": 2})
    expected, records = _windows()
    produce(broker.bootstrap, "suppress-input", records)
    state_dir = tmp_path / "state"

    first = start_app(broker.bootstrap, state_dir, tmp_path / "first.log")
    try:
        wait_until(first.running, timeout=60, message="first instance RUNNING")
        wait_until(lambda: sum(committed_offsets(broker.bootstrap, APP_ID, INPUT).values())
                   == len(records), timeout=60, message="every input record committed")
    finally:
        first.stop(signal.SIGTERM if stop == "sigterm" else signal.SIGKILL)
    if stop != "sigterm":
        shutil.rmtree(state_dir)
    assert read_all(broker.bootstrap, "suppress-final") == []  # no window has closed yet

    second = start_app(broker.bootstrap, state_dir, tmp_path / "second.log")
    try:
        wait_until(second.running, timeout=60, message="second instance RUNNING")
        late = RECENT_TS + (WINDOWS + 1) * WINDOW_MS + GRACE_MS  # past every window's close
        for partition in (0, 1):
            produce(broker.bootstrap, "suppress-input", [(b"tick", b"x", late)],
                    partition=partition)
        finals = read_all(broker.bootstrap, "suppress-final",
                          until=lambda rs: len({r.key for r in rs}) >= len(expected),
                          timeout=90, quiet=1.5)
    finally:
        second.stop()
    got = Counter(r.key.decode() for r in finals)
    assert [k for k, n in got.items() if n > 1] == [], "a final count arrived twice"
    assert {r.key.decode(): int.from_bytes(r.value, "big") for r in finals} == expected
    assert "CLOSED" in second.output()
    logged = read_all(broker.bootstrap, buffer_changelog())
    live = {}
    for r in logged:
        live[(r.partition, r.key)] = r.value
    # 20 windows buffered then emitted (tombstoned); only the ticks' open windows remain
    assert len(logged) >= 40
    assert sorted((p, k[:4]) for (p, k), v in live.items() if v is not None) == [
        (0, b"tick"), (1, b"tick")]


def test_suppressed_windows_follow_their_task_to_another_instance(broker, tmp_path) -> None:
    """A second instance joins and takes over a task (rebalance): it restores that task's
    buffer, and every window is emitted once, by whichever instance owns it."""
    create_topics(broker.bootstrap, {"suppress-input": 2, "suppress-final": 2})
    expected, records = _windows()
    produce(broker.bootstrap, "suppress-input", records)
    base = {"application.id": APP_ID, "bootstrap.servers": broker.bootstrap,
            "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 50}
    a = KafkaStreams(topology(), {**base, "state.dir": str(tmp_path / "a")})
    b = KafkaStreams(topology(), {**base, "state.dir": str(tmp_path / "b")})
    a.start()
    try:
        wait_until(lambda: sum(committed_offsets(broker.bootstrap, APP_ID, INPUT).values())
                   == len(records), timeout=60, message="every input record committed")
        b.start()
        wait_until(lambda: a.local_task_ids() and b.local_task_ids()
                   and a.state is State.RUNNING and b.state is State.RUNNING,
                   timeout=60, message="the tasks spread over both instances")
        for partition in (0, 1):
            produce(broker.bootstrap, "suppress-input",
                    [(b"tick", b"x", RECENT_TS + (WINDOWS + 1) * WINDOW_MS + GRACE_MS)],
                    partition=partition)
        finals = read_all(broker.bootstrap, "suppress-final",
                          until=lambda rs: len({r.key for r in rs}) >= len(expected),
                          timeout=90, quiet=1.5)
    finally:
        b.close(timeout=30)
        a.close(timeout=30)
    assert sorted(r.key.decode() for r in finals) == sorted(expected)  # each exactly once
    assert {r.key.decode(): int.from_bytes(r.value, "big") for r in finals} == expected
