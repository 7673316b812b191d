"""KIP-932 share groups against our broker with confluent-kafka's ShareConsumer.

Several share consumers read the same partitions while records flow; a consumer killed with
records in flight; the broker killed with share state on disk. Totals are checked: every
record accepted exactly once, nothing lost.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from helpers import BrokerProcess, EmbeddedBroker, create_topics, wait_until
from metrics.scrape import scrape, value

from streams.broker.groups.protocols import GroupType


def _share_state(broker: EmbeddedBroker, group: str) -> dict[tuple[str, int], Any]:
    def read() -> dict[tuple[str, int], Any]:
        protocol = broker.broker.groups.protocol(GroupType.SHARE)  # type: ignore[union-attr]
        return {(k.topic, k.partition): (p.start_offset, dict(p.records))
                for k, p in protocol.partitions.items() if k.group_id == group}
    return broker.call(read)


def _consumer(bootstrap: str, group: str, **extra: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    consumer.subscribe(["q"])
    return consumer


def _set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    """IncrementalAlterConfigs on the GROUP resource, as confluent-kafka's own tests do."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _poll_until_partitions_known(broker: EmbeddedBroker, consumers: list[ShareConsumer],
                                 group: str, partitions: int) -> None:
    """share.auto.offset.reset is latest: produce only once every share-partition exists."""
    def ready() -> bool:
        for consumer in consumers:
            assert not list(consumer.poll(0.1))
        return len(_share_state(broker, group)) == partitions
    wait_until(ready, 30, message="share-partitions initialized")


def test_share_consumers_split_flowing_records_exactly_once(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    consumers: list[ShareConsumer] = []
    try:
        create_topics(broker.bootstrap, {"q": 3})
        consumers = [_consumer(broker.bootstrap, "sg") for _ in range(3)]
        _poll_until_partitions_known(broker, consumers, "sg", 3)
        protocol = broker.call(lambda: broker.broker.groups.protocol(GroupType.SHARE))  # type: ignore[union-attr]

        def spread() -> bool:  # the simple assignor: one partition per member
            assignment = broker.call(lambda: dict(protocol.groups["sg"].assignment))
            return sorted(len(a) for a in assignment.values()) == [1, 1, 1]
        wait_until(spread, 30, message="partitions spread over the three members")
        total = 3000
        received: list[list[int]] = [[] for _ in consumers]
        stop = threading.Event()

        def consume(i: int) -> None:
            while not stop.is_set():
                for message in consumers[i].poll(0.2):
                    assert message.error() is None, message.error()
                    received[i].append(int(message.value()))

        threads = [threading.Thread(target=consume, args=(i,)) for i in range(len(consumers))]
        for thread in threads:
            thread.start()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(total):  # records flow while the consumers read
            producer.produce("q", str(i).encode(), partition=i % 3)
            if i % 200 == 0:
                producer.flush()
        producer.flush()
        try:
            wait_until(lambda: len({v for r in received for v in r}) == total, 60,
                       message="every record delivered")
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        for consumer in consumers:
            consumer.close()  # implicit mode: the last poll's records are accepted here
        consumers = []
        everything = [v for r in received for v in r]
        assert sorted(everything) == list(range(total))  # no duplicate, none missing
        assert all(received)  # each member read its own partition

        def all_acknowledged() -> bool:
            state = _share_state(broker, "sg")
            return all(records == {} for _start, records in state.values())
        wait_until(all_acknowledged, 30, message="every record acknowledged")
        assert sum(start for start, _ in _share_state(broker, "sg").values()) == total
        listed = subprocess.run(
            [sys.executable, "-m", "streams.cli.main", "groups", "list",
             "--bootstrap-servers", broker.bootstrap],
            capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert "sg" in listed.stdout.split()  # `streams groups list` shows share groups
    finally:
        for consumer in consumers:
            consumer.close()
        broker.stop()


_HOLDER = textwrap.dedent("""
    import sys
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": "sg",
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe(["q"])
    while True:
        got = list(c.poll(0.5))
        if got:
            print(" ".join(str(m.offset()) for m in got), flush=True)
            break
    sys.stdin.read()  # hold the records, acknowledge nothing, until killed
""")


def test_killed_consumer_records_are_redelivered_after_the_lock(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b", group_share_record_lock_duration_ms=2000,
                            group_share_min_record_lock_duration_ms=1000,
                            metrics_listener="http://127.0.0.1:0").start()
    holder: subprocess.Popen[str] | None = None
    consumer: ShareConsumer | None = None
    try:
        create_topics(broker.bootstrap, {"q": 1})
        holder = subprocess.Popen([sys.executable, "-c", _HOLDER, broker.bootstrap],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        wait_until(lambda: len(_share_state(broker, "sg")) == 1, 30,
                   message="the holder's share-partition")
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(50):
            producer.produce("q", str(i).encode(), partition=0)
        producer.flush()
        assert holder.stdout is not None
        held = {int(o) for o in holder.stdout.readline().split()}
        assert held, "the holder got records"
        labels = {"group": "sg", "topic": "q", "partition": 0}
        metrics = scrape(broker.broker.metrics.url)  # type: ignore[union-attr]
        assert value(metrics, "kafka_sharegroup_lag", **labels) == 50  # none acknowledged
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        consumer = _consumer(broker.bootstrap, "sg", **{"share.acknowledgement.mode": "explicit"})
        seen: dict[int, int] = {}

        def drain() -> bool:
            assert consumer is not None
            for message in consumer.poll(0.3):
                assert message.offset() not in seen, "delivered twice"
                seen[message.offset()] = message.delivery_count()
                consumer.acknowledge(message)
            consumer.commit_sync()
            return len(seen) == 50
        wait_until(drain, 60, message="every record delivered once more")
        assert all(seen[o] >= 2 for o in held), (held, seen)  # the holder's delivery counted
        assert all(seen[o] == 1 for o in set(seen) - held)
        wait_until(lambda: _share_state(broker, "sg")[("q", 0)] == (50, {}), 30,
                   message="start offset past every record")
        metrics = scrape(broker.broker.metrics.url)  # type: ignore[union-attr]
        labels = {"group": "sg", "topic": "q", "partition": 0}
        assert value(metrics, "kafka_sharegroup_lag", **labels) == 0
        assert value(metrics, "kafka_sharegroup_in_flight_records", **labels) == 0
        assert value(metrics, "kafka_sharegroup_start_offset", **labels) == 50
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if consumer is not None:
            consumer.close()
        broker.stop()


def test_broker_sigkill_keeps_acknowledgements(tmp_path: Path) -> None:
    """Acknowledged records are never redelivered after a broker SIGKILL; unacknowledged ones
    (held by the consumer when the broker died) come back."""
    broker = BrokerProcess(tmp_path / "data").start()
    consumer: ShareConsumer | None = None
    try:
        create_topics(broker.bootstrap, {"q": 1})
        _set_group_config(broker.bootstrap, "sg", "share.auto.offset.reset", "earliest")
        consumer = _consumer(broker.bootstrap, "sg", **{"share.acknowledgement.mode": "explicit"})
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        accepted: set[int] = set()
        for i in range(200):
            producer.produce("q", str(i).encode(), partition=0)
        producer.flush()

        def accept_half() -> bool:
            for message in consumer.poll(0.3):  # type: ignore[union-attr]
                if len(accepted) < 100:
                    consumer.acknowledge(message)  # type: ignore[union-attr]
                    accepted.add(int(message.value()))
                else:
                    consumer.acknowledge(message, 2)  # type: ignore[union-attr]  # RELEASE
            consumer.commit_sync()  # type: ignore[union-attr]
            return len(accepted) >= 100
        wait_until(accept_half, 60, message="half accepted")
        consumer.close()
        consumer = None
        broker.kill()
        broker.start()
        consumer = _consumer(broker.bootstrap, "sg", **{"share.acknowledgement.mode": "explicit"})
        again: set[int] = set()

        def rest() -> bool:
            for message in consumer.poll(0.3):  # type: ignore[union-attr]
                value = int(message.value())
                assert value not in accepted, f"acknowledged record {value} redelivered"
                again.add(value)
                consumer.acknowledge(message)  # type: ignore[union-attr]
            consumer.commit_sync()  # type: ignore[union-attr]
            return len(again) == 200 - len(accepted)
        wait_until(rest, 60, message="the unacknowledged records")
        assert accepted | again == set(range(200))
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()


def test_hostile_share_requests_get_kafkas_error_codes(tmp_path: Path) -> None:
    """Kafka 4.4's answers (tests/reference/test_share_group_diff.py compares the full
    sequence with Java present): acks of offsets never acquired, a classic group's id, stale
    session epochs, bad acknowledge types. Nothing is acknowledged by any of them."""
    import uuid

    from reference.wire import Connection

    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"q": 1})
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        with Connection(broker.bootstrap) as c:
            tid = uuid.UUID(str(c.send(3, 12, {"topics": [{"name": "q", "topic_id": None}],
                                                "allow_auto_topic_creation": False}
                                      )["topics"][0]["topic_id"]))  # type: ignore[index]
            # The share-partition starts at the first fetch (Kafka's lazy initialization):
            # earliest makes the records produced after the join deliverable.
            configured = c.send(44, 1, {"resources": [{
                "resource_type": 32, "resource_name": "sg", "configs": [{
                    "name": "share.auto.offset.reset", "config_operation": 0,
                    "value": "earliest"}]}], "validate_only": False})
            assert configured is not None
            assert configured["responses"][0]["error_code"] == "none"
            joined = c.send(76, 1, {"group_id": "sg", "member_id": "m1", "member_epoch": 0,
                                    "subscribed_topic_names": ["q"]})
            assert joined is not None and joined["error_code"] == "none"
            for _ in range(5):  # one batch each: a fetch acquires whole batches, as Kafka
                producer.produce("q", b"x", partition=0)
                producer.flush()

            def fetch(group: str, epoch: int, acks: list[dict[str, Any]] | None = None
                      ) -> dict[str, Any]:
                answer = c.send(78, 1, {
                    "group_id": group, "member_id": "m1", "share_session_epoch": epoch,
                    "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 2,
                    "batch_size": 2, "forgotten_topics_data": [],
                    "topics": [{"topic_id": tid, "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": acks or []}]}]})
                assert answer is not None
                return answer

            def partition(answer: dict[str, Any]) -> dict[str, Any]:
                return answer["responses"][0]["partitions"][0]

            got = partition(fetch("sg", 0))
            assert got["acquired_records"] == [
                {"first_offset": 0, "last_offset": 1, "delivery_count": 1}]
            # Offsets past those acquired: Kafka 4.4 answers INVALID_REQUEST ("Batch record not
            # found. The last offset in request is past acquired records."); 121 is its answer
            # only while nothing of the partition is in flight.
            never = [{"first_offset": 1, "last_offset": 3, "acknowledge_types": [1]}]
            assert partition(fetch("sg", 1, never))["acknowledge_error_code"] == 42
            bad_type = [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [7]}]
            assert partition(fetch("sg", 2, bad_type))["acknowledge_error_code"] == 42
            assert fetch("sg", 9)["error_code"] == "invalid_share_session_epoch"
            c.send(8, 8, {"group_id": "cg", "generation_id_or_member_epoch": -1,
                          "member_id": "", "topics": [{"name": "q", "partitions": [
                              {"partition_index": 0, "committed_offset": 1}]}]})
            classic = fetch("cg", 0)
            assert classic["error_code"] == "none"
            assert partition(classic)["error_code"] == "unknown_server_error"
            hb = c.send(76, 1, {"group_id": "cg", "member_id": "m1", "member_epoch": 0,
                                "subscribed_topic_names": ["q"]})
            assert hb is not None
            assert (hb["error_code"], hb["error_message"]) == (
                "group_id_not_found", "Group cg is not a share group.")
        state = _share_state(broker, "sg")[("q", 0)]
        assert state[0] == 0 and all(r.state.name == "ACQUIRED" for r in state[1].values())
    finally:
        broker.stop()
