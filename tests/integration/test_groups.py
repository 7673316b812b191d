"""Consumer groups with real clients: aiokafka, confluent-kafka (librdkafka), kafka-python."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer
from confluent_kafka import TopicPartition as CfTopicPartition
from confluent_kafka.admin import AdminClient
from helpers import wait_until

from streams.broker.groups.group import GroupState


def create_topic(broker: Any, name: str, partitions: int) -> None:
    broker.call(lambda: broker.broker.topics.create(name, partitions))


def produce(broker: Any, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for p in range(partitions):
        for i in range(start, start + per_partition):
            producer.produce(topic, key=f"{p}-{i}".encode(), value=b"v", partition=p)
    assert producer.flush(30) == 0


def group_state(broker: Any, group_id: str) -> tuple[str, int, int]:
    def read() -> tuple[str, int, int]:
        group = broker.broker.groups.groups[group_id]
        return group.state.value, group.generation_id, len(group.members)

    return broker.call(read)


async def until(condition: Any, timeout: float = 30, message: str = "condition") -> None:
    """Async polling with a deadline (the clients need the loop running meanwhile)."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")


# -- aiokafka -----------------------------------------------------------------------------------


def _aio_consumer(broker: Any, topic: str, group: str, **kw: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic, bootstrap_servers=broker.bootstrap, group_id=group,
        auto_offset_reset="earliest", enable_auto_commit=False,
        session_timeout_ms=6000, heartbeat_interval_ms=200, **kw)


def test_aiokafka_group_splits_partitions_and_takes_over(broker: Any) -> None:
    create_topic(broker, "orders", 4)
    seen: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}

    async def run() -> None:
        a = _aio_consumer(broker, "orders", "g-aio")
        b = _aio_consumer(broker, "orders", "g-aio")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        await a.start()
        await b.start()

        async def pump() -> int:
            for name, consumer in (("a", a), ("b", b)):
                if consumer is b and b_stopped:
                    continue
                batch = await consumer.getmany(timeout_ms=100)
                for tp, records in batch.items():
                    seen[name].extend((tp.partition, r.offset) for r in records)
                if batch:
                    await consumer.commit()
            return len(seen["a"]) + len(seen["b"])

        async def produce_round() -> None:
            for p in range(4):
                for _ in range(10):
                    await producer.send("orders", b"v", partition=p)
            await producer.flush()

        b_stopped = False
        try:
            async def split() -> bool:
                await pump()
                return len(a.assignment()) == 2 and len(b.assignment()) == 2

            await until(split, message="two partitions each")
            assert not a.assignment() & b.assignment()
            await produce_round()

            async def all_40() -> bool:
                return await pump() >= 40

            await until(all_40, message="40 records")
            assert {p for p, _ in seen["a"]} == {tp.partition for tp in a.assignment()}
            assert {p for p, _ in seen["b"]} == {tp.partition for tp in b.assignment()}

            await b.stop()  # sends LeaveGroup: a must take over b's partitions
            b_stopped = True

            async def takeover() -> bool:
                await pump()
                return len(a.assignment()) == 4

            await until(takeover, message="a owns all partitions")
            await produce_round()

            async def all_80() -> bool:
                return await pump() >= 80

            await until(all_80, message="80 records")
        finally:
            await producer.stop()
            await a.stop()
            if not b_stopped:
                await b.stop()

    asyncio.run(run())
    everything = seen["a"] + seen["b"]
    assert len(everything) == len(set(everything)) == 80  # each record exactly once
    assert {p for p, _ in everything} == {0, 1, 2, 3}


def test_aiokafka_static_member_rejoins_without_rebalance(broker: Any) -> None:
    create_topic(broker, "static-t", 2)

    async def run() -> None:
        first = _aio_consumer(broker, "static-t", "g-static", group_instance_id="worker-1")
        await first.start()
        try:
            async def assigned() -> bool:
                await first.getmany(timeout_ms=100)
                return len(first.assignment()) == 2

            await until(assigned, message="first assignment")
        finally:
            await first.stop()  # static members do not send LeaveGroup
        state, generation, members = group_state(broker, "g-static")
        assert (state, members) == ("Stable", 1)
        old_id = broker.call(lambda: next(iter(broker.broker.groups.groups["g-static"].members)))

        second = _aio_consumer(broker, "static-t", "g-static", group_instance_id="worker-1")
        await second.start()
        try:
            async def reassigned() -> bool:
                await second.getmany(timeout_ms=100)
                return len(second.assignment()) == 2

            await until(reassigned, message="assignment after rejoin")
            assert group_state(broker, "g-static") == ("Stable", generation, 1)
            new_id = broker.call(
                lambda: next(iter(broker.broker.groups.groups["g-static"].members)))
            assert new_id != old_id
        finally:
            await second.stop()

    asyncio.run(run())


def test_committed_offsets_survive_restart(broker: Any) -> None:
    create_topic(broker, "durable", 2)
    produce(broker, "durable", 2, 5)

    async def commit_and_read(expect: dict[int, int] | None) -> dict[int, int]:
        consumer = _aio_consumer(broker, "durable", "g-durable")
        await consumer.start()
        try:
            tps = [TopicPartition("durable", p) for p in range(2)]
            if expect is None:
                await consumer.commit({tps[0]: 3, tps[1]: 5})
            return {tp.partition: await consumer.committed(tp) for tp in tps}
        finally:
            await consumer.stop()

    assert asyncio.run(commit_and_read(None)) == {0: 3, 1: 5}
    broker.restart()
    assert group_state(broker, "g-durable")[0] == GroupState.EMPTY.value
    assert asyncio.run(commit_and_read({0: 3, 1: 5})) == {0: 3, 1: 5}

    # A new member resumes from the committed offsets.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-durable",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["durable"])
        first: dict[int, int] = {}

        def first_offsets() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                first.setdefault(msg.partition(), msg.offset())
            return len(first) == 1 and 0 in first  # partition 1 is fully consumed

        wait_until(first_offsets, message="resumed record")
        assert first == {0: 3}
    finally:
        consumer.close()


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------


def _cf_consumer(broker: Any, group: str, strategy: str = "range", **extra: Any) -> Consumer:
    return Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": group,
        "partition.assignment.strategy": strategy, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "heartbeat.interval.ms": 300, "session.timeout.ms": 6000,
        **extra,
    })


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_consumers_share_partitions(broker: Any, strategy: str) -> None:
    topic = f"cf-{strategy}"
    create_topic(broker, topic, 4)
    c1 = _cf_consumer(broker, f"g-{strategy}", strategy)
    c2 = _cf_consumer(broker, f"g-{strategy}", strategy)
    seen: dict[int, list[tuple[int, int]]] = {1: [], 2: []}
    consumers = {1: c1, 2: c2}
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])

        def pump() -> int:
            for name, consumer in consumers.items():
                msg = consumer.poll(0.05)
                if msg is not None and msg.error() is None:
                    seen[name].append((msg.partition(), msg.offset()))
            return sum(len(v) for v in seen.values())

        def split() -> bool:
            pump()
            return all(len(c.assignment()) == 2 for c in consumers.values())

        wait_until(split, message=f"{strategy}: two partitions each")
        owned = {name: {tp.partition for tp in c.assignment()} for name, c in consumers.items()}
        assert not owned[1] & owned[2]
        produce(broker, topic, 4, 5)
        wait_until(lambda: pump() >= 20, message="20 records")
        for name in (1, 2):
            assert {p for p, _ in seen[name]} == owned[name]
        everything = seen[1] + seen[2]
        assert len(set(everything)) == len(everything) == 20

        c2.close()
        del consumers[2]
        wait_until(lambda: pump() >= 0 and len(c1.assignment()) == 4,
                   message=f"{strategy}: survivor owns all partitions")
    finally:
        for consumer in consumers.values():
            consumer.close()


def test_admin_lists_describes_and_deletes_groups(broker: Any) -> None:
    create_topic(broker, "adm", 2)
    produce(broker, "adm", 2, 1)
    simple = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-simple",
                       "enable.auto.commit": False})
    simple.commit(offsets=[CfTopicPartition("adm", 0, 1)], asynchronous=False)
    simple.close()

    active = _cf_consumer(broker, "g-active", **{"client.id": "adm-client"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        active.subscribe(["adm"])
        wait_until(lambda: active.poll(0.1) is not None or len(active.assignment()) == 2,
                   message="active consumer assigned")
        wait_until(lambda: group_state(broker, "g-active")[0] == "Stable", message="stable")

        listing = admin.list_consumer_groups(request_timeout=10).result()
        states = {g.group_id: g.state for g in listing.valid}
        assert states["g-active"] == ConsumerGroupState.STABLE
        assert states["g-simple"] == ConsumerGroupState.EMPTY
        only_empty = admin.list_consumer_groups(
            request_timeout=10, states={ConsumerGroupState.EMPTY}).result()
        assert {g.group_id for g in only_empty.valid} == {"g-simple"}

        described = admin.describe_consumer_groups(["g-active", "g-simple"])
        active_desc = described["g-active"].result()
        assert active_desc.state == ConsumerGroupState.STABLE
        assert active_desc.partition_assignor == "range"
        assert len(active_desc.members) == 1
        member = active_desc.members[0]
        assert member.client_id == "adm-client"
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]
        assert described["g-simple"].result().state == ConsumerGroupState.EMPTY

        deleted = admin.delete_consumer_groups(["g-simple", "g-active"], request_timeout=10)
        deleted["g-simple"].result()
        with pytest.raises(KafkaException) as info:
            deleted["g-active"].result()
        assert info.value.args[0].code() == 68  # NON_EMPTY_GROUP
        listing = admin.list_consumer_groups(request_timeout=10).result()
        assert "g-simple" not in {g.group_id for g in listing.valid}
    finally:
        active.close()


# -- kafka-python -------------------------------------------------------------------------------


def test_kafka_python_consumer_group_commits(broker: Any) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    create_topic(broker, "kp", 2)
    produce(broker, "kp", 2, 4)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id="g-kp",
        auto_offset_reset="earliest", enable_auto_commit=False,
        session_timeout_ms=6000, heartbeat_interval_ms=500)
    try:
        # Learn the topic before joining: kafka-python 3.0.12 otherwise assigns nothing, rejoins
        # at once, and now and then never applies the second SyncGroup answer (a client race;
        # the broker's answer is correct), stalling until its session expires.
        assert consumer.partitions_for_topic("kp") == {0, 1}
        consumer.subscribe(["kp"])
        got: list[tuple[int, int]] = []

        def consume() -> bool:
            for records in consumer.poll(timeout_ms=1000).values():
                got.extend((r.partition, r.offset) for r in records)
            return len(got) >= 8

        wait_until(consume, message="kafka-python records")
        consumer.commit()
        assert sorted(got) == [(p, o) for p in range(2) for o in range(4)]
        assert consumer.committed(KpTopicPartition("kp", 0)) == 4
        state, generation, members = group_state(broker, "g-kp")
        assert (state, members) == ("Stable", 1) and generation >= 1  # it may rejoin once
    finally:
        consumer.close()
    wait_until(lambda: group_state(broker, "g-kp")[0] == "Empty", message="empty after close")
