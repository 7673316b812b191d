"""KIP-848 ConsumerGroupHeartbeat through the handlers: epochs, incremental revocation (a
partition reaches its new owner only after the old owner released it), commits fenced by member
epoch, hostile heartbeats answered with Kafka's error codes and nothing changed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from handler_calls import call, run_broker

from streams.broker import Broker
from streams.broker.groups import errors
from streams.broker.groups.protocols import GroupType

COMMIT, JOIN, LIST, DELETE, HEARTBEAT, DESCRIBE = 8, 11, 16, 42, 68, 69
FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION = 110, 113, 35



class Member:
    def __init__(self, broker: Broker, member_id: str, instance_id: str | None = None) -> None:
        self.broker, self.member_id, self.epoch = broker, member_id, 0
        self.instance_id = instance_id
        self.owned: set[int] = set()

    async def heartbeat(self, epoch: int | None = None, join: bool = False,
                        owned: set[int] | None = None) -> Any:
        topic_id = self.broker.topics.topics["t"].topic_id
        parts = self.owned if owned is None else owned
        answer = await call(self.broker, HEARTBEAT, 1, {
            "group_id": "g", "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "instance_id": self.instance_id,
            "rebalance_timeout": 30000 if join else -1,
            "subscribed_topic_names": ("t",) if join else None,
            "topic_partitions": () if join else (
                {"topic_id": topic_id, "partitions": tuple(sorted(parts))},)})
        if answer.error_code.value == 0 and epoch is None:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = {p for t in answer.assignment.topic_partitions
                              for p in t.partitions}
        return answer

    async def commit(self, epoch: int, version: int = 9) -> int:
        answer = await call(self.broker, COMMIT, version, {
            "group_id": "g", "generation_id_or_member_epoch": epoch,
            "member_id": self.member_id,
            "topics": ({"name": "t", "partitions": ({"partition_index": 0,
                                                     "committed_offset": 1},)},)})
        return answer.topics[0].partitions[0].error_code.value


def run(tmp_path: Path, body: Any) -> None:
    run_broker(tmp_path, {"offsets_topic_num_partitions": 2,
                          "group_consumer_heartbeat_interval_ms": 500}, body, {"t": 4})


def test_incremental_revocation_and_epoch_fencing(tmp_path: Path) -> None:
    async def body(broker: Broker) -> None:
        a, b = Member(broker, "member-a"), Member(broker, "member-b")
        joined = await a.heartbeat(join=True)
        # Epoch 2: Kafka bumps once for the new member and once for the new topic metadata.
        assert (joined.error_code.value, joined.member_epoch, a.owned) == (0, 2, {0, 1, 2, 3})
        assert joined.heartbeat_interval.total_seconds() == 0.5
        b_joined = await b.heartbeat(join=True)
        assert b_joined.member_epoch == 3 and b.owned == set()  # a still owns everything
        revoke = await a.heartbeat()
        assert revoke.member_epoch == 2 and len(a.owned) == 2  # told to give two up
        assert await a.commit(2) == errors.NONE  # still epoch 2 until it has revoked
        assert await a.commit(3) == STALE_MEMBER_EPOCH
        assert await a.commit(2, version=8) == UNSUPPORTED_VERSION
        nothing_yet = await b.heartbeat(owned=set())
        assert b.owned == set() and nothing_yet.member_epoch == 3
        # a's next heartbeat still reports the old partitions: not released yet.
        await a.heartbeat(owned={0, 1, 2, 3})
        assert (await b.heartbeat()).assignment is None and b.owned == set()
        released = await a.heartbeat()  # now owning only what it kept
        assert released.member_epoch == 3
        await b.heartbeat()
        assert len(b.owned) == 2 and not (a.owned & b.owned) and b.epoch == 3
        assert await b.commit(3) == errors.NONE

        # Hostile heartbeats: Kafka's codes, and nothing changes.
        forged = await a.heartbeat(epoch=7)
        assert forged.error_code.value == FENCED_MEMBER_EPOCH
        older = await a.heartbeat(epoch=0, owned=set())
        assert older.error_code.value == 42  # INVALID_REQUEST: a rejoin must name topics
        stranger = Member(broker, "nobody")
        assert (await stranger.heartbeat(epoch=3)).error_code.value == errors.UNKNOWN_MEMBER_ID
        assert await stranger.commit(2) == errors.UNKNOWN_MEMBER_ID
        assert (await a.heartbeat()).member_epoch == 3 and len(a.owned) == 2

        # Another protocol type cannot use the id (classic consumers may join: KIP-848
        # migration, tests/integration/test_group_migration.py); admin answers name the type.
        join = await call(broker, JOIN, 9, {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "protocol_type": "connect",
            "protocols": ({"name": "sessioned", "metadata": b""},)})
        assert join.error_code.value == errors.INCONSISTENT_GROUP_PROTOCOL
        listed = await call(broker, LIST, 5, {"types_filter": ("consumer",)})
        assert [(g.group_id, g.group_state, g.group_type, g.protocol_type)
                for g in listed.groups] == [("g", "Stable", "consumer", "consumer")]
        deleted = await call(broker, DELETE, 2, {"groups_names": ("g",)})
        assert deleted.results[0].error_code.value == errors.NON_EMPTY_GROUP
        described = await call(broker, DESCRIBE, 1, {"group_ids": ("g", "other"),
                                                     "include_authorized_operations": False})
        g, other = described.groups
        assert (g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
            "Stable", 3, 3, "uniform")
        assert sorted((m.member_id, m.member_epoch, len(m.assignment.topic_partitions[0]
                       .partitions)) for m in g.members) == [("member-a", 3, 2),
                                                             ("member-b", 3, 2)]
        assert other.error_code.value == errors.GROUP_ID_NOT_FOUND

        # a leaves: b takes everything at the next epoch.
        left = await a.heartbeat(epoch=-1)
        assert left.member_epoch == -1
        await b.heartbeat()
        assert b.owned == {0, 1, 2, 3} and b.epoch == 4
        assert await a.commit(3) == errors.UNKNOWN_MEMBER_ID

    run(tmp_path, body)


def test_session_expiry_fences_the_late_member(tmp_path: Path) -> None:
    async def body(broker: Broker) -> None:
        a, b = Member(broker, "member-a"), Member(broker, "member-b")
        await a.heartbeat(join=True)
        await b.heartbeat(join=True)
        protocol = broker.groups.protocol(GroupType.CONSUMER)
        assert protocol is not None
        now = asyncio.get_running_loop().time()
        protocol.groups["g"].members["member-a"].last_heartbeat = now - 3600  # paused a
        protocol.tick(now)
        assert await a.commit(a.epoch) == errors.UNKNOWN_MEMBER_ID  # its late commit
        assert (await a.heartbeat()).error_code.value == errors.UNKNOWN_MEMBER_ID
        await b.heartbeat()
        assert b.owned == {0, 1, 2, 3}
        left = await b.heartbeat(epoch=-1)
        assert left.error_code.value == 0
        listed = await call(broker, LIST, 5, {})
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("g", "Empty")]
        deleted = await call(broker, DELETE, 2, {"groups_names": ("g",)})
        assert deleted.results[0].error_code.value == errors.NONE
        assert broker.groups.group_type("g") is None

    run(tmp_path, body)


def test_static_member_keeps_its_partitions_across_a_restart(tmp_path: Path) -> None:
    """Leaving with epoch -2 keeps the member's partitions for its group.instance.id; the same
    instance under a new member id takes them over with its epoch, no reassignment; a second
    process with that instance id while the first is active is UNRELEASED_INSTANCE_ID."""
    async def body(broker: Broker) -> None:
        a = Member(broker, "member-a", instance_id="instance-1")
        b = Member(broker, "member-b")
        await a.heartbeat(join=True)
        await b.heartbeat(join=True)
        await a.heartbeat()
        await a.heartbeat()  # revoked half, now at the new epoch
        await b.heartbeat()
        assert len(a.owned) == len(b.owned) == 2
        kept, epoch = set(a.owned), a.epoch
        left = await a.heartbeat(epoch=-2)
        assert (left.error_code.value, left.member_epoch) == (0, -2)
        await b.heartbeat()
        assert len(b.owned) == 2  # a's partitions wait for its instance id
        again = Member(broker, "member-a2", instance_id="instance-1")
        back = await again.heartbeat(join=True)
        assert back.error_code.value == 0 and back.member_epoch == epoch
        assert again.owned == kept
        twin = Member(broker, "member-a3", instance_id="instance-1")
        refused = await twin.heartbeat(join=True)
        assert refused.error_code.value == 111  # UNRELEASED_INSTANCE_ID
        assert (await again.heartbeat()).member_epoch == epoch and again.owned == kept
        gone = await call(broker, HEARTBEAT, 1, {
            "group_id": "nope", "member_id": "x", "member_epoch": -1,
            "rebalance_timeout": -1, "topic_partitions": None})
        assert gone.error_code.value == errors.GROUP_ID_NOT_FOUND

    run(tmp_path, body)


def test_regex_subscription(tmp_path: Path) -> None:
    """SubscribedTopicRegex matches whole non-internal topic names, picks up topics created
    later (a new group epoch), and a pattern RE2/J rejects is INVALID_REGULAR_EXPRESSION."""
    async def body(broker: Broker) -> None:
        broker.topics.create("events-a", 2)
        broker.topics.create("xevents-b", 1)

        async def beat(member_id: str, epoch: int, regex: str | None, owned: Any) -> Any:
            return await call(broker, HEARTBEAT, 1, {
                "group_id": "rx", "member_id": member_id, "member_epoch": epoch,
                "rebalance_timeout": 30000 if epoch == 0 else -1,
                "subscribed_topic_regex": regex, "topic_partitions": owned})

        def names(answer: Any) -> list[tuple[str, int]]:
            by_id = {t.topic_id: name for name, t in broker.topics.topics.items()}
            return sorted((by_id[t.topic_id], p) for t in answer.assignment.topic_partitions
                          for p in t.partitions)

        bad = await beat("m", 0, "events-(?=a)", ())
        assert bad.error_code.value == 128
        joined = await beat("m", 0, "events-.*", ())
        assert joined.error_code.value == 0
        assert names(joined) == [("events-a", 0), ("events-a", 1)]
        broker.topics.create("events-c", 1)
        later = await beat("m", joined.member_epoch, None, (
            {"topic_id": broker.topics.topics["events-a"].topic_id, "partitions": (0, 1)},))
        assert later.member_epoch > joined.member_epoch
        assert names(later) == [("events-a", 0), ("events-a", 1), ("events-c", 0)]
        described = await call(broker, DESCRIBE, 1, {"group_ids": ("rx",),
                                                     "include_authorized_operations": False})
        member = described.groups[0].members[0]
        assert (member.subscribed_topic_regex, member.subscribed_topic_names) == (
            "events-.*", ())

    run(tmp_path, body)


def test_offsets_of_an_empty_consumer_group_expire(tmp_path: Path) -> None:
    """offsets.retention.minutes applies to KIP-848 groups: once empty that long, their
    offsets expire and the group is forgotten; a group with members keeps them."""
    async def body(broker: Broker) -> None:
        a = Member(broker, "member-a")
        await a.heartbeat(join=True)
        assert await a.commit(a.epoch) == errors.NONE
        later = int(time.time() * 1000) + broker.config.offsets_retention_minutes * 60_000 + 1
        assert await broker.groups.expire_offsets(later) == 0  # a member: kept
        await a.heartbeat(epoch=-1)
        # Counted from when the group emptied (just now), not from before the leave.
        later = int(time.time() * 1000) + broker.config.offsets_retention_minutes * 60_000 + 1
        assert await broker.groups.expire_offsets(later) == 1
        assert broker.groups.fetch_offsets("g", [("t", 0)])[0][1] is None
        assert broker.groups.group_type("g") is None

    run(tmp_path, body)
