"""The at_least_once membership lease gates every produce request (streams/kafka/lease.py).

An instance that stalls before its commit flushes the record caches, for longer than
``session.timeout.ms``, is out of the group when it resumes; its commit then flushes them.
(The commit used to ask a Heartbeat first, and a stall right after its answer hit the same
window.) Before the lease those records were sent (after the new owner's newer values, which a
later restore then reads as the latest) and only the offset commit was refused. With the lease
the produce request is held, the Heartbeat renewing the lease finds the member gone, and the
batch never reaches the broker: the commit fails as "tasks migrated" (a migration error the
stream thread turns into a dirty close and a rejoin), and the production exception handler is
not asked.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import NewTopic
from aiokafka.protocol.produce import ProduceRequest
from helpers import EmbeddedBroker

from streams.kafka import clients
from streams.kafka.batching import RecordCollector
from streams.kafka.internals import (
    FencedByGroupError,
    MembershipLostError,
    client_of,
    group_metadata,
)
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


def test_a_member_stalled_past_its_session_sends_nothing_it_held(broker) -> None:
    asked: list[BaseException] = []

    def production_handler(context: Any, record: Any, exc: BaseException) -> str:
        asked.append(exc)
        return "CONTINUE"

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
            time.sleep(STALL_S)  # the fault itself: the whole process stands still
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


# -- the "no answer" path: the lease has run out and the renewing Heartbeat is not answered ----
#
# The group coordinator stops answering (overloaded, partitioned away, paused) while the
# partition leader still takes produce requests: our broker's JoinGroup, Heartbeat and
# SyncGroup handlers wait while ``silent`` is set (the requests are read, not handled, so the
# member's session is not extended either). Records keep coming all along. Then:
# - while the coordinator is silent, nothing may be written once the lease has run out: it ran
#   out by ``t0 + session - margin`` at the latest (every membership request that could have
#   extended it was sent before ``t0``, when the silence began, and none is answered during
#   it), so no ProduceRequest may reach the socket between then and the end of the silence;
# - nothing is dropped: either the renewal is answered "still a member" and every record held
#   is delivered (the silence ends inside the member's session), or the group says the member
#   is gone and every record held fails as tasks migrated, its input offsets uncommitted, so
#   the next owner processes them again (the silence outlasts the session).

SILENT_SESSION_MS = 12_000
SILENT_HEARTBEAT_MS = 3_000  # the lease's margin: min(heartbeat, session / 4) = 3 s
SILENT_LEASE_S = (SILENT_SESSION_MS - min(SILENT_HEARTBEAT_MS, SILENT_SESSION_MS / 4)) / 1000
COORDINATION_APIS = (11, 12, 14)  # JoinGroup, Heartbeat, SyncGroup
FEED_EVERY_S = 0.05
FEED_KEYS = 7


def _silence_coordinator(monkeypatch: Any) -> threading.Event:
    """While the returned event is set, our broker reads membership requests and does not
    handle them (the fault: a group coordinator that gives no answer)."""
    from streams.broker import handlers

    handlers.load_all()
    silent = threading.Event()
    for api_key in COORDINATION_APIS:
        spec = handlers.REGISTRY[api_key]

        async def unanswered(broker: Any, ctx: Any, body: Any, handle: Any = spec.func) -> Any:
            while silent.is_set():
                await asyncio.sleep(0.01)
            return await handle(broker, ctx, body)

        monkeypatch.setitem(handlers.REGISTRY, api_key, replace(spec, func=unanswered))
    return silent


@dataclass
class _SilentRun:
    """What one coordinator-silence run saw, in ``time.monotonic()`` seconds."""

    silence: tuple[float, float] = (0.0, 0.0)
    writes: list[float] = field(default_factory=list)  # every ProduceRequest put on the wire
    sent: Counter[str] = field(default_factory=Counter)  # records fed, by key
    delivered: Counter[str] = field(default_factory=Counter)  # read back from OUT, by key
    failed: list[tuple[int, BaseException]] = field(default_factory=list)  # (records, error)
    commit_error: BaseException | None = None
    committed_before: int | None = None  # IN's committed offset before the silence
    committed_after: int | None = None
    lease: Any = None

    def written_while_unknown(self) -> list[float]:
        """Produce writes after the lease had run out and before the coordinator answered."""
        start, end = self.silence
        return [t - start for t in self.writes if start + SILENT_LEASE_S <= t < end]


def _run_with_a_silent_coordinator(bootstrap: str, silent: threading.Event,
                                   silence_s: float) -> _SilentRun:
    run = _SilentRun()

    async def main() -> None:
        await _topics(bootstrap)
        consumer = clients.consumer({"bootstrap_servers": bootstrap}, IN, group_id=GROUP,
                                    enable_auto_commit=False,
                                    session_timeout_ms=SILENT_SESSION_MS,
                                    heartbeat_interval_ms=SILENT_HEARTBEAT_MS)
        producer, collector = await _producer_and_collector(bootstrap)
        wire = client_of(producer)
        put_on_the_wire = wire.send

        async def noting_writes(node_id: int, request: Any, **kwargs: Any) -> Any:
            # Installed under the gate: what reaches here is written in the same step.
            if isinstance(request, ProduceRequest):
                run.writes.append(time.monotonic())
            return await put_on_the_wire(node_id, request, **kwargs)

        wire.send = noting_writes
        consumed = {(IN, 0): 0}
        task = SimpleNamespace(flush=lambda: None, consumed=consumed,
                               committed_metadata=lambda tp: "",
                               processor_metadata_changed=False)
        tasks = SimpleNamespace(commit_stores=lambda: None, committed={}, tasks={"0_0": task},
                                running=lambda: [("0_0", task)])
        committer = Committer(GROUP, AT_LEAST_ONCE, tasks, consumer, producer, collector,
                              set(), 30_000, None)
        real_delivery_failed = committer._delivery_failed

        def noting_failures(tp: Any, count: int, exc: BaseException) -> None:
            run.failed.append((count, exc))
            real_delivery_failed(tp, count, exc)

        committer._delivery_failed = noting_failures  # type: ignore[method-assign]
        committer.guard_membership(SILENT_SESSION_MS, SILENT_HEARTBEAT_MS)
        run.lease = committer.lease
        await _join(consumer)
        committer.group = group_metadata(consumer, GROUP)
        feeding = asyncio.Event()
        feeding.set()
        handing_over = asyncio.Lock()  # one flush of the collector at a time, as in the thread

        async def flush() -> None:
            async with handing_over:
                await collector.flush()

        async def feed() -> None:
            """A record every FEED_EVERY_S, handed to the producer as the stream thread does
            (one flush at a time; a flush waits while aiokafka's queue for the partition is
            full), until ``feeding`` is cleared."""
            flushing: asyncio.Future[None] | None = None
            n = 0
            while feeding.is_set():
                key = f"k{n % FEED_KEYS}"
                collector.send(OUT, key.encode(), str(n).encode(), int(time.time() * 1000),
                               (), None)
                run.sent[key] += 1
                n += 1
                consumed[(IN, 0)] = n  # as if each came from IN
                if flushing is None or flushing.done():
                    if flushing is not None:
                        flushing.result()
                    flushing = asyncio.ensure_future(flush())
                await asyncio.sleep(FEED_EVERY_S)
            if flushing is not None:
                await flushing
            await flush()

        try:
            feeder = asyncio.ensure_future(feed())
            await asyncio.sleep(1.0)  # input flowing before the fault
            async with handing_over:  # a member in good standing commits what it fed so far
                await committer.commit()
            run.committed_before = await _committed(consumer)
            # Begin the silence right after a Heartbeat answer: the lease's last extension is
            # then at most the round trip before t0, the member's session on the broker at
            # least as recent.
            expiry = committer.lease.expiry
            deadline = time.monotonic() + 3 * SILENT_HEARTBEAT_MS / 1000
            while committer.lease.expiry == expiry:
                assert time.monotonic() < deadline, "no Heartbeat answered"
                await asyncio.sleep(0.005)
            silent.set()
            start = time.monotonic()
            await asyncio.sleep(silence_s)  # the fault itself: the coordinator gives no answer
            silent.clear()
            run.silence = (start, time.monotonic())
            await asyncio.sleep(1.0)  # input still flowing after it
            feeding.clear()
            await feeder
            try:
                await committer.commit()
            except BaseException as exc:  # noqa: BLE001 - asserted by the tests
                run.commit_error = exc
                # Account for what the failing commit did not get to.
                await collector.wait_delivered(lambda tp, count, exc: run.failed.append(
                    (count, exc)))
            run.committed_after = await _committed(consumer)
        finally:
            silent.clear()
            await producer.stop()
            await consumer.stop()
        run.delivered = await _read_back(bootstrap)

    asyncio.run(main())
    return run


async def _committed(consumer: Any) -> int | None:
    return await consumer.committed(TopicPartition(IN, 0))


async def _read_back(bootstrap: str) -> Counter[str]:
    """Every record in OUT, counted by key."""
    consumer = clients.consumer({"bootstrap_servers": bootstrap}, auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition(OUT, 0)
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        counted: Counter[str] = Counter()
        deadline = time.monotonic() + 30
        while await consumer.position(tp) < end:
            assert time.monotonic() < deadline, "could not read OUT back"
            for records in (await consumer.getmany(timeout_ms=500)).values():
                counted.update(r.key.decode() for r in records)
        return counted
    finally:
        await consumer.stop()


def test_no_answer_inside_the_session_holds_the_records_then_delivers_every_one(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The coordinator is silent past the lease but inside the member's session: the records
    fed meanwhile are held until the renewal is answered, then all delivered."""
    silent = _silence_coordinator(monkeypatch)
    broker = EmbeddedBroker(tmp_path / "broker").start()  # ours: its handlers are silenced
    try:
        # Past the lease (9 s after the last Heartbeat sent), 1.5 s inside the session (12 s
        # after the last Heartbeat handled): the broker still knows the member.
        run = _run_with_a_silent_coordinator(broker.bootstrap, silent, SILENT_LEASE_S + 1.5)
    finally:
        broker.stop()
    start, end = run.silence
    assert [t for t in run.writes if start <= t < start + SILENT_LEASE_S], \
        "no record was written while the lease held: the input did not flow"
    assert run.written_while_unknown() == [], \
        "produce requests went out while the lease had run out and no renewal was answered"
    assert [t for t in run.writes if t >= end], "nothing was written after the silence"
    assert run.lease.renewals >= 1 and run.lease.lost is None
    assert run.failed == [] and run.commit_error is None, (run.failed, run.commit_error)
    assert sum(run.sent.values()) > 0
    assert run.delivered == run.sent, "records were lost or duplicated"
    assert run.committed_after == sum(run.sent.values())


def test_no_answer_past_the_session_fails_the_held_records_as_tasks_migrated(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The coordinator is silent past the member's session: it removes the member, and its
    answer to the renewal says so. Every record held fails as tasks migrated (never sent,
    never dropped silently: the commit fails and the input offsets stay uncommitted, so the
    next owner processes them again)."""
    silent = _silence_coordinator(monkeypatch)
    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        run = _run_with_a_silent_coordinator(broker.bootstrap, silent,
                                             SILENT_SESSION_MS / 1000 + 3)
    finally:
        broker.stop()
    start, _end = run.silence
    assert [t for t in run.writes if start <= t < start + SILENT_LEASE_S], \
        "no record was written while the lease held: the input did not flow"
    assert run.written_while_unknown() == [], \
        "produce requests went out while the lease had run out and no renewal was answered"
    assert isinstance(run.commit_error, MembershipLostError), run.commit_error
    assert isinstance(run.commit_error, MIGRATION_ERRORS)
    assert run.failed and all(isinstance(exc, MembershipLostError) for _, exc in run.failed), \
        run.failed
    assert run.lease.lost is not None
    # Nothing dropped silently: every record fed was delivered or failed as tasks migrated.
    delivered, failed = sum(run.delivered.values()), sum(n for n, _ in run.failed)
    assert delivered + failed == sum(run.sent.values()), (delivered, failed, run.sent)
    assert all(run.delivered[k] <= n for k, n in run.sent.items())
    # ... and the input offsets of the failed records were not committed: they come again.
    assert run.committed_after == run.committed_before
    assert run.committed_before is not None and run.committed_before < sum(run.sent.values())
