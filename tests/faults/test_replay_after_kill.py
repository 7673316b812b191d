"""Input replayed after a crash under at_least_once is processed again, never dropped as late.

Soak seed 4250 (session windows, at_least_once, a broker outage) lost 29 sessions: after the
outage the restarted tasks took the stream time of their restored stores, which had got
further than the committed input (the changelog runs ahead of the offsets under
at_least_once), and dropped the replayed records as late, although their effect had never
reached the output. Kafka's aggregations restart their stream time from nothing; only the
store keeps its own and hides what is older than its retention, so a replayed record of a
hidden session is counted again in a session rebuilt from the replay (compare.py accepts
exactly those pieces).

Here one instance counts sessions with no commit after its start (commit.interval.ms 10
minutes), so everything it processed is replayed: SIGKILLed once it has forwarded output
while input flows, restarted on the same state directory with the default interval, more
input. The output must hold every session (pieces allowed), the replay must really have
happened (pieces or over-counted sessions), and no record may be dropped as late.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from runtime.kafka_io import create_topics, read_all

from .catalogue import PARTITIONS, SCENARIOS
from .cluster import Cluster
from .compare import compare
from .harness import _decoder, _produce, input_times, late_drops
from .oracle import expected_output
from .output import read_output

SCENARIO = SCENARIOS["session"]
NO_COMMIT = ["--commit-ms", "600000"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_records_replayed_after_a_kill_are_counted_again(tmp_path: Path) -> None:
    plan = SCENARIO.generate(random.Random(4250), 6, 150)
    expected = expected_output(SCENARIO, plan)
    base = ["--scenario", "session", "--guarantee", "at_least_once", "--cache-bytes", "0",
            "--record-delay-ms", "1"]
    cluster = Cluster(tmp_path, [*base, *NO_COMMIT])
    decode = _decoder(SCENARIO)
    inputs = input_times(plan)
    try:
        cluster.start_broker()
        bootstrap = cluster.bootstrap
        create_topics(bootstrap, {"session-input": PARTITIONS, "session-output": PARTITIONS})
        app = cluster.add_instance()
        cluster.wait_running()
        chunks = iter(plan.chunks)
        _produce(bootstrap, SCENARIO, next(chunks))
        feeder = threading.Thread(  # input keeps coming while the instance dies
            target=lambda: [_produce(bootstrap, SCENARIO, next(chunks)) for _ in range(2)])
        feeder.start()
        read_all(bootstrap, "session-output", isolation="read_uncommitted",
                 until=lambda records: len(records) >= 200, timeout=60, quiet=0)
        app.kill()
        feeder.join()
        app.args = [*base, "--bootstrap", bootstrap]  # Kafka's commit interval from now on
        app.start()
        cluster.wait_running()
        for chunk in chunks:
            _produce(bootstrap, SCENARIO, chunk)
        read = read_output(
            bootstrap, "session-output", isolation="read_uncommitted", group="faults-session",
            input_topics=["session-input"],
            done=lambda records: compare(SCENARIO, expected, decode(records), "at_least_once",
                                         False, None, inputs).ok)
    finally:
        cluster.close()
    result = compare(SCENARIO, expected, decode(read.records), "at_least_once", False, None,
                     inputs)
    assert result.ok, result.summary()
    assert result.pieces + result.overcount > 0, "nothing was replayed: the fault missed"
    assert late_drops(cluster) == []
