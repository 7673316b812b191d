"""`streams mirror` with Apache Kafka 4.4 on either side (tests/reference/kafka.py, one KRaft
node in its own JVM): our broker -> Apache Kafka and Apache Kafka -> our broker, records exact
(keys, values, headers, timestamps, partitions), configs synced, a new topic picked up. Run by
`make mirror-reference`; skips with one line without java/mvn."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import BrokerProcess, ReferenceKafka, reference_unavailable, wait_until
from mirror_helpers import (
    MirrorProcess,
    create_topic,
    partition_count,
    produce,
    read_all,
    topic_overrides,
    write_mm2,
)

pytestmark = pytest.mark.slow


def _records(topic: str, partitions: int, count: int, base_ts: int) -> list[tuple]:
    out = []
    for i in range(count):
        headers = [("trace", f"t{i}".encode()), ("trace", b"again")] if i % 3 == 0 else []
        key = None if i % 7 == 0 else f"k{i}".encode()
        value = None if i % 11 == 5 and key is not None else f"value-{i}".encode()
        out.append((topic, i % partitions, key, value, base_ts + i, headers))
    return out


def _view(records: list) -> list[tuple]:
    return sorted((r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
                  for r in records)


@pytest.mark.parametrize("kafka_side", ["target", "source"])
def test_between_our_broker_and_apache_kafka(tmp_path: Path, kafka_side: str) -> None:
    reason = reference_unavailable("MirrorMaker with Apache Kafka")
    if reason:
        pytest.skip(reason)
    ours = BrokerProcess(tmp_path / "ours" / "data").start()
    kafka = None
    mirror = None
    try:
        kafka = ReferenceKafka(tmp_path / "kafka").start()
        a, b = (ours, kafka) if kafka_side == "target" else (kafka, ours)
        create_topic(a.bootstrap, "orders", 3, {"retention.ms": "86400000"})
        # Fresh timestamps: the topic keeps 1 day, and retention passes start 30 s after start.
        produce(a.bootstrap, _records("orders", 3, 200, int(time.time() * 1000) - 200))
        config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                           ["A->B.enabled = true", "A->B.topics = orders, new-.*"])
        mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
        wait_until(lambda: len(read_all(b.bootstrap, "A.orders")) >= 200, 120, interval=1,
                   message="A.orders replicated")
        assert _view(read_all(b.bootstrap, "A.orders")) == _view(read_all(a.bootstrap, "orders"))
        assert partition_count(b.bootstrap, "A.orders") == 3
        assert topic_overrides(b.bootstrap, "A.orders").get("retention.ms") == "86400000"
        create_topic(a.bootstrap, "new-events", 2)
        produce(a.bootstrap, _records("new-events", 2, 40, int(time.time() * 1000) - 40))
        wait_until(lambda: len(read_all(b.bootstrap, "A.new-events")) >= 40, 120, interval=1,
                   message="a new topic picked up")
        assert _view(read_all(b.bootstrap, "A.new-events")) == \
            _view(read_all(a.bootstrap, "new-events"))
    finally:
        if mirror is not None:
            mirror.stop()
        if kafka is not None:
            kafka.stop()
        ours.stop()
