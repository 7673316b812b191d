"""KIP-848 consumer groups end to end: confluent-kafka consumers with
``group.protocol=consumer`` join and leave while records flow; every record is consumed and the
final committed offsets reach the end of every partition."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
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
        produced: list[int] = []
        stop_producing = threading.Event()

        def produce() -> None:
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
            i = 0
            while not stop_producing.is_set():
                producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
                produced.append(i)
                i += 1
                if i % 50 == 0:
                    producer.flush()
                    time.sleep(0.01)  # pacing the load, not synchronisation
            producer.flush()

        seen: set[int] = set()
        commit_errors: list[str] = []
        lock = threading.Lock()

        def consume(c: Consumer, until: threading.Event) -> None:
            while not until.is_set():
                m = c.poll(0.1)
                if m is None or m.error():
                    continue
                with lock:
                    seen.add(int(m.value()))
                try:
                    c.commit(message=m, asynchronous=False)
                except KafkaException as exc:  # a commit racing a revocation may be fenced
                    commit_errors.append(str(exc))
            c.close()

        writer = threading.Thread(target=produce)
        writer.start()
        stops = [threading.Event() for _ in range(3)]
        readers: list[threading.Thread] = []
        try:
            _scenario(bootstrap, stops, readers, consume, seen, produced, stop_producing,
                      writer)
        finally:
            stop_producing.set()
            for stop in stops:
                stop.set()
            for thread in [writer, *readers]:
                thread.join(30)

        assert set(produced) == seen and len(produced) > 500
        check = Consumer({"bootstrap.servers": bootstrap, "group.id": "g848"})
        try:
            committed = check.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                        timeout=10)
            ends = [check.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                    for p in range(PARTITIONS)]
        finally:
            check.close()
        assert [tp.offset for tp in committed] == ends
        assert all("STALE_MEMBER_EPOCH" in e or "UNKNOWN_MEMBER_ID" in e
                   for e in commit_errors), commit_errors
    finally:
        broker.stop()


def _scenario(bootstrap: str, stops: list[threading.Event], readers: list[threading.Thread],
              consume: Any, seen: set[int], produced: list[int],
              stop_producing: threading.Event, writer: threading.Thread) -> None:
    for index, stop in enumerate(stops):  # join one by one while records flow
        readers.append(threading.Thread(
            target=consume, args=(consumer(bootstrap, f"c{index}"), stop)))
        readers[-1].start()
        wait_until(lambda n=index: _members(bootstrap) == n + 1, 30,
                   message=f"{index + 1} member(s) in the group")
    wait_until(lambda: len(seen) > 500, 30, message="records consumed")
    stops[0].set()  # one leaves, then another, while the producer keeps going
    readers[0].join(30)
    wait_until(lambda: _members(bootstrap) == 2, 30, message="2 members left")
    stops[1].set()
    readers[1].join(30)
    stop_producing.set()
    writer.join(30)
    wait_until(lambda: set(produced) <= seen, 60, message="every record consumed")
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
