"""Kafka Streams 4.4 itself in the pause scenario, on our bundled broker, under exactly_once_v2.

Two Kafka Streams instances (java/PauseCountApp.java, the fault harness's count topology) count
input that keeps flowing while each JVM in turn is stopped with SIGSTOP past
session.timeout.ms (tests/faults/pause_feed.py --framework kafka-streams). Their transactions
must be fenced by our broker's group and transaction coordinators exactly as Apache Kafka
fences them: every key's final count read with read_committed equals the records sent for it,
none short and none over. It is also a compatibility check of the broker with the Java
clients' transactional and group paths under pauses. The full runs (14 s pauses, three rounds,
both guarantees, both brokers) are in docs/kafka-differences.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import reference_unavailable

from tests.faults.pause_feed import PausePlan, run_pause_feed

# The CI shape of tests/faults/test_faults.py's pause test: one round of 8 s pauses back to
# back (session.timeout.ms is 6 s) while 100 records every 0.25 s flow over 50 keys.
PLAN = PausePlan(seed=7, keys=50, batch=100, interval_s=0.25, rounds=1, hold_s=8.0, gap_s=1.0,
                 settle=False, framework="kafka-streams")


@pytest.mark.timeout(300)
def test_kafka_streams_counts_survive_pauses_on_our_broker(tmp_path: Path) -> None:
    reason = reference_unavailable("Kafka Streams 4.4")
    if reason:
        pytest.skip(reason)
    result = run_pause_feed(PLAN, tmp_path, "bundled")
    print(result.report())
    assert result.records_sent > 0 and result.pauses == 2
    short = [(key, sent, count) for key, sent, count in result.wrong_keys
             if (count or 0) < sent]
    assert not short, f"keys short:\n{result.report()}"
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.pause_feed --framework kafka-streams --seed 7 --keys 50 "
                       f"--batch 100 --rounds 1 --hold 8 --gap 1 --no-settle")
