"""Fail-over: a group moves from A to B at the translated offsets and, with what it read on A,
sees every record (re-reading at most offset.lag.max per partition). Crashes of `streams
mirror` are in crash_suite.py (`make test-mirror`)."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until
from mirror_helpers import (
    MirrorProcess,
    admin_call,
    consume_group,
    create_topic,
    produce,
    read_all,
    write_mm2,
)

from connect.mirror.formats import Checkpoint

pytestmark = pytest.mark.slow

LAG_MAX = 20


def _values(topic: str, partitions: int, start: int, count: int) -> list[tuple]:
    return [(topic, i % partitions, f"k{i}".encode(), f"record-{i}".encode(), None, [])
            for i in range(start, start + count)]


def _committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    async def fetch(admin):  # noqa: ANN001, ANN202
        offsets = await admin.list_consumer_group_offsets(group)
        return {(tp.topic, tp.partition): m.offset for tp, m in offsets.items() if m.offset >= 0}

    return admin_call(bootstrap, fetch)


def _translate(config: Path, group: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", "mirror", "translate",
                           "--config", str(config), "--source", "A", "--target", "B",
                           "--group", group], capture_output=True, text=True, timeout=120)


def test_group_fails_over_to_translated_offsets(tmp_path: Path, two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "payments", 2)
    produce(a.bootstrap, _values("payments", 2, 0, 400))
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap}, [
        "A->B.enabled = true", "A->B.topics = payments", f"offset.lag.max = {LAG_MAX}",
        "sync.group.offsets.enabled = true", "sync.group.offsets.interval.seconds = 1"])
    mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
    try:
        # The group reads part of the topic on A, commits, and stops (the "disaster").
        read_on_a = consume_group(a.bootstrap, "payments", "billing", 230)
        assert len(read_on_a) == 230
        committed = _committed(a.bootstrap, "billing")
        produce(a.bootstrap, _values("payments", 2, 400, 100))  # more arrives meanwhile
        wait_until(lambda: len(read_all(b.bootstrap, "A.payments")) >= 500, 90, interval=1,
                   message="A.payments replicated")

        # translate prints the checkpoints: both partitions, the committed upstream offsets.
        def translated() -> dict[int, tuple[int, int]]:
            result = _translate(config, "billing")
            rows = {}
            for line in result.stdout.splitlines()[1:]:
                _group, topic, partition, offset, upstream = line.split()
                assert topic == "A.payments"
                rows[int(partition)] = (int(offset), int(upstream))
            return rows

        wait_until(lambda: {p: u for p, (_o, u) in translated().items()}
                   == {p: o for (_t, p), o in committed.items()}, 90, interval=1,
                   message="checkpoints of the committed offsets")
        rows = translated()
        for offset, upstream in rows.values():
            # Same offsets on both sides here: translation may only go back, by <= lag max.
            assert upstream - LAG_MAX <= offset <= upstream
        # Kafka's format on the wire: the checkpoint records decode as Kafka's Checkpoint.
        raw = read_all(b.bootstrap, "A.checkpoints.internal")
        assert {Checkpoint.from_record(r.key, r.value).group for r in raw} == {"billing"}

        url = re.search(r"metrics on (http://\S+)", mirror.log()).group(1)
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms" in text
        assert 'group="billing"' in text

        # sync.group.offsets.enabled: the group's offsets are on B before it ever ran there.
        wait_until(lambda: _committed(b.bootstrap, "billing")
                   == {("A.payments", p): o for p, (o, _u) in rows.items()}, 60, interval=1,
                   message="group offsets synced to B")

        # Fail over: the same group on B reads the rest of the replica.
        read_on_b = consume_group(b.bootstrap, "A.payments", "billing", None)
        seen_a = [m.value for m in read_on_a]
        seen_b = [m.value for m in read_on_b]
        everything = {f"record-{i}".encode() for i in range(500)}
        assert set(seen_a) | set(seen_b) == everything  # nothing skipped
        duplicates = len(seen_a) + len(seen_b) - len(everything)
        assert 0 <= duplicates <= 2 * LAG_MAX  # at most offset.lag.max per partition
        # A group active on B is left alone: its offsets move only by its own commits.
        before = _committed(b.bootstrap, "billing")
        assert before == {("A.payments", p): 250 for p in range(2)}
    finally:
        mirror.stop()
    assert "Traceback" not in mirror.log()
