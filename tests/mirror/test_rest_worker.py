"""The mirror connectors on an ordinary Connect worker, created through the REST API as in
Kafka (source/target cluster settings in the connector config, ByteArrayConverter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import RECENT_TS, free_port, wait_until
from mirror_helpers import create_topic, produce, read_all
from worker_helpers import WorkerProcess, http

from connect.mirror.formats import Heartbeat

pytestmark = pytest.mark.slow
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def test_connectors_through_rest_on_a_distributed_worker(tmp_path: Path, two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "clicks", 2)
    produce(a.bootstrap, [("clicks", i % 2, f"k{i}".encode(), f"click-{i}".encode(),
                           RECENT_TS + i, [("h", b"x")]) for i in range(100)])
    port = free_port()
    props = tmp_path / "worker.properties"
    props.write_text(
        f"bootstrap.servers={b.bootstrap}\nlisteners=http://127.0.0.1:{port}\n"
        "group.id=mm2-rest\nconfig.storage.topic=c\noffset.storage.topic=o\n"
        "status.storage.topic=s\nconfig.storage.replication.factor=1\n"
        "offset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n"
        "offset.storage.partitions=2\nstatus.storage.partitions=1\n"
        "offset.flush.interval.ms=500\n")
    url = f"http://127.0.0.1:{port}"
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "worker.log", url).start()
    try:
        common = {"source.cluster.alias": "A", "target.cluster.alias": "B",
                  "source.cluster.bootstrap.servers": a.bootstrap,
                  "target.cluster.bootstrap.servers": b.bootstrap,
                  "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES,
                  "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
                  "heartbeats.topic.replication.factor": "1"}
        code, body = http("PUT", f"{url}/connectors/mirror-source/config", {
            **common, "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "topics": "clicks"})
        assert code == 201, body
        code, body = http("PUT", f"{url}/connectors/heartbeats/config", {
            **common, "connector.class": "MirrorHeartbeat",
            "emit.heartbeats.interval.seconds": "1"})
        assert code == 201, body
        wait_until(lambda: len(read_all(b.bootstrap, "A.clicks")) >= 100, 90, interval=1,
                   message="A.clicks replicated by the REST-created connector")
        replica = read_all(b.bootstrap, "A.clicks")
        assert sorted((r.partition, r.offset, r.value, r.timestamp, tuple(r.headers))
                      for r in replica) == \
            sorted((r.partition, r.offset, r.value, r.timestamp, tuple(r.headers))
                   for r in read_all(a.bootstrap, "clicks"))
        wait_until(lambda: read_all(b.bootstrap, "heartbeats"), 60, message="heartbeats")
        beat = read_all(b.bootstrap, "heartbeats")[0]
        assert Heartbeat.from_record(beat.key, beat.value).source_alias == "A"
        code, plugins = http("GET", f"{url}/connector-plugins")
        names = {p["class"] for p in plugins}
        assert {"org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
                "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"} <= names
    finally:
        worker.stop()
