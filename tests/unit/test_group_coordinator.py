"""The classic group state machine, driven directly (no sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from streams.broker.config import BrokerConfig
from streams.broker.groups import errors
from streams.broker.groups.coordinator import GroupCoordinator, JoinRequest
from streams.broker.groups.group import GroupState
from streams.broker.groups.member import JoinResult
from streams.broker.groups.offsets_codec import OffsetAndMetadata
from streams.broker.topics import TopicManager


class FakeBroker:
    """Just what the coordinator uses: config, topics, spawn."""

    def __init__(self, data_dir: Path, **overrides: Any) -> None:
        self.config = BrokerConfig.from_mapping(
            {"data_dir": data_dir, "group_initial_rebalance_delay_ms": 0,
             "offsets_topic_num_partitions": 3, **overrides})
        self.topics = TopicManager(self.config)
        self.topics.load()
        self.tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.append(task)
        return task


def run(tmp_path: Path, body: Callable[[GroupCoordinator], Awaitable[None]],
        **overrides: Any) -> None:
    async def main() -> None:
        broker = FakeBroker(tmp_path, **overrides)
        coordinator = GroupCoordinator(broker)  # type: ignore[arg-type]
        await coordinator.start()
        try:
            await asyncio.wait_for(body(coordinator), 10)
        finally:
            await coordinator.stop()
            for task in broker.tasks:
                task.cancel()
            await asyncio.gather(*broker.tasks, return_exceptions=True)
            broker.topics.close()

    asyncio.run(main())


def join_req(member_id: str = "", protocols: tuple[tuple[str, bytes], ...] = (("range", b"m"),),
             **kw: Any) -> JoinRequest:
    fields: dict[str, Any] = {
        "group_id": "g", "member_id": member_id, "group_instance_id": None,
        "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
        "protocol_type": "consumer", "protocols": protocols, "client_id": "c",
    }
    fields.update(kw)
    return JoinRequest(**fields)


async def join(coord: GroupCoordinator, **kw: Any) -> JoinResult:
    """A v4+ client's join: MEMBER_ID_REQUIRED first, then the real join."""
    first = await coord.join_group(join_req(**kw))
    assert first.error == errors.MEMBER_ID_REQUIRED
    assert first.member_id
    kw.pop("member_id", None)
    return await coord.join_group(join_req(member_id=first.member_id, **kw))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_first_join_requires_member_id_then_generation_one(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        result = await join(coord)
        assert result.error == errors.NONE
        assert result.generation_id == 1
        assert result.leader == result.member_id
        assert result.protocol_type == "consumer" and result.protocol_name == "range"
        assert [m[0] for m in result.members] == [result.member_id]
        sync = await coord.sync_group("g", 1, result.member_id, None, {result.member_id: b"A"})
        assert (sync.error, sync.assignment) == (errors.NONE, b"A")
        assert coord.groups["g"].state is GroupState.STABLE
        assert coord.heartbeat("g", 1, result.member_id) == errors.NONE

    run(tmp_path, body)


def test_old_versions_join_without_member_id_round_trip(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        result = await coord.join_group(join_req(require_known_member_id=False))
        assert result.error == errors.NONE and result.generation_id == 1

    run(tmp_path, body)


@pytest.mark.parametrize("timeout", [5999, 1_800_001])
def test_session_timeout_bounds(tmp_path: Path, timeout: int) -> None:
    async def body(coord: GroupCoordinator) -> None:
        result = await coord.join_group(join_req(session_timeout_ms=timeout))
        assert result.error == errors.INVALID_SESSION_TIMEOUT

    run(tmp_path, body)


def test_protocol_must_be_common_and_vote_decides(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord, protocols=(("range", b"a"), ("roundrobin", b"a")))
        await coord.sync_group("g", 1, a.member_id, None, {})
        bad = await coord.join_group(join_req(protocols=(("sticky", b""),)))
        assert bad.error == errors.INCONSISTENT_GROUP_PROTOCOL
        wrong_type = await coord.join_group(join_req(protocol_type="connect"))
        assert wrong_type.error == errors.INCONSISTENT_GROUP_PROTOCOL
        # b prefers roundrobin, c prefers roundrobin, a prefers range: roundrobin wins 2-1.
        b_first = await coord.join_group(join_req(protocols=(("roundrobin", b"b"),)))
        c_first = await coord.join_group(
            join_req(protocols=(("roundrobin", b"c"), ("range", b"c"))))
        b_join = asyncio.ensure_future(coord.join_group(
            join_req(member_id=b_first.member_id, protocols=(("roundrobin", b"b"),))))
        c_join = asyncio.ensure_future(coord.join_group(join_req(
            member_id=c_first.member_id, protocols=(("roundrobin", b"c"), ("range", b"c")))))
        await settle()
        assert coord.heartbeat("g", 1, a.member_id) == errors.REBALANCE_IN_PROGRESS
        a2 = await coord.join_group(
            join_req(member_id=a.member_id, protocols=(("range", b"a"), ("roundrobin", b"a"))))
        b2, c2 = await b_join, await c_join
        assert {r.generation_id for r in (a2, b2, c2)} == {2}
        assert {r.protocol_name for r in (a2, b2, c2)} == {"roundrobin"}
        leader = [r for r in (a2, b2, c2) if r.members]
        assert len(leader) == 1 and leader[0].member_id == a.member_id
        assert dict((m, md) for m, _, md in leader[0].members) == {
            a.member_id: b"a", b_first.member_id: b"b", c_first.member_id: b"c"}

    run(tmp_path, body)


def test_follower_sync_waits_for_leader_assignment(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord)
        await coord.sync_group("g", 1, a.member_id, None, {a.member_id: b"all"})
        b_first = await coord.join_group(join_req())
        b_join = asyncio.ensure_future(coord.join_group(join_req(member_id=b_first.member_id)))
        await settle()
        a2 = await coord.join_group(join_req(member_id=a.member_id))
        b2 = await b_join
        assert a2.generation_id == b2.generation_id == 2
        assert a2.leader == a.member_id and b2.members == ()
        assert coord.heartbeat("g", 2, b2.member_id) == errors.NONE  # CompletingRebalance
        follower = asyncio.ensure_future(coord.sync_group("g", 2, b2.member_id, None, {}))
        await settle()
        assert not follower.done()
        assert coord.heartbeat("g", 1, b2.member_id) == errors.ILLEGAL_GENERATION
        leader = await coord.sync_group("g", 2, a.member_id, None,
                                        {a.member_id: b"p0", b2.member_id: b"p1"})
        assert leader.assignment == b"p0"
        assert (await follower).assignment == b"p1"
        assert coord.heartbeat("g", 2, "nobody") == errors.UNKNOWN_MEMBER_ID
        assert (await coord.sync_group("g", 1, a.member_id, None, {})).error == \
            errors.ILLEGAL_GENERATION

    run(tmp_path, body)


def test_member_that_does_not_rejoin_is_dropped_after_rebalance_timeout(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord, rebalance_timeout_ms=100)
        await coord.sync_group("g", 1, a.member_id, None, {})
        b = await join(coord, rebalance_timeout_ms=100)  # a never rejoins
        assert b.generation_id == 2
        assert b.leader == b.member_id
        assert list(coord.groups["g"].members) == [b.member_id]
        assert coord.heartbeat("g", 1, a.member_id) == errors.UNKNOWN_MEMBER_ID

    run(tmp_path, body)


def test_session_expiry_triggers_rebalance_and_empties_group(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord)
        await coord.sync_group("g", 1, a.member_id, None, {})
        coord.expire_sessions(asyncio.get_running_loop().time() + 11)
        group = coord.groups["g"]
        assert group.state is GroupState.EMPTY
        assert group.generation_id == 2
        assert coord.heartbeat("g", 2, a.member_id) == errors.UNKNOWN_MEMBER_ID

    run(tmp_path, body)


def test_background_expiry_removes_silent_member(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord, session_timeout_ms=100)
        await coord.sync_group("g", 1, a.member_id, None, {})
        group = coord.groups["g"]
        deadline = asyncio.get_running_loop().time() + 5
        while group.members and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        assert not group.members and group.state is GroupState.EMPTY

    run(tmp_path, body, group_min_session_timeout_ms=100)


def test_leave_group_rebalances_remaining_members(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await join(coord)
        await coord.sync_group("g", 1, a.member_id, None, {})
        b_first = await coord.join_group(join_req())
        b_join = asyncio.ensure_future(coord.join_group(join_req(member_id=b_first.member_id)))
        await settle()
        await coord.join_group(join_req(member_id=a.member_id))
        b2 = await b_join
        top, per_member = coord.leave_group("g", [(a.member_id, None), ("ghost", None)])
        assert (top, per_member) == (errors.NONE, [errors.NONE, errors.UNKNOWN_MEMBER_ID])
        assert coord.groups["g"].state is GroupState.PREPARING_REBALANCE
        assert coord.heartbeat("g", 2, b2.member_id) == errors.REBALANCE_IN_PROGRESS
        b3 = await coord.join_group(join_req(member_id=b2.member_id))
        assert b3.generation_id == 3 and b3.leader == b2.member_id

    run(tmp_path, body)


def test_static_member_rejoin_keeps_generation_and_fences_old_id(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        a = await coord.join_group(join_req(group_instance_id="i-1"))
        assert a.error == errors.NONE  # static members skip MEMBER_ID_REQUIRED
        await coord.sync_group("g", 1, a.member_id, "i-1", {a.member_id: b"mine"})
        again = await coord.join_group(join_req(group_instance_id="i-1"))
        assert again.error == errors.NONE
        assert again.member_id != a.member_id
        assert again.generation_id == 1 and again.leader == again.member_id
        assert again.skip_assignment
        assert coord.groups["g"].state is GroupState.STABLE
        sync = await coord.sync_group("g", 1, again.member_id, "i-1", {})
        assert sync.assignment == b"mine"
        assert coord.heartbeat("g", 1, a.member_id, "i-1") == errors.FENCED_INSTANCE_ID
        stale = await coord.join_group(join_req(member_id=a.member_id, group_instance_id="i-1"))
        assert stale.error == errors.FENCED_INSTANCE_ID
        # Changed metadata means a rebalance.
        changed = await coord.join_group(
            join_req(group_instance_id="i-1", protocols=(("range", b"new"),)))
        assert changed.generation_id == 2
        # Removal by instance id (admin removeMembersFromConsumerGroup).
        assert coord.leave_group("g", [("", "i-1")]) == (errors.NONE, [errors.NONE])
        assert coord.groups["g"].state is GroupState.EMPTY

    run(tmp_path, body)


def test_offset_commit_rules(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        coord.broker.topics.create("t", 2)
        tp = ("t", 0)
        offsets = {tp: OffsetAndMetadata(5, metadata="m")}
        # No group yet: only a generation -1 (simple) commit is allowed.
        assert await coord.commit_offsets("g", 3, "x", None, offsets) == {
            tp: errors.ILLEGAL_GENERATION}
        assert await coord.commit_offsets("g", -1, "", None, offsets) == {tp: errors.NONE}
        assert coord.groups["g"].state is GroupState.EMPTY
        a = await join(coord)
        # CompletingRebalance: the member is valid but must finish syncing first.
        assert await coord.commit_offsets("g", 1, a.member_id, None, offsets) == {
            tp: errors.REBALANCE_IN_PROGRESS}
        await coord.sync_group("g", 1, a.member_id, None, {})
        assert await coord.commit_offsets("g", -1, "", None, offsets) == {
            tp: errors.UNKNOWN_MEMBER_ID}
        assert await coord.commit_offsets("g", 2, a.member_id, None, offsets) == {
            tp: errors.ILLEGAL_GENERATION}
        result = await coord.commit_offsets(
            "g", 1, a.member_id, None,
            {tp: OffsetAndMetadata(7), ("t", 9): OffsetAndMetadata(1),
             ("t", 1): OffsetAndMetadata(1, metadata="x" * 5000)})
        assert result == {tp: errors.NONE, ("t", 9): errors.UNKNOWN_TOPIC_OR_PARTITION,
                          ("t", 1): errors.OFFSET_METADATA_TOO_LARGE}
        fetched = coord.fetch_offsets("g", [tp, ("t", 1)])
        assert fetched[0][1] is not None and fetched[0][1].offset == 7
        assert fetched[1] == (("t", 1), None, errors.NONE)
        assert [f[0] for f in coord.fetch_offsets("g", None)] == [tp]

    run(tmp_path, body)


def test_delete_groups_only_when_empty(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        coord.broker.topics.create("t", 1)
        await coord.commit_offsets("simple", -1, "", None, {("t", 0): OffsetAndMetadata(3)})
        a = await join(coord)
        assert await coord.delete_groups(["g", "simple", "nope"]) == {
            "g": errors.NON_EMPTY_GROUP, "simple": errors.NONE,
            "nope": errors.GROUP_ID_NOT_FOUND}
        assert coord.fetch_offsets("simple", [("t", 0)])[0][1] is None
        assert "simple" not in [g.group_id for g in coord.list_groups()]
        assert coord.describe("simple").state == "Dead"
        assert coord.describe("g").members[0][0] == a.member_id

    run(tmp_path, body)


def test_transaction_member_validation(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        assert coord.validate_member("unknown", -1, "", None) == errors.NONE
        a = await coord.join_group(join_req(group_instance_id="i"))
        assert coord.validate_member("g", 1, a.member_id, "i") == errors.NONE
        assert coord.validate_member("g", -1, "", None) == errors.NONE
        assert coord.validate_member("g", 2, a.member_id, "i") == errors.ILLEGAL_GENERATION
        assert coord.validate_member("g", 1, "other", None) == errors.UNKNOWN_MEMBER_ID
        assert coord.validate_member("g", 1, "other", "i") == errors.FENCED_INSTANCE_ID

    run(tmp_path, body)


def test_initial_rebalance_delay_gathers_members(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        first = [await coord.join_group(join_req()) for _ in range(2)]
        joins = [asyncio.ensure_future(coord.join_group(join_req(member_id=f.member_id)))
                 for f in first]
        results = await asyncio.gather(*joins)
        assert {r.generation_id for r in results} == {1}  # one rebalance for both

    run(tmp_path, body, group_initial_rebalance_delay_ms=100)


def test_offsets_of_empty_groups_expire_after_retention(tmp_path: Path) -> None:
    async def body(coord: GroupCoordinator) -> None:
        coord.broker.topics.create("t", 1)
        tp = ("t", 0)
        await coord.commit_offsets("old", -1, "", None, {tp: OffsetAndMetadata(1, commit_timestamp=0)})
        a = await join(coord)
        await coord.sync_group("g", 1, a.member_id, None, {})
        await coord.commit_offsets("g", 1, a.member_id, None,
                                   {tp: OffsetAndMetadata(2, commit_timestamp=0)})
        retention_ms = 60_000
        now = coord.groups["old"].state_since_ms + retention_ms
        assert await coord.expire_offsets(now) == 1  # "g" has a member: kept
        assert "old" not in coord.groups
        assert coord.fetch_offsets("g", [tp])[0][1] is not None
        coord.leave_group("g", [(a.member_id, None)])
        assert await coord.expire_offsets(now) == 0  # empty only since just now
        later = coord.groups["g"].state_since_ms + retention_ms
        assert await coord.expire_offsets(later) == 1
        assert coord.groups == {}

    run(tmp_path, body, offsets_retention_minutes=1)
