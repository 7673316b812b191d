"""Reading what a run produced, and knowing when it has finished producing.

A run is finished when its output matches the oracle (then a short quiet period lets late
duplicates show), or when the application's group has committed every input record and no
output arrived for ``settle`` seconds (output is then final: anything missing is lost), or at
the deadline. Success ends the wait early; only a failing run waits for the settle period.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient


@dataclass
class ReadResult:
    records: list[Any]
    complete: bool  # the ``done`` predicate held
    reason: str


async def _committed_all(admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, group: str,
                         inputs: list[TopicPartition]) -> bool:
    committed = await admin.list_consumer_group_offsets(group)
    ends = await consumer.end_offsets(inputs)
    for tp in inputs:
        meta = committed.get(tp)
        if ends[tp] > 0 and (meta is None or meta.offset < ends[tp]):
            return False
    return True


async def partitions_of(consumer: AIOKafkaConsumer, topic: str, deadline: float) -> list[int]:
    while True:
        parts = consumer.partitions_for_topic(topic)
        if parts:
            return sorted(parts)
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} never appeared")
        with contextlib.suppress(Exception):
            await consumer._client.force_metadata_update()  # noqa: SLF001
        await asyncio.sleep(0.2)


def read_output(bootstrap: str, topic: str, *, isolation: str, group: str,
                input_topics: list[str], done: Callable[[list[Any]], bool],
                timeout: float = 300.0, settle: float = 20.0, quiet: float = 2.0) -> ReadResult:
    """Every record of ``topic`` from the beginning (per partition in offset order)."""

    async def run() -> ReadResult:
        deadline = time.monotonic() + timeout
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    request_timeout_ms=30_000)
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await consumer.start()
        await admin.start()
        try:
            parts = await partitions_of(consumer, topic, deadline)
            tps = [TopicPartition(topic, p) for p in parts]
            inputs = [TopicPartition(t, p) for t in input_topics
                      for p in await partitions_of(consumer, t, deadline)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            records: list[Any] = []
            last_new = time.monotonic()
            next_check = 0.0
            quiet_until: float | None = None
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                now = time.monotonic()
                for tp in sorted(batch):
                    records.extend(batch[tp])
                    last_new = now
                if quiet_until is not None:
                    if now >= quiet_until:
                        return ReadResult(records, True, "output matches")
                    continue
                if now < next_check:
                    continue
                next_check = now + 1.0
                if done(records):
                    quiet_until = now + quiet
                elif now > deadline:
                    return ReadResult(records, False, f"deadline ({timeout:.0f}s)")
                elif now - last_new > settle and await _committed_all(
                        admin, consumer, group, inputs):
                    return ReadResult(records, False, f"input committed, no output for "
                                                      f"{settle:.0f}s")
        finally:
            await consumer.stop()
            await admin.close()

    return asyncio.run(run())


def wait_committed(bootstrap: str, group: str, topics: list[str], timeout: float) -> None:
    """Poll until ``group`` has committed every record of ``topics`` (a table to be loaded
    before the stream that joins it starts)."""

    async def run() -> None:
        deadline = time.monotonic() + timeout
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await consumer.start()
        await admin.start()
        try:
            tps = [TopicPartition(t, p) for t in topics
                   for p in await partitions_of(consumer, t, deadline)]
            while not await _committed_all(admin, consumer, group, tps):
                if time.monotonic() > deadline:
                    raise AssertionError(f"group {group} never committed all of {topics}")
                await asyncio.sleep(0.2)
        finally:
            await consumer.stop()
            await admin.close()

    asyncio.run(run())
