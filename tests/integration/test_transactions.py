"""Transactions with real clients: visibility by isolation level, fencing, timeouts, restarts."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from helpers import wait_until


def read_values(bootstrap: str, topic: str, isolation: str, expected: int,
                timeout: float = 15.0) -> list[bytes]:
    """Read partition 0 from the start until ``expected`` values arrived, then 0.5 s more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                values.append(msg.value())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 0.5
                if time.monotonic() > quiet_until:
                    break
        return values
    finally:
        consumer.close()


def txn_producer(bootstrap: str, tid: str, **extra: object) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, **extra})
    producer.init_transactions(15)
    return producer


def test_committed_and_aborted_transactions_by_isolation_level(broker) -> None:
    producer = txn_producer(broker.bootstrap, "iso")
    producer.begin_transaction()
    for i in range(3):
        producer.produce("txn-iso", key=b"k", value=f"commit-{i}".encode())
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("txn-iso", key=b"k", value=f"abort-{i}".encode())
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce("txn-iso", key=b"k", value=b"after")
    producer.commit_transaction(15)

    committed = read_values(broker.bootstrap, "txn-iso", "read_committed", 4)
    assert committed == [b"commit-0", b"commit-1", b"commit-2", b"after"]
    uncommitted = read_values(broker.bootstrap, "txn-iso", "read_uncommitted", 7)
    assert uncommitted == [b"commit-0", b"commit-1", b"commit-2",
                           b"abort-0", b"abort-1", b"abort-2", b"after"]


def test_open_transaction_holds_back_read_committed(broker) -> None:
    producer = txn_producer(broker.bootstrap, "open")
    producer.begin_transaction()
    producer.produce("txn-open", value=b"pending")
    producer.flush(15)
    lso_consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lso",
                             "isolation.level": "read_committed"})
    try:
        low, high = lso_consumer.get_watermark_offsets(CTopicPartition("txn-open", 0), 10)
        assert (low, high) == (0, 0)  # the LSO stays at the open transaction's first offset
    finally:
        lso_consumer.close()
    assert read_values(broker.bootstrap, "txn-open", "read_committed", 1, timeout=2) == []
    producer.commit_transaction(15)
    assert read_values(broker.bootstrap, "txn-open", "read_committed", 1) == [b"pending"]


def test_second_producer_with_same_id_fences_the_first(broker) -> None:
    first = txn_producer(broker.bootstrap, "fence")
    first.begin_transaction()
    first.produce("txn-fence", value=b"zombie-1")
    first.flush(15)
    second = txn_producer(broker.bootstrap, "fence")  # aborts the first's open transaction
    with pytest.raises(KafkaException) as raised:
        first.produce("txn-fence", value=b"zombie-2")
        first.commit_transaction(15)
    assert raised.value.args[0].fatal()
    second.begin_transaction()
    second.produce("txn-fence", value=b"winner")
    second.commit_transaction(15)
    assert read_values(broker.bootstrap, "txn-fence", "read_committed", 1) == [b"winner"]


def test_aiokafka_transactions_and_fencing(broker) -> None:
    async def run() -> None:
        first = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio")
        await first.start()
        async with first.transaction():
            await first.send_and_wait("txn-aio", b"one", partition=0)
        await first.begin_transaction()
        await first.send_and_wait("txn-aio", b"dropped", partition=0)
        await first.abort_transaction()
        second = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio")
        await second.start()
        try:
            with pytest.raises(ProducerFenced):
                async with first.transaction():
                    await first.send_and_wait("txn-aio", b"zombie", partition=0)
            async with second.transaction():
                await second.send_and_wait("txn-aio", b"two", partition=0)
        finally:
            await first.stop()
            await second.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    isolation_level="read_committed",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition("txn-aio", 0)
            consumer.assign([tp])
            got: list[bytes] = []
            deadline = time.monotonic() + 15
            while len(got) < 2 and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
            assert got == [b"one", b"two"]
            # one, COMMIT, dropped, ABORT, two, COMMIT: the zombie's send never reached the log
            assert await consumer.end_offsets([tp]) == {tp: 6}
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_transaction_timeout_aborts_and_fences(broker) -> None:
    producer = txn_producer(broker.bootstrap, "slow", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce("txn-slow", value=b"too-late")
    producer.flush(15)
    txns = broker.broker.transactions
    wait_until(lambda: txns.txns["slow"].state == "CompleteAbort", 15,
               message="the coordinator to abort the timed-out transaction")
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    assert read_values(broker.bootstrap, "txn-slow", "read_uncommitted", 1) == [b"too-late"]
    assert read_values(broker.bootstrap, "txn-slow", "read_committed", 1, timeout=2) == []


def test_transaction_state_survives_restart(broker) -> None:
    producer = txn_producer(broker.bootstrap, "durable")
    producer.begin_transaction()
    producer.produce("txn-durable", value=b"committed-before-restart")
    producer.commit_transaction(15)
    epoch_before = broker.broker.transactions.txns["durable"].producer_epoch
    broker.restart()
    meta = broker.broker.transactions.txns["durable"]
    assert meta.state == "CompleteCommit"
    assert meta.producer_epoch == epoch_before
    again = txn_producer(broker.bootstrap, "durable")
    assert broker.broker.transactions.txns["durable"].producer_epoch == epoch_before + 1
    again.begin_transaction()
    again.produce("txn-durable", value=b"after-restart")
    again.commit_transaction(15)
    assert read_values(broker.bootstrap, "txn-durable", "read_committed", 2) == [
        b"committed-before-restart", b"after-restart"
    ]


def test_aiokafka_send_offsets_to_transaction_commits_with_output(broker) -> None:
    """aiokafka (the runtime's client) uses every transaction API at v0, TxnOffsetCommit too."""

    async def run() -> int | None:
        seed = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await seed.start()
        for i in range(10):
            await seed.send("eos-aio-in", f"in-{i}".encode(), partition=0)
        await seed.stop()
        consumer = AIOKafkaConsumer("eos-aio-in", bootstrap_servers=broker.bootstrap,
                                    group_id="eos-aio", enable_auto_commit=False,
                                    auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="eos-a")
        await consumer.start()
        await producer.start()
        try:
            seen = 0
            while seen < 10:
                batch = await consumer.getmany(timeout_ms=1000)
                records = [r for rs in batch.values() for r in rs]
                if not records:
                    continue
                async with producer.transaction():
                    for r in records:
                        await producer.send("eos-aio-out", r.value.upper(), partition=0)
                    offsets = {tp: rs[-1].offset + 1 for tp, rs in batch.items()}
                    await producer.send_offsets_to_transaction(offsets, "eos-aio")
                seen += len(records)
            committed = await consumer.committed(TopicPartition("eos-aio-in", 0))
        finally:
            await producer.stop()
            await consumer.stop()
        return committed

    assert asyncio.run(run()) == 10
    assert read_values(broker.bootstrap, "eos-aio-out", "read_committed", 10) == [
        f"IN-{i}".encode() for i in range(10)
    ]
