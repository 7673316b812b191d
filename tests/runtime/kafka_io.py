"""Small synchronous helpers for runtime tests: create topics, produce, read a topic fully."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError
from helpers import create_topics

__all__ = ["committed", "committed_offsets", "create_topics", "latest_by_key", "produce",
           "read_all"]


def committed(bootstrap: str, group: str, topic: str) -> dict[int, tuple[int, str]]:
    """The group's committed offsets of ``topic`` with their metadata strings, per partition;
    none while its coordinator is not ready (Apache Kafka answers FindCoordinator with
    COORDINATOR_NOT_AVAILABLE until it has created and loaded __consumer_offsets, after the
    first consumer asked for it)."""
    async def run() -> dict[int, tuple[int, str]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            offsets = await admin.list_consumer_group_offsets(group)
        except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
            return {}
        finally:
            await admin.close()
        return {tp.partition: (meta.offset, meta.metadata) for tp, meta in offsets.items()
                if tp.topic == topic}

    return asyncio.run(run())


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets of ``topic`` per partition (see ``committed``)."""
    return {p: offset for p, (offset, _meta) in committed(bootstrap, group, topic).items()}


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int]],
            partition: int | None = None, idempotent: bool = False) -> None:
    """Send (key, value, timestamp) records, keyed records partitioned by murmur2.

    ``idempotent``: each record is written once even when a batch is retried (a leader
    killed after writing it but before answering); fault tests that count their input need
    that, as Kafka's producer does it by default since 3.0."""
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                    enable_idempotence=idempotent)
        await producer.start()
        try:
            for key, value, ts in records:
                await producer.send(topic, value, key=key, timestamp_ms=ts, partition=partition)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


def read_all(bootstrap: str, topic: str, isolation: str = "read_committed",
             until: Callable[[list[Any]], bool] | None = None, timeout: float = 60.0,
             quiet: float = 0.5) -> list[Any]:
    """Every record of ``topic`` (all partitions) from the beginning, in partition order.

    Reads until ``until(records)`` is true (or the end offsets if no condition), then keeps
    reading for ``quiet`` seconds so late duplicates would show up.
    """
    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            deadline = time.monotonic() + timeout
            parts: set[int] | None = None
            while not parts:
                parts = consumer.partitions_for_topic(topic)
                if not parts:
                    await consumer._client.force_metadata_update()  # noqa: SLF001
                    if time.monotonic() > deadline:
                        raise AssertionError(f"topic {topic} never appeared")
                    await asyncio.sleep(0.05)
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            records: list[Any] = []
            done_at: float | None = None
            while True:
                batch = await consumer.getmany(timeout_ms=100)
                for tp in sorted(batch):
                    records.extend(batch[tp])
                now = time.monotonic()
                if done_at is None:
                    if until is not None:
                        finished = until(records)
                    else:
                        ends = await consumer.end_offsets(tps)
                        finished = all([await consumer.position(tp) >= ends[tp] for tp in tps])
                    if finished:
                        done_at = now + quiet
                elif now >= done_at:
                    return records
                if now > deadline:
                    raise AssertionError(
                        f"timed out reading {topic}: {len(records)} records so far")
        finally:
            await consumer.stop()

    return asyncio.run(run())


def latest_by_key(records: list[Any], key_decode: Callable[[bytes], Any] = bytes.decode,
                  value_decode: Callable[[bytes], Any] = lambda b: int.from_bytes(b, "big")
                  ) -> dict[Any, Any]:
    """Last value per key (records within a partition are in offset order)."""
    result = {}
    for r in records:
        result[key_decode(r.key)] = None if r.value is None else value_decode(r.value)
    return result
