"""How a source task's records reach the producer: batches of several partitions handed over
interleaved and in the background (at most ``buffer.memory`` bytes waiting), acks mapped back to
each record (commit_record's RecordMetadata) and offsets committed for the acked prefix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import create_topics, wait_until
from worker_helpers import consume_all, http, standalone, status_state

from streams.kafka.batching import _interleaved

COUNT = 6000
PARTITIONS = 4


def test_batches_are_handed_over_interleaved_in_partition_order() -> None:
    batches = [(("t", 0), "a0"), (("t", 0), "a1"), (("t", 0), "a2"), (("t", 1), "b0"),
               (("u", 0), "c0"), (("u", 0), "c1")]
    assert _interleaved(batches) == [(("t", 0), "a0"), (("t", 1), "b0"), (("u", 0), "c0"),
                                     (("t", 0), "a1"), (("u", 0), "c1"), (("t", 0), "a2")]


def _connector(tmp_path: Path, name: str, **extra: str) -> dict[str, Any]:
    return {"name": name, "connector.class": "tests.connect.seq_plugins.SeqSource",
            "tasks.max": "1", "topic": name, "count": str(COUNT),
            "partitions": str(PARTITIONS), "acks.file": str(tmp_path / f"{name}.acks"),
            "value.converter": "org.apache.kafka.connect.storage.StringConverter", **extra}


def test_every_record_lands_once_in_order_with_its_ack(tmp_path: Path, broker) -> None:
    """Small batches (many per partition per poll) and buffer.memory=1 (the loop waits for the
    hand-over after each poll): every record once, each partition in order, commit_record told
    the offset Kafka gave each record, and the committed offset is the end."""
    create_topics(broker.bootstrap, {"seq": PARTITIONS})
    connector = _connector(tmp_path, "seq", **{"producer.override.batch.size": "2048",
                                               "producer.override.buffer.memory": "1"})
    worker = standalone(tmp_path, broker.bootstrap, connectors=[connector],
                        **{"connector.client.config.override.policy": "All"})
    try:
        records = consume_all(broker.bootstrap, "seq", COUNT)
        assert sorted(int(r.value) for r in records) == list(range(COUNT))
        where = {}
        for partition in range(PARTITIONS):
            values = [int(r.value) for r in records if r.partition == partition]
            assert values == list(range(partition, COUNT, PARTITIONS))
            where.update({int(r.value): (r.partition, r.offset) for r in records
                          if r.partition == partition})
        wait_until(lambda: http("GET", f"{worker.url}/connectors/seq/offsets")[1] == {
            "offsets": [{"partition": {"source": "seq"}, "offset": {"next": COUNT}}]}, 30,
            message="the final offset committed")
        acks_file = tmp_path / "seq.acks"

        def acked() -> list[list[int]]:
            return json.loads(acks_file.read_text()) if acks_file.exists() else []

        wait_until(lambda: len(acked()) == COUNT, 30, message="commit_record for every record")
        assert {n: (partition, offset) for n, partition, offset in acked()} == where
    finally:
        worker.stop()


def test_a_task_that_fails_by_itself_is_stopped_once(tmp_path: Path, broker) -> None:
    """As Kafka's close(): a started task that fails in poll() gets stop() (to close what it
    opened), once."""
    create_topics(broker.bootstrap, {"failing": 1})
    stopped = tmp_path / "stopped"
    connector = _connector(tmp_path, "failing", **{"fail.after": "1000",
                                                   "stopped.file": str(stopped)})
    worker = standalone(tmp_path, broker.bootstrap, connectors=[connector])
    try:
        wait_until(lambda: status_state(worker.url, "failing")[1] == ["FAILED"], 30,
                   message="the task FAILED")
        _code, status = http("GET", f"{worker.url}/connectors/failing/status")
        assert "poll failed after 1000 records" in status["tasks"][0]["trace"]
        wait_until(stopped.exists, 30, message="stop() called")
        assert stopped.read_text() == "stopped\n"
    finally:
        worker.stop()
    assert stopped.read_text() == "stopped\n"  # not again when the worker stops
