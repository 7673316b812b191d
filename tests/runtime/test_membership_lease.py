"""The at_least_once membership lease gates every produce request (streams/kafka/lease.py).

An instance that stalls right after its commit's membership check answered, for longer than
``session.timeout.ms``, is out of the group when it resumes; its commit then flushes the record
caches. Before the lease those records were sent (after the new owner's newer values, which a
later restore then reads as the latest) and only the offset commit was refused. With the lease
the produce request is held, the Heartbeat renewing the lease finds the member gone, and the
batch never reaches the broker: the commit fails as "tasks migrated" (a migration error the
stream thread turns into a dirty close and a rejoin), and the production exception handler is
not asked.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import NewTopic

import streams.runtime.committer as committer_module
from streams.kafka import clients
from streams.kafka.batching import RecordCollector
from streams.kafka.internals import FencedByGroupError, MembershipLostError, group_metadata
from streams.processor.errors import ErrorHandling, HandlerFailedError
from streams.runtime.committer import Committer
from streams.runtime.config import StreamsConfig
from streams.runtime.generation import build_producer
from streams.runtime.guarantee import AT_LEAST_ONCE
from streams.runtime.thread import MIGRATION_ERRORS

SESSION_MS = 6_000
HEARTBEAT_MS = 1_000
STALL_S = SESSION_MS / 1000 + 3  # the fault: the event loop stands still past the session
GROUP = "lease-app"
IN, OUT = "lease-in", "lease-out"


async def _topics(bootstrap: str) -> None:
    settings = {"bootstrap_servers": bootstrap}
    admin = clients.admin(settings)
    await clients.start(admin, settings)
    try:
        await admin.create_topics([NewTopic(IN, 1, 1), NewTopic(OUT, 1, 1)])
    finally:
        await admin.close()


def _consumer(bootstrap: str) -> Any:
    """A stream thread's consumer, not started (the guard is installed before it joins)."""
    return clients.consumer({"bootstrap_servers": bootstrap}, IN, group_id=GROUP,
                            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                            heartbeat_interval_ms=HEARTBEAT_MS)


async def _join(consumer: Any) -> None:
    """Start ``consumer`` and wait until its partition is assigned."""
    await consumer.start()
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never got its partition"
        await consumer.getmany(timeout_ms=200)


async def _producer_and_collector(bootstrap: str) -> tuple[Any, RecordCollector]:
    """A started at_least_once stream-thread producer and the record collector over it."""
    config = StreamsConfig.from_mapping({"application.id": GROUP, "bootstrap.servers": bootstrap})
    producer = build_producer(config.client_kwargs("producer"), AT_LEAST_ONCE, "unused",
                              config.max_batch_size, config.transaction_timeout_ms)
    await producer.start()
    return producer, RecordCollector(producer, {OUT: 1})


async def _end_offset(bootstrap: str) -> int:
    consumer = clients.consumer({"bootstrap_servers": bootstrap})
    await consumer.start()
    try:
        tp = TopicPartition(OUT, 0)
        return (await consumer.end_offsets([tp]))[tp]
    finally:
        await consumer.stop()


def test_a_member_stalled_past_its_session_sends_nothing_it_held(broker, monkeypatch) -> None:
    asked: list[BaseException] = []

    def production_handler(context: Any, record: Any, exc: BaseException) -> str:
        asked.append(exc)
        return "CONTINUE"

    real_check = committer_module.check_membership
    stalls: list[float] = []

    async def check_then_stall(consumer: Any, group: Any) -> None:
        await real_check(consumer, group)
        if stalls == [0.0]:  # armed: the commit under test stalls in the old window
            stalls.append(time.monotonic())
            time.sleep(STALL_S)  # the fault itself: the whole process stands still

    monkeypatch.setattr(committer_module, "check_membership", check_then_stall)

    async def run() -> tuple[int, int, BaseException | None, Committer]:
        await _topics(broker.bootstrap)
        consumer = _consumer(broker.bootstrap)
        producer, collector = await _producer_and_collector(broker.bootstrap)
        consumed = {(IN, 0): 0}
        task = SimpleNamespace(flush=lambda: None, consumed=consumed,
                               committed_metadata=lambda tp: "",
                               processor_metadata_changed=False)
        tasks = SimpleNamespace(commit_stores=lambda: None, committed={}, tasks={"0_0": task},
                                running=lambda: [("0_0", task)])
        committer = Committer(GROUP, AT_LEAST_ONCE, tasks, consumer, producer, collector,
                              set(), 30_000, None, ErrorHandling(production=production_handler))
        committer.guard_membership(SESSION_MS, HEARTBEAT_MS)
        await _join(consumer)
        committer.group = group_metadata(consumer, GROUP)
        failure: BaseException | None = None
        try:
            collector.send(OUT, b"k", b"1", 1, (), None)
            consumed[(IN, 0)] = 1
            await committer.commit()  # a member in good standing: delivered
            before = await _end_offset(broker.bootstrap)
            collector.send(OUT, b"k", b"stale", 2, (), None)
            consumed[(IN, 0)] = 2
            stalls.append(0.0)
            try:
                await committer.commit()
            except BaseException as exc:  # noqa: BLE001 - asserted below
                failure = exc
            after = await _end_offset(broker.bootstrap)
        finally:
            await producer.stop()
            await consumer.stop()
        return before, after, failure, committer

    before, after, failure, committer = asyncio.run(run())
    assert len(stalls) == 2, "the stall was never injected"
    assert before == 1
    assert after == before, "a record held across the stall reached the broker"
    assert isinstance(failure, MIGRATION_ERRORS) and isinstance(failure, FencedByGroupError), \
        f"expected tasks migrated, got {failure!r}"
    assert isinstance(failure, MembershipLostError), failure
    assert not isinstance(failure, HandlerFailedError)
    assert asked == [], f"the production exception handler was asked: {asked}"
    assert committer.lease is not None and committer.lease.renewals == 0
    assert committer.lease.lost is not None


def test_the_lease_costs_no_request_while_heartbeats_renew_it(broker) -> None:
    """A member in good standing never waits for the lease: the consumer's own heartbeats keep
    it, and records flow without a renewal of the gate's own."""

    async def run() -> tuple[int, Committer]:
        await _topics(broker.bootstrap)
        consumer = _consumer(broker.bootstrap)
        producer, collector = await _producer_and_collector(broker.bootstrap)
        tasks = SimpleNamespace(commit_stores=lambda: None, committed={}, tasks={},
                                running=lambda: [])
        committer = Committer(GROUP, AT_LEAST_ONCE, tasks, consumer, producer, collector,
                              set(), 30_000, None)
        committer.guard_membership(SESSION_MS, HEARTBEAT_MS)
        await _join(consumer)
        committer.group = group_metadata(consumer, GROUP)
        try:
            deadline = time.monotonic() + 2.5 * HEARTBEAT_MS / 1000
            sent = 0
            while time.monotonic() < deadline:  # across a few heartbeat intervals
                collector.send(OUT, b"k", str(sent).encode(), sent, (), None)
                sent += 1
                await collector.flush()
                await producer.flush()
                await collector.wait_delivered()
                await consumer.getmany(timeout_ms=50)
        finally:
            await producer.stop()
            await consumer.stop()
        assert await _end_offset(broker.bootstrap) == sent
        return sent, committer

    sent, committer = asyncio.run(run())
    assert sent > 0
    assert committer.lease is not None and committer.lease.renewals == 0
    assert committer.lease.lost is None
