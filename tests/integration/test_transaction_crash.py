"""A broker that dies mid-transaction comes back with the transaction whole or aborted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from helpers import BrokerProcess, EmbeddedBroker, wait_until
from test_transactions import read_values, txn_producer

from streams.broker.handlers.produce import append_partition
from streams.broker.records import Record, build_batch


def watermarks(bootstrap: str, topic: str, isolation: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm",
                         "isolation.level": isolation})
    try:
        return consumer.get_watermark_offsets(CTopicPartition(topic, 0), 10)
    finally:
        consumer.close()


def test_sigkill_with_open_transaction_aborts_it_after_restart(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        producer = txn_producer(broker.bootstrap, "crashy", **{"transaction.timeout.ms": 2000})
        producer.begin_transaction()
        for i in range(10):
            producer.produce("crash-txn", key=b"k", value=f"open-{i}".encode())
        assert producer.flush(15) == 0
        broker.kill()
        broker.start()
        # The data survived (acks=all), but the transaction never committed: the restarted
        # coordinator must abort it, moving the LSO past it.
        wait_until(lambda: watermarks(broker.bootstrap, "crash-txn", "read_committed")[1] == 11,
                   30, interval=0.3, message="the open transaction to be aborted after restart")
        assert len(read_values(broker.bootstrap, "crash-txn", "read_uncommitted", 10)) == 10
        assert read_values(broker.bootstrap, "crash-txn", "read_committed", 1, timeout=2) == []
        fresh = txn_producer(broker.bootstrap, "crashy")
        fresh.begin_transaction()
        fresh.produce("crash-txn", key=b"k", value=b"after")
        fresh.commit_transaction(15)
        assert read_values(broker.bootstrap, "crash-txn", "read_committed", 1) == [b"after"]
    finally:
        broker.stop()


def test_prepare_commit_without_markers_is_completed_at_start(tmp_path: Path) -> None:
    embedded = EmbeddedBroker(tmp_path / "data").start()
    try:
        producer = txn_producer(embedded.bootstrap, "half")
        producer.begin_transaction()
        for i in range(5):
            producer.produce("half-txn", value=f"v{i}".encode())
        assert producer.flush(15) == 0
        coordinator = embedded.broker.transactions

        async def decide_commit_then_stop_before_markers() -> None:
            meta = coordinator.txns["half"]
            async with meta.lock:
                meta.state = "PrepareCommit"
                await coordinator._persist(meta)

        assert embedded.loop is not None
        asyncio.run_coroutine_threadsafe(
            decide_commit_then_stop_before_markers(), embedded.loop
        ).result(15)
        assert read_values(embedded.bootstrap, "half-txn", "read_committed", 1, timeout=2) == []
        embedded.restart()
        assert embedded.broker.transactions.txns["half"].state == "CompleteCommit"
        assert read_values(embedded.bootstrap, "half-txn", "read_committed", 5) == [
            f"v{i}".encode() for i in range(5)
        ]
    finally:
        embedded.stop()


def test_idempotent_retry_after_restart_is_not_duplicated(tmp_path: Path) -> None:
    """Producer sequence state is rebuilt from the log: a resent batch gets its old offset."""
    embedded = EmbeddedBroker(tmp_path / "data").start()
    try:
        producer = Producer({"bootstrap.servers": embedded.bootstrap, "enable.idempotence": True})
        for i in range(20):
            producer.produce("idem", value=f"v{i}".encode(), partition=0)
        assert producer.flush(15) == 0
        plog = embedded.broker.topics.partition("idem", 0)
        states = plog.producer_state.producers
        (pid, entry), = states.items()
        embedded.restart()
        rebuilt = embedded.broker.topics.partition("idem", 0).producer_state.producers[pid]
        assert rebuilt.epoch == entry.epoch
        assert rebuilt.last_seq == entry.last_seq == 19
        last = rebuilt.batches[-1]
        resent = build_batch(
            [Record(None, b"resent", 0)] * (last.last_seq - last.first_seq + 1),
            producer_id=pid, producer_epoch=entry.epoch, base_sequence=last.first_seq,
        )
        result, _ = embedded.call(
            lambda: append_partition(embedded.broker, "idem", 0, resent)
        )
        assert (result["error_code"], result["base_offset"]) == (0, last.base_offset)
        assert embedded.broker.topics.partition("idem", 0).next_offset == 20
        gap = build_batch([Record(None, b"gap", 0)], producer_id=pid,
                          producer_epoch=entry.epoch, base_sequence=25)
        result, _ = embedded.call(lambda: append_partition(embedded.broker, "idem", 0, gap))
        assert result["error_code"] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    finally:
        embedded.stop()
