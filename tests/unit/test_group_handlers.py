"""Every registered version of every group API: requests built as kio entities, responses
encoded and decoded again, so a field a version lacks (or cannot be null) shows up here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from handler_calls import call, run_broker
from kio.index import load_request_schema, load_response_schema

from streams.broker import Broker, BrokerConfig
from streams.broker.handlers import load_all, supported_versions

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 10, 11, 12, 13, 14
COMMIT, FETCH, DESCRIBE, LIST, DELETE = 8, 9, 15, 16, 42


class Client:
    """Calls handlers the way the server does and decodes what a client would read."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def call(self, key: int, version: int, fields: dict[str, Any]) -> Any:
        return await call(self.broker, key, version, fields)


def run(tmp_path: Path, body: Any) -> None:
    run_broker(tmp_path, {"group_initial_rebalance_delay_ms": 0,
                          "offsets_topic_num_partitions": 2},
               lambda broker: body(Client(broker)), {"t": 2})


def test_registered_ranges() -> None:
    load_all()
    versions = supported_versions()
    assert versions[FIND_COORDINATOR] == (0, 6)
    assert versions[JOIN] == (0, 9) and versions[SYNC] == (0, 5)
    assert versions[HEARTBEAT] == (0, 4) and versions[LEAVE] == (0, 5)
    assert versions[COMMIT] == (2, 9) and versions[FETCH] == (1, 9)
    assert versions[DESCRIBE] == (0, 5) and versions[LIST] == (0, 5)
    assert versions[DELETE] == (0, 2)
    for key in (FIND_COORDINATOR, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH, DESCRIBE, LIST,
                DELETE):
        low, high = versions[key]
        for version in range(low, high + 1):  # kio can decode what we advertise
            load_request_schema(key, version)
            load_response_schema(key, version)


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator(tmp_path: Path, version: int) -> None:
    async def body(client: Client) -> None:
        fields = {"key": "g", "key_type": 0, "coordinator_keys": ("g", "h")}
        response = await client.call(FIND_COORDINATOR, version, fields)
        if version >= 4:
            assert [c.key for c in response.coordinators] == ["g", "h"]
            assert {c.node_id for c in response.coordinators} == {0}
        else:
            assert response.error_code.value == 0 and response.node_id == 0
        assert "__consumer_offsets" in client.broker.topics.topics

    run(tmp_path, body)


@pytest.mark.parametrize("version", range(0, 10))
def test_join_sync_heartbeat_leave(tmp_path: Path, version: int) -> None:
    sync_v, hb_v, leave_v = min(version, 5), min(version, 4), min(version, 5)

    async def body(client: Client) -> None:
        join = {"group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": ({"name": "range", "metadata": b"meta"},)}
        response = await client.call(JOIN, version, join)
        if version >= 4:
            assert response.error_code.value == 79  # MEMBER_ID_REQUIRED
            assert response.generation_id == -1
            response = await client.call(JOIN, version, {**join, "member_id": response.member_id})
        assert response.error_code.value == 0
        member = response.member_id
        assert response.generation_id == 1 and response.leader == member
        assert response.protocol_name == "range"
        if version >= 7:
            assert response.protocol_type == "consumer"
        assert [m.member_id for m in response.members] == [member]
        assert response.members[0].metadata == b"meta"

        sync = await client.call(SYNC, sync_v, {
            "group_id": "g", "generation_id": 1, "member_id": member,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": ({"member_id": member, "assignment": b"plan"},)})
        assert sync.error_code.value == 0 and sync.assignment == b"plan"
        if sync_v >= 5:
            assert (sync.protocol_type, sync.protocol_name) == ("consumer", "range")

        beat = await client.call(HEARTBEAT, hb_v, {"group_id": "g", "generation_id": 1,
                                                   "member_id": member})
        assert beat.error_code.value == 0
        beat = await client.call(HEARTBEAT, hb_v, {"group_id": "g", "generation_id": 9,
                                                   "member_id": member})
        assert beat.error_code.value == 22

        leave = await client.call(LEAVE, leave_v, {
            "group_id": "g", "member_id": member,
            "members": ({"member_id": member, "group_instance_id": None},)})
        assert leave.error_code.value == 0
        if leave_v >= 3:
            assert [(m.member_id, m.error_code.value) for m in leave.members] == [(member, 0)]
        again = await client.call(LEAVE, leave_v, {
            "group_id": "g", "member_id": member,
            "members": ({"member_id": member, "group_instance_id": None},)})
        if leave_v >= 3:
            assert again.members[0].error_code.value == 25
        else:
            assert again.error_code.value == 25
        assert client.broker.groups.groups["g"].state.value == "Empty"

    run(tmp_path, body)


def test_join_errors_leave_protocol_fields_null_or_empty(tmp_path: Path) -> None:
    async def body(client: Client) -> None:
        bad = {"group_id": "g", "session_timeout": 10, "member_id": "",
               "protocol_type": "consumer", "protocols": ({"name": "range", "metadata": b""},)}
        for version in (5, 9):
            response = await client.call(JOIN, version, bad)
            assert response.error_code.value == 26  # INVALID_SESSION_TIMEOUT
            assert response.protocol_name == ("" if version < 7 else None)

    run(tmp_path, body)


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_then_fetch(tmp_path: Path, version: int) -> None:
    async def body(client: Client) -> None:
        commit = await client.call(COMMIT, version, {
            "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": ({"name": "t", "partitions": (
                {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3,
                 "committed_metadata": "md"},
                {"partition_index": 7, "committed_offset": 1, "committed_metadata": None},
            )},)})
        errors = {p.partition_index: p.error_code.value for p in commit.topics[0].partitions}
        assert errors == {0: 0, 7: 3}
        for fetch_v in {1, 2, 5, 7, min(version, 9), 8, 9}:
            wanted = ({"name": "t", "partition_indexes": (0, 1)},)
            fields = {"group_id": "g", "topics": wanted,
                      "groups": ({"group_id": "g", "topics": wanted},)}
            response = await client.call(FETCH, fetch_v, fields)
            topics = response.groups[0].topics if fetch_v >= 8 else response.topics
            got = {p.partition_index: (p.committed_offset, p.metadata)
                   for p in topics[0].partitions}
            assert got == {0: (42, "md"), 1: (-1, "")}
            if fetch_v >= 5:
                assert topics[0].partitions[0].committed_leader_epoch == (3 if version >= 6
                                                                          else -1)
        every = await client.call(FETCH, 9, {"groups": ({"group_id": "g", "topics": None},)})
        assert [(t.name, [p.partition_index for p in t.partitions])
                for t in every.groups[0].topics] == [("t", [0])]
        old_all = await client.call(FETCH, 2, {"group_id": "g", "topics": None})
        assert old_all.topics[0].partitions[0].committed_offset == 42

    run(tmp_path, body)


@pytest.mark.parametrize("version", range(0, 6))
def test_describe_and_list_groups(tmp_path: Path, version: int) -> None:
    async def body(client: Client) -> None:
        await client.call(COMMIT, 2, {
            "group_id": "simple", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": ({"name": "t", "partitions": ({"partition_index": 0,
                                                     "committed_offset": 1},)},)})
        described = await client.call(DESCRIBE, version, {"groups": ("simple", "nope")})
        states = {g.group_id: (g.error_code.value, g.group_state) for g in described.groups}
        assert states == {"simple": (0, "Empty"), "nope": (0, "Dead")}
        listed = await client.call(LIST, version, {})
        assert [g.group_id for g in listed.groups] == ["simple"]
        if version >= 4:
            stable = await client.call(LIST, version, {"states_filter": ("Stable",)})
            assert stable.groups == ()
            assert listed.groups[0].group_state == "Empty"
        if version >= 5:
            consumer_only = await client.call(LIST, version, {"types_filter": ("consumer",)})
            assert consumer_only.groups == ()
            classic = await client.call(LIST, version, {"types_filter": ("Classic",)})
            assert [g.group_type for g in classic.groups] == ["classic"]

    run(tmp_path, body)


@pytest.mark.parametrize("version", range(0, 3))
def test_delete_groups(tmp_path: Path, version: int) -> None:
    async def body(client: Client) -> None:
        await client.call(COMMIT, 2, {
            "group_id": "simple", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": ({"name": "t", "partitions": ({"partition_index": 0,
                                                     "committed_offset": 1},)},)})
        response = await client.call(DELETE, version, {"groups_names": ("simple", "nope")})
        assert {r.group_id: r.error_code.value for r in response.results} == {
            "simple": 0, "nope": 69}

    run(tmp_path, body)


def test_stop_releases_parked_joins(tmp_path: Path) -> None:
    """Broker.stop must not wait for a rebalance timeout: parked joins get NOT_COORDINATOR."""

    async def main() -> None:
        broker = Broker(BrokerConfig.from_mapping({
            "data_dir": tmp_path, "group_initial_rebalance_delay_ms": 0}))
        broker.topics.load()
        await broker.groups.start()
        client = Client(broker)
        join = {"group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 600_000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": ({"name": "range", "metadata": b""},)}
        first = await client.call(JOIN, 3, join)
        assert first.generation_id == 1
        parked = asyncio.ensure_future(client.call(JOIN, 3, join))  # waits for `first`
        for _ in range(5):
            await asyncio.sleep(0)
        assert not parked.done()
        await asyncio.wait_for(broker.stop(), 10)
        assert (await asyncio.wait_for(parked, 10)).error_code.value == 16

    asyncio.run(main())
