"""KIP-848 consumer groups end to end: confluent-kafka consumers with
``group.protocol=consumer`` join and leave while records flow; every record is consumed and the
final committed offsets reach the end of every partition."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from flowing_records import FlowingRecords
from helpers import EmbeddedBroker, create_topics, wait_until

TOPIC, PARTITIONS = "kip848", 6


def consumer(bootstrap: str, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g848",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "client.id": name, "enable.auto.commit": False})
    c.subscribe([TOPIC])
    return c


def test_consumers_joining_and_leaving_while_records_flow(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path, group_consumer_heartbeat_interval_ms=300,
                            group_consumer_session_timeout_ms=6000).start()
    try:
        bootstrap = broker.bootstrap
        create_topics(bootstrap, {TOPIC: PARTITIONS})
        flow = FlowingRecords(bootstrap, TOPIC, PARTITIONS, flush_every=50)
        flow.writer.start()
        stops = [threading.Event() for _ in range(3)]
        readers: list[threading.Thread] = []
        try:
            _scenario(bootstrap, stops, readers, flow)
        finally:
            flow.stop_producing.set()
            for stop in stops:
                stop.set()
            for thread in [flow.writer, *readers]:
                thread.join(30)

        assert set(flow.produced) == flow.seen and len(flow.produced) > 500
        committed, ends = flow.committed_and_ends("g848")
        assert committed == ends
        assert all("STALE_MEMBER_EPOCH" in e or "UNKNOWN_MEMBER_ID" in e
                   for e in flow.commit_errors), flow.commit_errors
    finally:
        broker.stop()


def _scenario(bootstrap: str, stops: list[threading.Event], readers: list[threading.Thread],
              flow: FlowingRecords) -> None:
    for index, stop in enumerate(stops):  # join one by one while records flow
        readers.append(threading.Thread(
            target=flow.consume, args=(consumer(bootstrap, f"c{index}"), stop)))
        readers[-1].start()
        wait_until(lambda n=index: _members(bootstrap) == n + 1, 30,
                   message=f"{index + 1} member(s) in the group")
    wait_until(lambda: len(flow.seen) > 500, 30, message="records consumed")
    stops[0].set()  # one leaves, then another, while the producer keeps going
    readers[0].join(30)
    wait_until(lambda: _members(bootstrap) == 2, 30, message="2 members left")
    stops[1].set()
    readers[1].join(30)
    flow.stop_producing.set()
    flow.writer.join(30)
    wait_until(lambda: set(flow.produced) <= flow.seen, 60, message="every record consumed")
    stops[2].set()
    readers[2].join(30)


def _members(bootstrap: str) -> int:
    """Members of g848 as ConsumerGroupDescribe reports them (librdkafka's admin uses it)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups(["g848"])["g848"].result(10)
    # Before its first heartbeat the group does not exist: librdkafka then falls back to
    # DescribeGroups, which reports a Dead classic group.
    return len(described.members) if described.type.name == "CONSUMER" else 0


def test_cli_lists_group_types(tmp_path: Path) -> None:
    """`streams groups list --type`: a KIP-848 group and a classic one, each with its type;
    `streams groups describe` of the KIP-848 group shows its epochs and assignments."""
    broker = EmbeddedBroker(tmp_path, group_consumer_heartbeat_interval_ms=300).start()
    consumers: list[Consumer] = []
    try:
        create_topics(broker.bootstrap, {TOPIC: 2})
        consumers = [
            Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "new-style",
                      "group.protocol": "consumer"}),
            Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "old-style"})]
        for c in consumers:
            c.subscribe([TOPIC])

        def listed() -> str | None:
            for c in consumers:
                c.poll(0.05)
            out = subprocess.run(
                [sys.executable, "-m", "streams.cli.main", "groups", "list", "--type",
                 "--bootstrap-server", broker.bootstrap],
                capture_output=True, text=True, timeout=60, check=True).stdout
            return out if "Stable" in out and out.count("Stable") == 2 else None

        rows = [line.split() for line in wait_until(listed, 60).splitlines()]
        assert rows == [["GROUP", "TYPE", "STATE"], ["new-style", "consumer", "Stable"],
                        ["old-style", "classic", "Stable"]]
        described = subprocess.run(
            [sys.executable, "-m", "streams.cli.main", "groups", "describe", "new-style",
             "--bootstrap-server", broker.bootstrap],
            capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
        assert described[0].startswith(
            "Consumer group 'new-style' (type consumer, KIP-848) is Stable with 1 member(s) "
            "(assignor: uniform")
        epochs = described[described.index(next(line for line in described
                                                if line.startswith("CONSUMER-ID"))) + 1]
        assert epochs.split()[1:] == ["2", "2", "2"]  # member epoch, assigned, target
    finally:
        for c in consumers:
            c.close()
        broker.stop()
