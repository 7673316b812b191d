"""Zombies under exactly_once_v2: an instance paused (SIGSTOP) past its session timeout wakes up
with records buffered and a transaction open, in a group that has moved on without it.

It must commit nothing stale: its TxnOffsetCommit carries its old generation and member id
(KIP-447), so the group coordinator fences it, it aborts and rejoins. Two instances take turns
being paused, five cycles; the committed output must be, per key, exactly 1, 2, ..., n.
"""

from __future__ import annotations

import random
import signal
import time

import pytest
from helpers import wait_until

from .kafka_io import create_topics, read_all
from .test_crash_runtime import App, CountingInput

CYCLES = 5
PAUSE_SECONDS = 9.0  # past the apps' 6 s session timeout: the fault itself, not a wait
CHUNK = 300


@pytest.mark.on_kafka
def test_paused_instances_commit_nothing_stale(broker, tmp_path) -> None:
    rng = random.Random(11)  # the moments of the pauses
    create_topics(broker.bootstrap, {"crash-input": 4})
    counting = CountingInput(broker.bootstrap, seed=11, chunk=CHUNK)
    produce_chunk, caught_up = counting.produce_chunk, counting.caught_up

    apps = [App(broker.bootstrap, "exactly_once_v2", tmp_path / f"state-{i}",
                tmp_path / f"app-{i}.log") for i in range(2)]
    try:
        for app in apps:
            wait_until(app.running, timeout=60, message="both instances RUNNING")
        for cycle in range(CYCLES):
            victim = apps[cycle % 2]
            produce_chunk()
            time.sleep(rng.uniform(0.05, 0.4))  # the moment of the pause (random), not a wait
            victim.proc.send_signal(signal.SIGSTOP)
            try:
                produce_chunk()
                time.sleep(PAUSE_SECONDS)
            finally:
                victim.proc.send_signal(signal.SIGCONT)
            read_all(broker.bootstrap, "crash-counts", until=caught_up, timeout=120, quiet=0)
        records = read_all(broker.bootstrap, "crash-counts", until=caught_up, timeout=120,
                           quiet=3.0)
    finally:
        for app in apps:
            app.proc.send_signal(signal.SIGCONT)
            app.proc.send_signal(signal.SIGTERM)
        for app in apps:
            app.proc.wait(60)
    wrong = counting.wrong_sequences(records)
    assert not wrong, f"duplicates or gaps (last counts, expected n): {wrong}"
    for app in apps:
        assert "CLOSED" in app.output(), app.output()[-3000:]
