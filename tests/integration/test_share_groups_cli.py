"""`streams share-groups` (as kafka-share-groups.sh) against our broker: describe shows each
share-partition's start offset and lag after a ShareConsumer accepted some records; reset-offsets
is refused while the group has a member, then moves the start offsets (and the records are
delivered again); delete-offsets and delete remove the state and the group."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer, ShareConsumer
from helpers import EmbeddedBroker, create_topics, wait_until

from streams.broker.groups.protocols import GroupType


def _cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", "share-groups", *args,
                           "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=60)


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.startswith("sg ")]


def test_share_groups_describe_reset_and_delete(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    consumer: ShareConsumer | None = None
    try:
        create_topics(broker.bootstrap, {"q": 2})
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce("q", str(i).encode(), partition=0)
        producer.flush()
        consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "sg",
                                  "share.acknowledgement.mode": "explicit"})
        consumer.subscribe(["q"])
        missing = _cli(broker.bootstrap, "describe", "nothing")
        assert missing.returncode == 1
        assert missing.stderr.strip().endswith("share group 'nothing' does not exist")

        def initialized() -> bool:  # latest: the first fetch starts both partitions at the end
            assert not list(consumer.poll(0.2))  # type: ignore[union-attr]
            protocol = broker.call(lambda: broker.broker.groups.protocol(GroupType.SHARE))  # type: ignore[union-attr]
            return len(broker.call(lambda: dict(protocol.partitions))) == 2
        wait_until(initialized, 30, message="both share-partitions initialized")
        described = _cli(broker.bootstrap, "describe", "sg")
        assert described.returncode == 0, described.stderr
        assert "Stable with 1 member(s)" in described.stdout
        assert _rows(described.stdout) == [["sg", "q", "0", "10", "0"], ["sg", "q", "1", "0", "0"]]
        other = subprocess.run([sys.executable, "-m", "streams.cli.main", "groups", "describe",
                                "sg", "--bootstrap-server", broker.bootstrap],
                               capture_output=True, text=True, timeout=60)
        assert other.returncode == 1
        assert "'sg' is a share group: streams share-groups describe sg" in other.stderr
        members = _cli(broker.bootstrap, "describe", "sg", "--members")
        assert members.returncode == 0 and "q:0,q:1" in members.stdout, members.stdout

        refused = _cli(broker.bootstrap, "reset-offsets", "--group", "sg", "--topic", "q:0",
                       "--to-earliest", "--execute")
        assert refused.returncode == 1 and "is not empty" in refused.stderr, refused.stderr
        consumer.close()
        consumer = None

        def empty() -> bool:
            return "Empty" in _cli(broker.bootstrap, "describe", "sg", "--state").stdout
        wait_until(empty, 60, message="the group empty after close")
        plan = _cli(broker.bootstrap, "reset-offsets", "--group", "sg", "--all-topics",
                    "--to-offset", "4", "--dry-run")
        assert plan.returncode == 0, plan.stderr
        assert _rows(plan.stdout) == [["sg", "q", "0", "4"], ["sg", "q", "1", "0"]]
        assert _rows(_cli(broker.bootstrap, "describe", "sg").stdout)[0] == [
            "sg", "q", "0", "10", "0"]  # a dry run changes nothing
        done = _cli(broker.bootstrap, "reset-offsets", "--group", "sg", "--topic", "q:0",
                    "--to-offset", "4", "--execute")
        assert done.returncode == 0, done.stderr
        assert _rows(_cli(broker.bootstrap, "describe", "sg").stdout)[0] == [
            "sg", "q", "0", "4", "6"]

        consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "sg"})
        consumer.subscribe(["q"])
        again: list[int] = []

        def redelivered() -> bool:
            again.extend(int(m.value()) for m in consumer.poll(0.3))  # type: ignore[union-attr]
            return len(again) >= 6
        wait_until(redelivered, 30, message="records 4..9 delivered again after the reset")
        assert sorted(again) == list(range(4, 10))
        consumer.close()
        consumer = None
        wait_until(empty, 60, message="the group empty after close")

        deleted = _cli(broker.bootstrap, "delete-offsets", "--group", "sg", "--topic", "q",
                       "--topic", "nope")
        assert deleted.returncode == 1, deleted.stdout
        assert "q" in deleted.stdout and "Successful" in deleted.stdout
        assert "This server does not host this topic-partition." in deleted.stdout
        assert _rows(_cli(broker.bootstrap, "describe", "sg").stdout) == []
        gone = _cli(broker.bootstrap, "delete", "--group", "sg")
        assert gone.returncode == 0, gone.stderr
        assert "sg" not in _cli(broker.bootstrap, "list").stdout.split()
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
