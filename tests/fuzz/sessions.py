"""Ordinary client sessions against the broker, one per client library, for the corpus.

Every session finishes in seconds: consumers stop as soon as they have read what was produced.
Topic names are per client so the sessions do not disturb each other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

CODECS = ("gzip", "snappy", "lz4", "zstd")
COMPACT_TOPIC = "fz-compact"  # cleanup.policy=compact: the broker decompresses to check keys
VALUE = b"fuzz-value-" * 8


def _deadline(seconds: float) -> float:
    return time.monotonic() + seconds


# How many Heartbeat requests the proxy has recorded for the running session: group consumers
# keep polling until two went out, so every recording holds some (not just the fast ones).
Heartbeats = Callable[[], int]


# -- aiokafka ---------------------------------------------------------------------------------


def aiokafka_session(bootstrap: str, heartbeats: Heartbeats) -> None:
    asyncio.run(_aiokafka(bootstrap, heartbeats))


async def _aiokafka(bootstrap: str, heartbeats: Heartbeats) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic("fz-aio", 2, 1), NewTopic("fz-aio-tmp", 1, 1),
            NewTopic(COMPACT_TOPIC, 1, 1, topic_configs={"cleanup.policy": "compact"}),
        ])
        await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "fz-aio")])
        await admin.delete_topics(["fz-aio-tmp"])
    finally:
        await admin.close()
    for codec in (None, *CODECS):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                                    enable_idempotence=codec == "zstd")
        await producer.start()
        try:
            await producer.send_and_wait("fz-aio", VALUE, key=b"k", partition=0)
            await producer.send_and_wait(COMPACT_TOPIC, VALUE, key=b"k")
        finally:
            await producer.stop()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="fz-aio-tx",
                                compression_type="lz4")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait("fz-aio", VALUE, key=b"t", partition=1)
            await producer.send_offsets_to_transaction(
                {TopicPartition("fz-aio", 0): 1}, "fz-aio-txg")
        await producer.begin_transaction()
        await producer.send_and_wait("fz-aio", VALUE, key=b"a", partition=1)
        await producer.abort_transaction()
    finally:
        await producer.stop()
    for isolation, group in (("read_committed", "fz-aio-g"), ("read_uncommitted", None)):
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, isolation_level=isolation,
            auto_offset_reset="earliest", enable_auto_commit=False, heartbeat_interval_ms=100)
        await consumer.start()
        try:
            if group:
                consumer.subscribe(["fz-aio"])
            else:
                consumer.assign([TopicPartition("fz-aio", 0), TopicPartition("fz-aio", 1)])
            got, deadline = 0, _deadline(20)
            while (got < 5 or (group and heartbeats() < 2)) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                got += sum(len(records) for records in batches.values())
            if group:
                await consumer.commit()
            else:
                tp = TopicPartition("fz-aio", 0)
                await consumer.offsets_for_times({tp: 0})
                await consumer.end_offsets([tp])
        finally:
            await consumer.stop()


# -- kafka-python -----------------------------------------------------------------------------


def kafka_python_session(bootstrap: str, heartbeats: Heartbeats) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("fz-kp", 2, 1), NewTopic("fz-kp-tmp", 1, 1)])
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "fz-kp")])
        admin.delete_topics(["fz-kp-tmp"])
    finally:
        admin.close()
    for codec in (None, *CODECS):
        producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                                 enable_idempotence=codec == "gzip")
        try:
            producer.send("fz-kp", VALUE, key=b"k", partition=0).get(20)
        finally:
            producer.close(5)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="fz-kp-tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("fz-kp", VALUE, key=b"t", partition=1).get(20)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("fz-kp", VALUE, key=b"a", partition=1).get(20)
        producer.abort_transaction()
    finally:
        producer.close(5)
    for isolation, group in (("read_committed", "fz-kp-g"), ("read_uncommitted", None)):
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, isolation_level=isolation,
            auto_offset_reset="earliest", enable_auto_commit=False, heartbeat_interval_ms=100)
        try:
            if group:
                consumer.subscribe(["fz-kp"])
            else:
                from kafka import TopicPartition
                consumer.assign([TopicPartition("fz-kp", 0), TopicPartition("fz-kp", 1)])
            got, deadline = 0, _deadline(20)
            while (got < 5 or (group and heartbeats() < 2)) and time.monotonic() < deadline:
                got += sum(len(r) for r in consumer.poll(timeout_ms=200).values())
            if group:
                consumer.commit()
        finally:
            consumer.close()


# -- confluent-kafka --------------------------------------------------------------------------


def confluent_session(bootstrap: str, heartbeats: Heartbeats) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("fz-ck", 2, 1), NewTopic("fz-ck-tmp", 1, 1)],
                                      operation_timeout=10).values():
        future.result(20)
    for future in admin.describe_configs([ConfigResource("topic", "fz-ck")]).values():
        future.result(20)
    for future in admin.delete_topics(["fz-ck-tmp"], operation_timeout=10).values():
        future.result(20)
    base = {"bootstrap.servers": bootstrap, "linger.ms": 0}
    for codec in ("none", *CODECS):
        producer = Producer({**base, "compression.codec": codec,
                             "enable.idempotence": codec == "snappy"})
        producer.produce("fz-ck", VALUE, key=b"k", partition=0)
        assert producer.flush(20) == 0, f"confluent producer ({codec}) did not deliver"
    producer = Producer({**base, "transactional.id": "fz-ck-tx", "compression.codec": "zstd"})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("fz-ck", VALUE, key=b"t", partition=1)
    producer.commit_transaction(20)
    producer.begin_transaction()
    producer.produce("fz-ck", VALUE, key=b"a", partition=1)
    producer.abort_transaction(20)
    for isolation, group in (("read_committed", "fz-ck-g"), ("read_uncommitted", "fz-ck-u")):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "isolation.level": isolation, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False, "heartbeat.interval.ms": 100})
        try:
            if isolation == "read_committed":
                consumer.subscribe(["fz-ck"])
            else:
                consumer.assign([TopicPartition("fz-ck", 0, 0), TopicPartition("fz-ck", 1, 0)])
            got, deadline = 0, _deadline(20)
            while (got < 5 or (isolation == "read_committed" and heartbeats() < 2)) and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got += 1
            if isolation == "read_committed":
                consumer.commit(asynchronous=False)
            else:
                consumer.offsets_for_times([TopicPartition("fz-ck", 0, 0)], 10)
        finally:
            consumer.close()


def confluent_groups_session(bootstrap: str, heartbeats: Heartbeats) -> None:
    """Kafka 4's group protocols from a real client: a KIP-848 consumer
    (group.protocol=consumer) and a KIP-932 ShareConsumer, on topics of their own (the
    scripted group seeds' topics are filled outside the recording: group_seeds.prepare)."""
    from confluent_kafka import Consumer, Producer, ShareConsumer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    share_topic, consumer_topic, records = "fz-ck-share", "fz-ck-848", 6
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(share_topic, 2, 1), NewTopic(consumer_topic, 2, 1)],
                                      operation_timeout=10).values():
        future.result(20)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(records):
        producer.produce(share_topic, VALUE, key=b"s", partition=i % 2)
        producer.produce(consumer_topic, VALUE, key=b"c", partition=i % 2)
    assert producer.flush(20) == 0, "confluent producer did not deliver"
    resource = ConfigResource(ResourceType.GROUP, "fz-ck-share", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(20)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fz-ck-848",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([consumer_topic])
        got, deadline = 0, _deadline(20)
        while got < records and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    share = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "fz-ck-share"})
    try:
        share.subscribe([share_topic])
        got, deadline = 0, _deadline(20)
        while got < records and time.monotonic() < deadline:
            got += sum(1 for m in share.poll(0.2) if m.error() is None)
    finally:
        share.close()
    for future in admin.describe_consumer_groups(["fz-ck-848"]).values():
        future.result(20)
