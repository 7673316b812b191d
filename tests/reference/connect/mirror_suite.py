"""Interop of our MirrorMaker 2 with Apache Kafka's (connect-mirror 4.3.1), both ways, between
two of our brokers in separate processes:

- Kafka's RemoteClusterUtils (translateOffsets, upstreamClusters, replicationHops) reads the
  checkpoints and heartbeats our `streams mirror` writes, and agrees with `streams mirror
  translate`;
- our translation, OffsetSync and Heartbeat readers read what Kafka's MirrorMaker writes.

Run by `make mirror-reference` (jars from `make connect-reference`'s pom; skips with one line
without java or mvn).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import BrokerProcess, wait_until

from connect.mirror.formats import Checkpoint, Heartbeat, OffsetSync

from .. import connect as kconnect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mirror"))
from mirror_helpers import (  # noqa: E402
    MirrorProcess,
    consume_group,
    create_topic,
    produce,
    read_all,
    write_mm2,
)

pytestmark = pytest.mark.slow
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "MirrorTranslate.java"


@pytest.fixture(scope="module")
def translator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = kconnect.unavailable()
    if reason:
        pytest.skip(reason)
    if shutil.which("javac") is None:
        pytest.skip("the MirrorClient check needs javac on PATH")
    out = tmp_path_factory.mktemp("mirror-java")
    subprocess.run(["javac", "-cp", f"{kconnect.LIBS}/*", "-d", str(out), str(JAVA_SOURCE)],
                   check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    a = BrokerProcess(tmp_path / "a" / "data").start()
    try:
        b = BrokerProcess(tmp_path / "b" / "data").start()
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def kafka_client(classes: Path, bootstrap: str, source: str, group: str
                 ) -> tuple[dict[tuple[str, int], int], dict[str, int]]:
    """(offsets from RemoteClusterUtils.translateOffsets, {upstream cluster: hops})."""
    result = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{classes}:{kconnect.LIBS}/*", "MirrorTranslate",
         bootstrap, source, group], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    offsets, upstream = {}, {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["OFFSET"]:
            offsets[(parts[1], int(parts[2]))] = int(parts[3])
        elif parts[:1] == ["UPSTREAM"]:
            upstream[parts[1]] = int(parts[2])
    return offsets, upstream


def ours(config: Path, group: str) -> dict[tuple[str, int], int]:
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "mirror", "translate",
                             "--config", str(config), "--source", "A", "--target", "B",
                             "--group", group], capture_output=True, text=True, timeout=120)
    out = {}
    for line in result.stdout.splitlines()[1:]:
        _group, topic, partition, offset, _upstream = line.split()
        out[(topic, int(partition))] = int(offset)
    return out


def _values(count: int) -> list[tuple]:
    return [("payments", i % 2, f"k{i}".encode(), f"record-{i}".encode(), None, [])
            for i in range(count)]


def test_kafka_mirror_client_reads_our_checkpoints_and_heartbeats(
        tmp_path: Path, translator: Path, two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "payments", 2)
    produce(a.bootstrap, _values(400))
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = payments", "offset.lag.max = 20"])
    mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
    try:
        consume_group(a.bootstrap, "payments", "billing", 250)
        wait_until(lambda: len(ours(config, "billing")) == 2, 90, interval=1,
                   message="our checkpoints for both partitions")
        wait_until(lambda: "A.heartbeats" in {r.topic for r in read_all(b.bootstrap,
                                                                         "A.heartbeats")},
                   60, interval=1, message="A's heartbeats replicated to B")
        mine = ours(config, "billing")
        theirs, upstream = kafka_client(translator, b.bootstrap, "A", "billing")
        assert theirs == mine
        assert upstream.get("A") == 1  # B hears A one hop away, through our heartbeats
    finally:
        mirror.stop()


def test_our_translation_reads_kafka_mirror_maker(tmp_path: Path, translator: Path,
                                                  two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "payments", 2)
    produce(a.bootstrap, _values(400))
    factor = {key: 1 for key in (
        "replication.factor", "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
        "offset.storage.replication.factor", "status.storage.replication.factor",
        "config.storage.replication.factor")}
    kafka_props = kconnect.write_properties(tmp_path / "kafka-mm2.properties", {
        "clusters": "A, B", "A.bootstrap.servers": a.bootstrap,
        "B.bootstrap.servers": b.bootstrap, "A->B.enabled": "true", "A->B.topics": "payments",
        "B->A.enabled": "false", "sync.topic.acls.enabled": "false",
        "refresh.topics.interval.seconds": 2, "refresh.groups.interval.seconds": 2,
        "emit.checkpoints.interval.seconds": 1, "emit.heartbeats.interval.seconds": 1,
        "offset.lag.max": 20, "offset.flush.interval.ms": 500, **factor})
    our_config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                           ["A->B.enabled = true"])
    mm2 = kconnect.JavaProcess("mm2", tmp_path, "org.apache.kafka.connect.mirror.MirrorMaker",
                               str(kafka_props)).start()
    try:
        wait_until(lambda: len(read_all(b.bootstrap, "A.payments")) >= 400, 180, interval=1,
                   message="Kafka's MirrorMaker replicated A.payments")
        consume_group(a.bootstrap, "payments", "billing", 250)

        def both() -> bool:
            theirs, _ = kafka_client(translator, b.bootstrap, "A", "billing")
            return len(theirs) == 2 and theirs == ours(our_config, "billing")

        wait_until(both, 120, interval=2, message="Kafka's checkpoints, read alike by both")
        syncs = [OffsetSync.from_record(r.key, r.value)
                 for r in read_all(a.bootstrap, "mm2-offset-syncs.B.internal")]
        assert {(s.topic, s.partition) for s in syncs} >= {("payments", 0), ("payments", 1)}
        checkpoints = [Checkpoint.from_record(r.key, r.value)
                       for r in read_all(b.bootstrap, "A.checkpoints.internal")]
        assert {(c.group, c.topic) for c in checkpoints} == {("billing", "A.payments")}
        beats = [Heartbeat.from_record(r.key, r.value)
                 for r in read_all(b.bootstrap, "heartbeats")]
        assert ("A", "B") in {(h.source_alias, h.target_alias) for h in beats}
    finally:
        mm2.stop()
