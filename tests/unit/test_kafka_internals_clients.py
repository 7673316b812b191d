"""Contract tests for the aiokafka internals Connect and the Spark source use through
streams.kafka.internals (metadata on demand, a forced rejoin, a raw admin request): if an aiokafka
upgrade moves them, these fail first, with a clear name."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import DeleteGroupsRequest
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.transaction import EndTxnRequest
from helpers import create_topics

from streams.kafka import clients
from streams.kafka.client_config import client_settings
from streams.kafka.internals import (
    client_of,
    cluster_metadata,
    end_transaction,
    group_metadata,
    producer_transaction,
    refresh_metadata,
    request_rejoin,
    send_to_any_broker,
    send_to_node,
    send_to_transaction_coordinator,
    topic_metadata,
)

GROUP_ID_NOT_FOUND = 69
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TXN_STATE = 48


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


def test_network_client_requests_reach_any_broker_and_the_transaction_coordinator(broker) -> None:
    """The Spark sink's two raw requests: Metadata that must not create a topic here, and an
    EndTxn from another connection that commits a transaction a producer left open."""
    create_topics(broker.bootstrap, {"txn-out": 1})
    settings = client_settings(broker.bootstrap, client_id="seam-test")

    async def run() -> None:
        producer = clients.producer(settings, transactional_id="seam-txn",
                                    enable_idempotence=True)
        await clients.start(producer, settings)
        try:
            await producer.begin_transaction()
            await producer.send_and_wait("txn-out", b"kept")
            tid, pid, epoch = producer_transaction(producer)
            response = await send_to_any_broker(client_of(producer), MetadataRequest(
                ["txn-out"], allow_auto_topic_creation=False))
            assert [(t[0], t[1]) for t in response.topics] == [(0, "txn-out")]
        finally:
            await producer.stop()  # leaves the transaction open
        client = clients.network_client({**settings, "linger_ms": 5})  # producer-only key dropped
        await client.bootstrap()
        try:
            response = await send_to_any_broker(
                client, MetadataRequest(["txn-out", "never-made"], allow_auto_topic_creation=False))
            by_name = {t[1]: (t[0], len(t[3])) for t in response.topics}
            assert by_name == {"txn-out": (0, 1), "never-made": (UNKNOWN_TOPIC_OR_PARTITION, 0)}
            assert await topic_metadata(client, "txn-out") == (0, 1)  # the sink's topic check
            response = await send_to_transaction_coordinator(
                client, tid, EndTxnRequest(tid, pid, epoch, True))
            assert response.error_code == 0
            # Committed: the same EndTxn again is answered NONE, aborting it now is refused.
            assert await end_transaction(client, tid, pid, epoch, commit=True) == 0
            assert await end_transaction(client, tid, pid, epoch, commit=False) == \
                INVALID_TXN_STATE
        finally:
            await client.close()
        consumer = clients.consumer(settings, isolation_level="read_committed",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await clients.start(consumer, settings)
        try:
            tp = TopicPartition("txn-out", 0)
            consumer.assign([tp])
            records = await consumer.getmany(tp, timeout_ms=10_000)
            assert [r.value for r in records.get(tp, [])] == [b"kept"]
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_start_says_why_a_client_cannot_bootstrap() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = client_settings(f"127.0.0.1:{port}", request_timeout_ms=2_000)

    async def run() -> None:
        admin = clients.admin(settings)
        with pytest.raises(clients.BootstrapError) as caught:
            await clients.start(admin, settings)
        assert caught.value.reason is not None and "Connect call failed" in caught.value.reason
        assert str(caught.value).endswith(caught.value.reason)

    asyncio.run(run())
