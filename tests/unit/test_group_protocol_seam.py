"""The group-type seam (streams.broker.groups.protocols): a non-classic protocol plugged into
the coordinator is listed with its type, owns its group ids against classic JoinGroup, decides
OffsetCommit and DeleteGroups for its groups, and may take over an empty classic group."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from handler_calls import call, run_broker

from streams.broker import Broker
from streams.broker.groups import errors
from streams.broker.groups.protocols import GroupListing, GroupProtocol, GroupType

COMMIT, JOIN, LIST, DELETE, OFFSET_DELETE = 8, 11, 16, 42, 47


class ToyShareProtocol(GroupProtocol):
    """A share-typed protocol whose groups are plain member sets."""

    group_type = GroupType.SHARE

    def __init__(self) -> None:
        self.members: dict[str, set[str]] = {}
        self.ticks = 0

    def has_group(self, group_id: str) -> bool:
        return group_id in self.members

    def listings(self) -> Iterable[GroupListing]:
        for group_id, members in self.members.items():
            yield GroupListing(group_id, "share", "Stable" if members else "Empty",
                               GroupType.SHARE)

    def is_empty(self, group_id: str) -> bool:
        return not self.members[group_id]

    def forget(self, group_id: str) -> None:
        del self.members[group_id]

    def tick(self, now: float) -> None:
        self.ticks += 1





def commit(group_id: str, offset: int = 1) -> dict[str, Any]:
    return {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": ({"name": "t", "partitions": ({"partition_index": 0,
                                                     "committed_offset": offset},)},)}


def run(tmp_path: Path, body: Any) -> None:
    toy = ToyShareProtocol()

    def plug_in(broker: Broker) -> None:
        broker.groups.protocols.pop(GroupType.SHARE)  # the toy stands in for real share groups
        broker.groups.register_protocol(toy)

    run_broker(tmp_path, {"group_initial_rebalance_delay_ms": 0,
                          "offsets_topic_num_partitions": 2, "group_min_session_timeout_ms": 100},
               lambda broker: body(broker, toy), {"t": 2}, prepare=plug_in)


def test_list_groups_reports_and_filters_types(tmp_path: Path) -> None:
    async def body(broker: Broker, toy: ToyShareProtocol) -> None:
        await call(broker, COMMIT, 8, commit("plain"))
        toy.members["queue"] = {"m1"}
        listed = await call(broker, LIST, 5, {})
        rows = {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in listed.groups}
        assert rows == {"plain": ("", "Empty", "classic"), "queue": ("share", "Stable", "share")}
        shares = await call(broker, LIST, 5, {"types_filter": ("Share",)})
        assert [g.group_id for g in shares.groups] == ["queue"]
        classic = await call(broker, LIST, 5, {"types_filter": ("classic",),
                                               "states_filter": ("Empty",)})
        assert [g.group_id for g in classic.groups] == ["plain"]
        assert broker.groups.group_type("queue") is GroupType.SHARE
        assert broker.groups.group_type("plain") is GroupType.CLASSIC
        assert broker.groups.group_type("nobody") is None
        deadline = asyncio.get_running_loop().time() + 5
        while toy.ticks == 0:  # the expiry loop drives every protocol's timers
            assert asyncio.get_running_loop().time() < deadline, "tick never called"
            await asyncio.sleep(0.01)

    run(tmp_path, body)


def test_other_types_own_their_group_ids(tmp_path: Path) -> None:
    async def body(broker: Broker, toy: ToyShareProtocol) -> None:
        toy.members["queue"] = {"m1"}
        joined = await call(broker, JOIN, 9, {
            "group_id": "queue", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": ({"name": "range", "metadata": b""},)})
        assert joined.error_code.value == errors.INCONSISTENT_GROUP_PROTOCOL
        assert broker.groups.groups.get("queue") is None  # no classic shadow group
        committed = await call(broker, COMMIT, 9, commit("queue"))
        assert committed.topics[0].partitions[0].error_code.value == errors.GROUP_ID_NOT_FOUND
        assert broker.groups.fetch_offsets("queue", [("t", 0)])[0][1] is None
        deleted = await call(broker, DELETE, 2, {"groups_names": ("queue",)})
        assert deleted.results[0].error_code.value == errors.NON_EMPTY_GROUP
        offsets = await call(broker, OFFSET_DELETE, 0, {
            "group_id": "queue", "topics": ({"name": "t", "partitions": (
                {"partition_index": 0},)},)})
        assert offsets.error_code.value == errors.NON_EMPTY_GROUP
        toy.members["queue"].clear()
        deleted = await call(broker, DELETE, 2, {"groups_names": ("queue",)})
        assert deleted.results[0].error_code.value == errors.NONE
        assert not toy.has_group("queue")
        assert broker.groups.group_type("queue") is None

    run(tmp_path, body)


def test_claiming_an_empty_classic_group_keeps_its_offsets(tmp_path: Path) -> None:
    async def body(broker: Broker, toy: ToyShareProtocol) -> None:
        await call(broker, COMMIT, 8, commit("was-classic", 42))
        assert broker.groups.claim_group_id("was-classic", GroupType.SHARE)
        toy.members["was-classic"] = set()
        assert broker.groups.group_type("was-classic") is GroupType.SHARE
        assert broker.groups.fetch_offsets("was-classic", [("t", 0)])[0][1].offset == 42
        # Another type cannot take it now; the owner can.
        assert not broker.groups.claim_group_id("was-classic", GroupType.CONSUMER)
        assert broker.groups.claim_group_id("was-classic", GroupType.SHARE)
        # A classic group with members is not given away.
        joined = asyncio.ensure_future(call(broker, JOIN, 3, {
            "group_id": "busy", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": ({"name": "range", "metadata": b""},)}))
        assert (await joined).error_code.value == errors.NONE
        assert not broker.groups.claim_group_id("busy", GroupType.SHARE)
        assert broker.groups.group_type("busy") is GroupType.CLASSIC

    run(tmp_path, body)
