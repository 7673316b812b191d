"""`streams mirror` between two of our brokers (separate processes): records arrive exact (keys,
values incl. null, headers, timestamps, partitions), configs and partitions follow the source,
new topics are picked up, internal topics are Kafka's."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until
from mirror_helpers import (
    MirrorProcess,
    create_topic,
    list_topics,
    partition_count,
    produce,
    read_all,
    topic_overrides,
    write_mm2,
)

from connect.mirror.formats import Heartbeat, OffsetSync

pytestmark = pytest.mark.slow


def _records(topic: str, partitions: int, count: int, base_ts: int) -> list[tuple]:
    out = []
    for i in range(count):
        headers = [("h", f"v{i}".encode()), ("h", b"again")] if i % 3 == 0 else []
        key = None if i % 7 == 0 else f"k{i}".encode()
        value = None if i % 11 == 5 and key is not None else f"value-{i}".encode() * (1 + i % 4)
        out.append((topic, i % partitions, key, value, base_ts + i, headers))
    return out


def _view(records: list) -> list[tuple]:
    return sorted((r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
                  for r in records)


def test_records_configs_and_new_topics(tmp_path: Path, two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "orders", 3, {"retention.ms": "86400000",
                                            "min.insync.replicas": "1"})
    # Fresh timestamps: the topic keeps 1 day (later 1 hour), and the broker's first retention
    # pass comes 30 s after start.
    sent = _records("orders", 3, 300, int(time.time() * 1000) - 300)
    produce(a.bootstrap, sent)
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = orders, new-.*"])
    mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
    try:
        wait_until(lambda: len(read_all(b.bootstrap, "A.orders")) >= 300, 90, interval=1,
                   message="A.orders replicated")
        source, replica = read_all(a.bootstrap, "orders"), read_all(b.bootstrap, "A.orders")
        assert _view(replica) == _view(source)  # same partition, offset, key, value, ts, headers
        assert partition_count(b.bootstrap, "A.orders") == 3
        overrides = topic_overrides(b.bootstrap, "A.orders")
        assert overrides.get("retention.ms") == "86400000"
        assert "min.insync.replicas" not in overrides  # Kafka's default exclusion

        # A config change upstream follows; a new topic matching the list is picked up.
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        from mirror_helpers import admin_call
        admin_call(a.bootstrap, lambda ad: ad.alter_configs([ConfigResource(
            ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "3600000"})]))
        create_topic(a.bootstrap, "new-events", 2)
        produce(a.bootstrap, _records("new-events", 2, 50, int(time.time() * 1000) - 50))
        create_topic(a.bootstrap, "ignored", 1)
        produce(a.bootstrap, _records("ignored", 1, 5, int(time.time() * 1000) - 5))
        wait_until(lambda: len(read_all(b.bootstrap, "A.new-events")) >= 50, 90, interval=1,
                   message="new topic replicated")
        assert _view(read_all(b.bootstrap, "A.new-events")) == \
            _view(read_all(a.bootstrap, "new-events"))
        wait_until(lambda: topic_overrides(b.bootstrap, "A.orders").get("retention.ms")
                   == "3600000", 60, interval=1, message="config change synced")
        topics = list_topics(b.bootstrap)
        assert "A.ignored" not in topics
        assert {"mm2-offset-syncs.B.internal", "A.checkpoints.internal", "heartbeats"} <= \
            topics | list_topics(a.bootstrap)
        # Heartbeats and offset syncs are in Kafka's format.
        wait_until(lambda: read_all(b.bootstrap, "heartbeats"), 30, message="heartbeats")
        beat = Heartbeat.from_record(read_all(b.bootstrap, "heartbeats")[0].key,
                                     read_all(b.bootstrap, "heartbeats")[0].value)
        assert (beat.source_alias, beat.target_alias) == ("A", "B")
        syncs = [OffsetSync.from_record(r.key, r.value)
                 for r in read_all(a.bootstrap, "mm2-offset-syncs.B.internal")]
        assert {(s.topic, s.partition) for s in syncs} >= {("orders", p) for p in range(3)}
        assert all(s.upstream_offset == s.downstream_offset for s in syncs)
        # Kafka's MM2 metric names on the process's /metrics.
        url = re.search(r"metrics on (http://\S+)", mirror.log()).group(1)
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        counts = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith("kafka_connect_mirror_source_connector_record_count")
                  and 'topic="A.orders"' in line]
        assert sum(counts) >= 300, text[-2000:]
        for name in ("record_age_ms", "replication_latency_ms", "byte_rate"):
            assert f"kafka_connect_mirror_source_connector_{name}" in text
    finally:
        mirror.stop()
    assert "Traceback" not in mirror.log()
