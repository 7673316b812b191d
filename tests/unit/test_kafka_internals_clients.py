"""Contract tests for the aiokafka internals Connect and the Spark source use through
streams.kafka.internals (metadata on demand, a forced rejoin, a raw admin request): if an aiokafka
upgrade moves them, these fail first, with a clear name."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import DeleteGroupsRequest
from helpers import create_topics

from streams.kafka.internals import (
    cluster_metadata,
    group_metadata,
    refresh_metadata,
    request_rejoin,
    send_to_node,
)

GROUP_ID_NOT_FOUND = 69


def test_refresh_metadata_finds_a_topic_created_after_the_consumer_started(broker) -> None:
    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            assert consumer.partitions_for_topic("late") is None
            await asyncio.to_thread(create_topics, broker.bootstrap, {"late": 2})
            assert await refresh_metadata(consumer) is True
            assert consumer.partitions_for_topic("late") == {0, 1}
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_cluster_metadata_lists_topics_with_partitions_and_creates_none(broker) -> None:
    create_topics(broker.bootstrap, {"three": 3, "one": 1})

    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            metadata = await cluster_metadata(consumer)
            assert metadata.partitions_for_topic("three") == {0, 1, 2}
            assert metadata.partitions_for_topic("one") == {0}
            assert {"three", "one"} <= metadata.topics()
            assert "never-asked-for" not in metadata.topics()
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_request_rejoin_starts_a_new_generation(broker) -> None:
    create_topics(broker.bootstrap, {"rejoin-in": 1})

    async def run() -> None:
        consumer = AIOKafkaConsumer("rejoin-in", bootstrap_servers=broker.bootstrap,
                                    group_id="rejoin-group", enable_auto_commit=False)
        await consumer.start()
        try:
            await _poll_until(consumer, lambda: bool(consumer.assignment()))
            before = group_metadata(consumer, "rejoin-group").generation_id
            request_rejoin(consumer)
            await _poll_until(consumer, lambda: group_metadata(
                consumer, "rejoin-group").generation_id > before)
            assert consumer.assignment() == {TopicPartition("rejoin-in", 0)}
        finally:
            await consumer.stop()

    asyncio.run(run())


async def _poll_until(consumer: AIOKafkaConsumer, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await consumer.getmany(timeout_ms=50)


def test_send_to_node_delivers_a_request_aiokafka_has_no_call_for(broker) -> None:
    create_topics(broker.bootstrap, {"del-in": 1})
    tp = TopicPartition("del-in", 0)

    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="del-group",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            await consumer.commit({tp: 5})
        finally:
            await consumer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            node = await admin.find_coordinator("del-group")
            response = await send_to_node(admin, node, DeleteGroupsRequest(["del-group"]))
            assert [tuple(r) for r in response.results] == [("del-group", 0)]
            assert await admin.list_consumer_group_offsets("del-group") == {}
            response = await send_to_node(admin, node, DeleteGroupsRequest(["del-group"]))
            assert [tuple(r) for r in response.results] == [("del-group", GROUP_ID_NOT_FOUND)]
        finally:
            await admin.close()

    asyncio.run(run())
