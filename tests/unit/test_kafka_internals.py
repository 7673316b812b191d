"""Contract tests for streams.kafka.internals, the one module that touches aiokafka's private
internals: if an aiokafka upgrade moves them, these fail first, with a clear name."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.errors import KafkaTimeoutError
from aiokafka.protocol.group import JoinGroupRequest
from aiokafka.protocol.metadata import MetadataRequest
from helpers import create_topics

from streams.kafka import clients as kafka_clients
from streams.kafka.internals import (
    FencedByGroupError,
    GroupFencedOffsets,
    GroupMetadata,
    MembershipLease,
    UnstableOffsetCommitError,
    check_membership,
    client_of,
    close_producer,
    delivery_timeout_ms,
    fetch_position,
    fetch_stable_offsets,
    group_generation,
    group_metadata,
    high_watermarks,
    list_end_offsets,
    set_delivery_timeout,
    wait_on_metadata,
)

GROUP = "contract-group"
TOPIC = "contract-in"
pytestmark = pytest.mark.on_kafka  # the same contract on Apache Kafka (make test)


async def _joined_consumer(bootstrap: str) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                isolation_level="read_committed")
    await consumer.start()
    for _ in range(200):
        if consumer.assignment():
            break
        await consumer.getmany(timeout_ms=50)
    assert consumer.assignment(), "the consumer never got its partition"
    return consumer


async def _txn_producer(bootstrap: str) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="contract-txn",
                                enable_idempotence=True)
    await producer.start()
    return producer


def test_group_metadata_and_position_and_metadata_wait(broker) -> None:
    create_topics(broker.bootstrap, {TOPIC: 1})

    async def run() -> None:
        consumer = await _joined_consumer(broker.bootstrap)
        try:
            meta = group_metadata(consumer, GROUP)
            assert meta.generation_id >= 1 and meta.member_id
            tp = TopicPartition(TOPIC, 0)
            await consumer.position(tp)
            assert fetch_position(consumer, tp) == 0
            assert fetch_position(consumer, TopicPartition("not-assigned", 0)) is None
            assert await wait_on_metadata(consumer, TOPIC) == {0}
            assert client_of(consumer) is not None
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_txn_offsets_of_a_stale_generation_are_fenced_and_current_ones_commit(broker) -> None:
    create_topics(broker.bootstrap, {TOPIC: 1})
    tp = TopicPartition(TOPIC, 0)

    async def run() -> None:
        consumer = await _joined_consumer(broker.bootstrap)
        producer = await _txn_producer(broker.bootstrap)
        fenced = GroupFencedOffsets(producer)
        try:
            current = group_metadata(consumer, GROUP)
            stale = GroupMetadata(GROUP, current.generation_id - 1, current.member_id)
            await producer.begin_transaction()
            with pytest.raises(FencedByGroupError):
                await fenced.send_offsets({tp: 5}, stale)
            await producer.abort_transaction()
            unknown = GroupMetadata(GROUP, current.generation_id, "someone-else")
            await producer.begin_transaction()
            with pytest.raises(FencedByGroupError):
                await fenced.send_offsets({tp: 5}, unknown)
            await producer.abort_transaction()
            assert await fetch_stable_offsets(consumer, GROUP, [tp], timeout_s=5) == {}

            await producer.begin_transaction()
            await fenced.send_offsets({tp: 7}, current)
            # The transaction is open: its offsets are not stable yet (KIP-447).
            with pytest.raises(UnstableOffsetCommitError):
                await fetch_stable_offsets(consumer, GROUP, [tp], timeout_s=0.3)
            await producer.commit_transaction()
            assert await fetch_stable_offsets(consumer, GROUP, [tp], timeout_s=5) == {tp: 7}
        finally:
            await producer.stop()
            await consumer.stop()

    asyncio.run(run())


def test_membership_check_passes_for_the_current_generation_only(broker) -> None:
    create_topics(broker.bootstrap, {TOPIC: 1})

    async def run() -> None:
        consumer = await _joined_consumer(broker.bootstrap)
        try:
            current = group_metadata(consumer, GROUP)
            await check_membership(consumer, current)
            with pytest.raises(FencedByGroupError):
                await check_membership(consumer, GroupMetadata(
                    GROUP, current.generation_id + 1, current.member_id))
            with pytest.raises(FencedByGroupError):
                await check_membership(consumer, GroupMetadata(
                    GROUP, current.generation_id, "gone-member"))
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_high_watermarks_reach_past_an_open_transaction(broker) -> None:
    """A read_committed consumer's end_offsets stop at the last stable offset; high_watermarks
    (what an exactly-once restore must reach) include the open transaction's records.
    list_end_offsets through another client (a Connect log's producer) gives either one."""
    topic = "contract-hw"
    create_topics(broker.bootstrap, {topic: 1})
    tp = TopicPartition(topic, 0)

    async def run() -> None:
        producer = await _txn_producer(broker.bootstrap)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    isolation_level="read_committed")
        await consumer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"committed")
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"open")
            await producer.send_and_wait(topic, b"open")
            stable = (await consumer.end_offsets([tp]))[tp]
            high = (await high_watermarks(consumer, [tp]))[tp]
            assert (stable, high) == (2, 4)  # record + commit marker; then two open records
            other = client_of(producer)
            assert (await list_end_offsets(other, [tp], isolation_level=1))[tp] == stable
            assert (await list_end_offsets(other, [tp], isolation_level=0))[tp] == high
            await producer.commit_transaction()
            # Apache Kafka writes the commit marker after EndTxn has answered: poll for it.
            deadline = time.monotonic() + 10
            while (await consumer.end_offsets([tp]))[tp] != 5 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert (await consumer.end_offsets([tp]))[tp] == 5
            assert (await high_watermarks(consumer, [tp]))[tp] == 5
        finally:
            await consumer.stop()
            await producer.stop()

    asyncio.run(run())


def test_a_generation_stops_its_consumer_when_the_updater_close_is_cut_short(broker) -> None:
    """aiokafka's stop() can raise a CancelledError of its own part way (a broker restart
    mid-fetch). A generation whose state updater's close raised so must still stop its main
    consumer: left running, it stayed in the group as a member that never polled, holding
    its tasks for max.poll.interval.ms (5 minutes; soak seed 910029)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.runtime.generation import ClientGeneration

    create_topics(broker.bootstrap, {TOPIC: 1})

    class CutShortUpdater:
        async def close(self) -> None:
            raise asyncio.CancelledError("inside aiokafka")

    class NoTasks:
        def close_all(self, clean: bool) -> int:
            return 0

    async def members() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            [response] = await admin.describe_consumer_groups([GROUP])
            [group] = response.to_object()["groups"]
            return len(group["members"])
        finally:
            await admin.close()

    async def run() -> None:
        consumer = await _joined_consumer(broker.bootstrap)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        assert await members() == 1
        gen = ClientGeneration(1, consumer, producer, None, NoTasks(), None,  # type: ignore[arg-type]
                               CutShortUpdater())  # type: ignore[arg-type]
        await gen.close()  # no exception: the cancellation was not ours
        assert await members() == 0

    asyncio.run(run())


# -- one JoinGroup per join for a member offering several protocols (join_with_every_protocol) --

class _NoPartitions(AbstractPartitionAssignor):
    """An assignor that hands out nothing (as Connect's: its assignment is in the user data)."""

    name = "unused"

    def __init__(self, name: str) -> None:
        self.name = name

    def metadata(self, topics: Any) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(0, sorted(topics), b"")

    def assign(self, cluster: Any, members: Any) -> dict[str, ConsumerProtocolMemberAssignment]:
        return {m: ConsumerProtocolMemberAssignment(0, [], b"") for m in members}

    def on_assignment(self, assignment: Any) -> None:
        pass


PROTOCOLS = ("sessioned", "compatible", "default")  # what a Connect worker offers


def _three_protocol_member(bootstrap: str, group: str) -> AIOKafkaConsumer:
    return kafka_clients.consumer(
        {"bootstrap_servers": bootstrap}, TOPIC, group_id=group, enable_auto_commit=False,
        partition_assignment_strategy=tuple(_NoPartitions(n) for n in PROTOCOLS),
        session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=2**31 - 1)


async def _keep_polling(consumer: AIOKafkaConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=200)


def test_a_member_offering_three_protocols_joins_in_one_generation(broker) -> None:
    """aiokafka 0.14.0 alone sends a JoinGroup per assignor, each with a longer protocol list,
    and the coordinator rebalances for each: a lone member ended up in generation 3."""
    create_topics(broker.bootstrap, {TOPIC: 1})

    async def run() -> None:
        member = _three_protocol_member(broker.bootstrap, "three-protocols")
        await member.start()  # returns once the member has its assignment
        try:
            assert group_generation(member) == 1
        finally:
            await member.stop()

    asyncio.run(run())


def test_a_member_joining_while_the_group_waits_for_a_dead_one_gets_its_assignment(broker) -> None:
    """Connect fault soak seed 5012: a worker killed mid-rebalance (it joined, then never synced
    nor left) and restarted at once. Its new member joined while the group waited for the dead
    one's session to end, one JoinGroup behind the running member's three; from then on each
    one's next JoinGroup (with a longer protocol list) rebalanced the group right after the
    other synced, and the new member never got an assignment (1,350 JoinGroups in 5 minutes)."""
    create_topics(broker.bootstrap, {TOPIC: 1})
    group = "dead-member-rejoin"

    async def dead_member_joins() -> AIOKafkaClient:
        """JoinGroup twice (KIP-394's member id first), then silence: no SyncGroup, no
        heartbeat, no LeaveGroup, as a worker SIGSTOPped and SIGKILLed."""
        client = kafka_clients.network_client({"bootstrap_servers": broker.bootstrap})
        await client.bootstrap()
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group)
        meta = ConsumerProtocolMemberMetadata(0, [TOPIC], b"").encode()
        member = ""
        for _ in range(2):
            resp = await client.send(coordinator, JoinGroupRequest(
                group, 6000, 60000, member, None, "consumer", [(p, meta) for p in PROTOCOLS]))
            member = resp.member_id
            if resp.error_code == 0:
                return client
        raise AssertionError(f"the dead member could not join: error {resp.error_code}")

    async def run() -> None:
        running = _three_protocol_member(broker.bootstrap, group)
        await running.start()
        polling = asyncio.create_task(_keep_polling(running))
        dead = await dead_member_joins()
        late = _three_protocol_member(broker.bootstrap, group)
        try:
            # The group completes its rebalance once the dead member's 6 s session ends.
            await asyncio.wait_for(late.start(), 30)
            late_polling = asyncio.create_task(_keep_polling(late))
            deadline = time.monotonic() + 20
            while group_generation(late) != group_generation(running):
                assert time.monotonic() < deadline, "the two members never shared a generation"
                await asyncio.sleep(0.1)
            late_polling.cancel()
        finally:
            polling.cancel()
            await asyncio.gather(running.stop(), late.stop(), dead.close())


def test_delivery_timeout_is_the_batch_ttl_of_batches_created_after() -> None:
    """aiokafka expires a batch after its accumulator's TTL (request.timeout.ms otherwise)."""
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", request_timeout_ms=1_000)
        assert delivery_timeout_ms(producer) is None
        set_delivery_timeout(producer, 90_000)
        assert delivery_timeout_ms(producer) == 90_000
        batch = producer._message_accumulator._append_batch(  # noqa: SLF001
            producer.create_batch(), TopicPartition("t", 0))
        assert not batch.expired()
        batch._ctime -= 2  # noqa: SLF001 - older than request.timeout.ms
        assert not batch.expired()
        batch._ctime -= 89  # noqa: SLF001 - older than delivery.timeout.ms
        assert batch.expired()

    asyncio.run(run())


def test_close_producer_fails_what_it_could_not_deliver(broker) -> None:
    """A producer keeping its batches for ever (Kafka Connect's delivery.timeout.ms) whose
    cluster is gone: aiokafka's stop() would wait for ever; close_producer gives up after its
    timeout, as Kafka's close(timeout), and the batch's sender sees the error."""
    create_topics(broker.bootstrap, {TOPIC: 1})

    async def run() -> None:
        producer = kafka_clients.producer({"bootstrap_servers": broker.bootstrap,
                                           "request_timeout_ms": 1000},
                                          delivery_timeout_ms=2**31 - 1)
        await producer.start()
        await (await producer.send(TOPIC, b"delivered"))
        await asyncio.to_thread(broker.stop)
        try:
            pending = await producer.send(TOPIC, b"never")
            delivered = await asyncio.wait_for(close_producer(producer, 2), 60)
            assert delivered is False
            with pytest.raises(KafkaTimeoutError):
                await pending
        finally:
            await asyncio.to_thread(broker.start)

    asyncio.run(run())


def test_a_ready_connection_writes_a_request_without_suspending(broker) -> None:
    """The membership lease's gate (guard_produce_with_membership) checks the lease after
    ``ready()`` and then calls aiokafka's ``send``: that must reach the transport write before
    the event loop runs anything else, or the window the gate closes would open again."""
    create_topics(broker.bootstrap, {TOPIC: 1})

    async def run() -> list[bool]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            client = client_of(producer)
            node_id = next(iter(b.nodeId for b in client.cluster.brokers()))
            assert await client.ready(node_id)
            conn = client._conns[(node_id, ConnectionGroup.DEFAULT)]  # noqa: SLF001
            writer = conn._writer  # noqa: SLF001
            loop_ran: list[bool] = []
            seen: list[bool] = []
            write = writer.write

            def noting_write(data: bytes) -> None:
                seen.append(bool(loop_ran))
                write(data)

            writer.write = noting_write
            try:
                asyncio.get_running_loop().call_soon(loop_ran.append, True)
                await client.send(node_id, MetadataRequest([TOPIC]))
            finally:
                writer.write = write
            return seen
        finally:
            await producer.stop()

    seen = asyncio.run(run())
    assert seen[:1] == [False], "aiokafka's send suspended before writing the request"


def test_the_membership_lease_counts_from_the_send_and_its_answer(monkeypatch) -> None:
    """lease.py's arithmetic: NONE extends by min(session, rebalance timeout) from when the
    request was sent; REBALANCE_IN_PROGRESS extends the session bound only; other answers
    never extend it; the margin is min(heartbeat interval, session / 4)."""
    from streams.kafka import lease as lease_module

    now = [1000.0]
    monkeypatch.setattr(lease_module, "clock", lambda: now[0])
    lease = MembershipLease(session_timeout_ms=20_000, rebalance_timeout_ms=30_000,
                            heartbeat_interval_ms=3_000)
    assert not lease.holds()  # nothing answered yet
    lease.answered(999.0, 0)
    assert lease.expiry == 999.0 + 20 - 3
    lease.answered(1001.0, 27)  # REBALANCE_IN_PROGRESS: the session bound moves ...
    assert lease.expiry == 1001.0 + 20 - 3
    for _ in range(5):  # ... but never past the rebalance timeout of the last NONE
        lease.answered(lease.expiry + 3, 27)
    assert lease.expiry == 999.0 + 30 - 3
    lease.answered(1500.0, 25)  # UNKNOWN_MEMBER_ID extends nothing
    assert lease.expiry == 999.0 + 30 - 3
    now[0] = lease.expiry - 0.001
    assert lease.holds()
    now[0] = lease.expiry
    assert not lease.holds()
    short = MembershipLease(session_timeout_ms=6_000, rebalance_timeout_ms=30_000,
                            heartbeat_interval_ms=3_000)
    assert short.margin_s == 1.5  # a quarter of the session
