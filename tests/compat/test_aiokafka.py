"""aiokafka 0.14 (the client our runtime uses) against the bundled broker."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.structs import OffsetAndMetadata
from compat_util import (
    BASE_TS,
    CODECS,
    PARTITIONS,
    Sent,
    check_round_trip,
    kafka_partition,
    sample_records,
)

pytestmark = pytest.mark.compat


async def wait_for(condition, timeout: float, message: str):
    """Async polling with a deadline; ``condition`` is an async callable."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")


async def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS,
                       **configs: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        result = await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
        assert all(err == 0 for _name, err, *_ in result.topic_errors), result
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, records: list[Sent],
                  **conf: object) -> list[tuple[int, int]]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, **conf)
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                timestamp_ms=r.timestamp)
            for r in records
        ]
        metadata = await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return [(m.partition, m.offset) for m in metadata]


async def consume_all(bootstrap: str, topic: str, partitions: int, count: int) -> list:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        messages: list = []

        async def got_all() -> bool:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                messages.extend(batch)
            return len(messages) >= count

        await wait_for(got_all, 30, f"{count} records from {topic}")
        return messages
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", CODECS)
def test_keyed_produce_consume_each_codec(broker, codec: str) -> None:
    topic = f"aiokafka-{codec}"
    sent = sample_records()

    async def run():
        await create_topic(broker.bootstrap, topic)
        acked = await produce(broker.bootstrap, topic, sent,
                              compression_type=None if codec == "none" else codec)
        messages = await consume_all(broker.bootstrap, topic, PARTITIONS, len(sent))
        return acked, messages

    acked, messages = asyncio.run(run())
    for (partition, _offset), record in zip(acked, sent, strict=True):
        assert partition == kafka_partition(record.key, PARTITIONS)
    got = [(m.partition, m.offset, Sent(m.key, m.value, tuple(m.headers), m.timestamp))
           for m in messages]
    check_round_trip(sent, got, PARTITIONS)
    assert sorted((p, o) for p, o, _ in got) == sorted(acked)


def test_idempotent_producer(broker) -> None:
    topic = "aiokafka-idempotent"
    sent = sample_records(30)

    async def run():
        await create_topic(broker.bootstrap, topic)
        acked = await produce(broker.bootstrap, topic, sent, enable_idempotence=True)
        return acked, await consume_all(broker.bootstrap, topic, PARTITIONS, len(sent))

    acked, messages = asyncio.run(run())
    got = [(m.partition, m.offset, Sent(m.key, m.value, tuple(m.headers), m.timestamp))
           for m in messages]
    check_round_trip(sent, got, PARTITIONS)


def test_admin_create_describe_delete(broker) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio-admin", 3, 1, topic_configs={
                "segment.bytes": "1048576", "message.timestamp.type": "LogAppendTime"})])
            again = await admin.create_topics([NewTopic("aio-admin", 1, 1)])
            [(name, code, *_rest)] = again.topic_errors
            assert (name, code) == ("aio-admin", TopicAlreadyExistsError.errno)
            [described] = await admin.describe_topics(["aio-admin"])
            assert described["error_code"] == 0
            assert sorted(p["partition"] for p in described["partitions"]) == [0, 1, 2]

            [response] = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "aio-admin")])
            [resource] = response.resources
            assert resource[0] == 0  # error code
            values = {entry[0]: entry[1] for entry in resource[4]}
            assert values["segment.bytes"] == "1048576"
            assert values["message.timestamp.type"] == "LogAppendTime"
            assert values["cleanup.policy"] == "delete"

            assert "aio-admin" in await admin.list_topics()
            await admin.delete_topics(["aio-admin"])
            assert "aio-admin" not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())


def test_offsets_for_times_and_watermarks(broker) -> None:
    topic = "aio-times"
    records = [Sent(b"k", f"v{i}".encode(), (), BASE_TS + 10 * i) for i in range(20)]

    async def run() -> None:
        await create_topic(broker.bootstrap, topic, 1)
        await produce(broker.bootstrap, topic, records[:10], compression_type="snappy")
        await produce(broker.bootstrap, topic, records[10:], compression_type="snappy")
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            for target, expected in [(BASE_TS - 1, 0), (BASE_TS + 1, 1), (BASE_TS + 95, 10),
                                     (BASE_TS + 100, 10), (BASE_TS + 190, 19)]:
                found = (await consumer.offsets_for_times({tp: target}))[tp]
                assert found is not None
                assert (found.offset, found.timestamp) == (expected, BASE_TS + 10 * expected)
            assert (await consumer.offsets_for_times({tp: BASE_TS + 191}))[tp] is None
            assert await consumer.beginning_offsets([tp]) == {tp: 0}
            assert await consumer.end_offsets([tp]) == {tp: 20}
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_group_rebalance_and_committed_offsets_survive_restart(broker) -> None:
    topic = "aio-group"

    async def first_phase() -> None:
        await create_topic(broker.bootstrap, topic)
        await produce(broker.bootstrap, topic, sample_records(40))
        conf = {"bootstrap_servers": broker.bootstrap, "group_id": "aio-g",
                "auto_offset_reset": "earliest", "enable_auto_commit": False,
                "session_timeout_ms": 6000, "heartbeat_interval_ms": 300}
        c1, c2 = AIOKafkaConsumer(topic, **conf), AIOKafkaConsumer(topic, **conf)
        await c1.start()
        await c2.start()
        try:
            async def split() -> bool:
                await asyncio.sleep(0.05)  # yield to the consumers' coordinator tasks
                a, b = c1.assignment(), c2.assignment()
                return bool(a) and bool(b) and len(a) + len(b) == PARTITIONS

            await wait_for(split, 40, "both members assigned")
            assert c1.assignment().isdisjoint(c2.assignment())
            await c2.stop()  # LeaveGroup

            async def survivor_owns_all() -> bool:
                await asyncio.sleep(0.05)
                return len(c1.assignment()) == PARTITIONS

            await wait_for(survivor_owns_all, 40, "survivor owns all partitions")
            await c1.commit({TopicPartition(topic, p): OffsetAndMetadata(1 + p, "")
                             for p in range(PARTITIONS)})
        finally:
            await c1.stop()
            await c2.stop()

    async def second_phase() -> dict[int, int]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id="aio-g",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            for p in range(PARTITIONS):
                assert await consumer.committed(TopicPartition(topic, p)) == 1 + p
            first: dict[int, int] = {}

            async def resumed() -> bool:
                for tp, batch in (await consumer.getmany(timeout_ms=200)).items():
                    if batch:
                        first.setdefault(tp.partition, batch[0].offset)
                return len(first) == PARTITIONS

            await wait_for(resumed, 40, "resumed on every partition")
            return first
        finally:
            await consumer.stop()

    asyncio.run(first_phase())
    broker.restart()
    assert asyncio.run(second_phase()) == {p: 1 + p for p in range(PARTITIONS)}
