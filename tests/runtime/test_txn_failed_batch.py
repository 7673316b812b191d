"""A transaction one of whose batches failed never commits.

aiokafka's transactional producer fails a batch on its own (here: a record larger than the
topic's max.message.bytes, MESSAGE_TOO_LARGE; on a cluster: a partition left without a leader
past request.timeout.ms) and still commits the transaction, where Kafka's producer makes it
abortable. The committer must see the failed batch before it commits: otherwise the input
offsets commit without the state and output of the failed batch (soak on a 3-node cluster,
seed 622001, exactly_once_v2: 72 input records committed, none of them counted).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import MessageSizeTooLargeError

from streams.kafka.batching import RecordCollector
from streams.runtime.committer import Committer
from streams.runtime.guarantee import EXACTLY_ONCE_V2

from .kafka_io import read_all


def test_a_transaction_with_a_failed_batch_is_not_committed(broker) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([
                NewTopic("txn-out", 1, 1),
                NewTopic("txn-small", 1, 1, topic_configs={"max.message.bytes": "512"})])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all",
                                    transactional_id="txn-failed-batch",
                                    enable_idempotence=True)
        await producer.start()
        holder: list[Committer] = []

        async def begin_txn() -> None:
            await holder[0].begin_txn()

        collector = RecordCollector(producer, {"txn-out": 1, "txn-small": 1}, begin_txn)
        tasks = SimpleNamespace(commit_stores=lambda: None, committed={}, tasks={})
        committer = Committer("app", EXACTLY_ONCE_V2, tasks, None, producer, collector,
                              set(), 30_000, None)
        holder.append(committer)
        try:
            collector.send("txn-out", b"k", b"fits", 1, (), None)
            collector.send("txn-small", b"k", b"x" * 2000, 1, (), None)  # the broker refuses it
            await collector.flush()
            with pytest.raises(MessageSizeTooLargeError):
                await committer._finish_txn({}, None, False)  # noqa: SLF001
            await committer.abort(None)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert read_all(broker.bootstrap, "txn-out", isolation="read_committed", timeout=10) == []
    assert len(read_all(broker.bootstrap, "txn-out", isolation="read_uncommitted",
                        timeout=10)) == 1  # written, then aborted
