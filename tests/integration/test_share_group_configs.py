"""Share-group configs on GROUP resources (share.auto.offset.reset, share.isolation.level,
share.record.lock.duration.ms) set with confluent-kafka's AdminClient and honoured by
confluent-kafka's ShareConsumer, and share-group offsets altered, described and deleted.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from helpers import EmbeddedBroker, create_topics, wait_until


def _set(admin: AdminClient, group: str, **configs: str) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _drain(bootstrap: str, group: str, topic: str, expected: int) -> list[bytes]:
    """Values a share consumer of ``group`` receives until ``expected`` arrived (or 30 s)."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        def done() -> bool:
            got.extend(m.value() for m in consumer.poll(0.3) if m.error() is None)
            return len(got) >= expected
        wait_until(done, 30, message=f"{expected} records for {group}")
        # a little longer: nothing beyond the expected records may come
        for _ in range(3):
            got.extend(m.value() for m in consumer.poll(0.3) if m.error() is None)
    finally:
        consumer.close()
    return got


def test_group_configs_are_honoured_and_survive_a_restart(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"t": 1})
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        _set(admin, "early", share_auto_offset_reset="earliest")
        _set(admin, "committed", share_auto_offset_reset="earliest",
             share_isolation_level="read_committed", share_record_lock_duration_ms="15000")
        bad = ConfigResource(ResourceType.GROUP, "early", incremental_configs=[ConfigEntry(
            "share.record.lock.duration.ms", "10", incremental_operation=AlterConfigOpType.SET)])
        refused = admin.incremental_alter_configs([bad])[bad].exception(timeout=30)
        assert refused is not None and "15000 to 60000" in str(refused)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(5):
            producer.produce("t", f"plain-{i}".encode())
        producer.flush()
        txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx"})
        txn.init_transactions(30)
        txn.begin_transaction()
        for i in range(3):
            txn.produce("t", f"aborted-{i}".encode())
        txn.flush()  # in the log before the abort (librdkafka purges what it has not sent)
        txn.abort_transaction(30)
        txn.begin_transaction()
        for i in range(2):
            txn.produce("t", f"committed-{i}".encode())
        txn.commit_transaction(30)

        everything = _drain(broker.bootstrap, "early", "t", 10)
        assert sorted(everything) == sorted(
            [f"plain-{i}".encode() for i in range(5)] + [f"aborted-{i}".encode() for i in range(3)]
            + [f"committed-{i}".encode() for i in range(2)])
        committed = _drain(broker.bootstrap, "committed", "t", 7)
        assert sorted(committed) == sorted(
            [f"plain-{i}".encode() for i in range(5)] + [f"committed-{i}".encode() for i in range(2)])
        # latest (the default): nothing that was there before the first fetch
        assert _drain_nothing(broker.bootstrap, "late", "t")

        # Deleting the group keeps its configs, as Kafka 4.4 does (also across a restart).
        def deleted() -> bool:
            future = admin.delete_consumer_groups(["committed"])["committed"]
            return future.exception(timeout=30) is None  # NON_EMPTY_GROUP until it has left
        wait_until(deleted, 30, message="group 'committed' deleted")

        broker.restart()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(ResourceType.GROUP, "committed")
        described = admin.describe_configs([resource])[resource].result(timeout=30)
        assert described["share.isolation.level"].value == "read_committed"
        assert described["share.record.lock.duration.ms"].value == "15000"
        assert described["share.auto.offset.reset"].value == "earliest"
        assert described["share.delivery.count.limit"].value == "5"
        assert described["share.delivery.count.limit"].is_default
    finally:
        broker.stop()


def _drain_nothing(bootstrap: str, group: str, topic: str) -> bool:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    try:
        for _ in range(8):
            assert not [m for m in consumer.poll(0.3) if m.error() is None]
    finally:
        consumer.close()
    return True
