"""Differential tests of KIP-848's online migration (group.consumer.migration.policy, default
bidirectional): a consumer-protocol member joining a classic group with a member upgrades it to
a consumer group, the classic member goes on with JoinGroup/SyncGroup/Heartbeat answered by the
consumer group, and when the consumer-protocol member leaves the group is classic again. The same
request sequence against our broker and Apache Kafka 4.4, answers compared field by field
(assignments by size: the uniform assignor may pick other partitions than Kafka's)."""

from __future__ import annotations

import struct
from typing import Any

from .compare import Pair, Side
from .steps import (
    HEARTBEAT,
    OFFSET_COMMIT,
    SYNC_GROUP,
    find_coordinator,
    join_group,
)
from .test_protocol_diff_consumer_groups import Member as ConsumerMember
from .test_protocol_diff_consumer_groups import prepare, unique

LEAVE_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, CONSUMER_DESCRIBE = 13, 15, 16, 69


def subscription(topic: str, owned: list[int]) -> bytes:
    """ConsumerProtocolSubscription v1: topics, no user data, owned partitions."""
    name = topic.encode()
    head = struct.pack(">hih", 1, 1, len(name)) + name + struct.pack(">i", -1)
    if not owned:
        return head + struct.pack(">i", 0)
    return head + struct.pack(">ih", 1, len(name)) + name + struct.pack(
        f">i{len(owned)}i", len(owned), *sorted(owned))


def assignment(topic: str, partitions: list[int]) -> bytes:
    name = topic.encode()
    return struct.pack(">hih", 1, 1, len(name)) + name + struct.pack(
        f">i{len(partitions)}ii", len(partitions), *partitions, -1)


def assigned(data: bytes) -> list[int]:
    """The partitions of a one-topic ConsumerProtocolAssignment."""
    if not data:
        return []
    (topics,) = struct.unpack_from(">i", data, 2)
    pos, out = 6, []
    for _ in range(topics):
        (size,) = struct.unpack_from(">h", data, pos)
        pos += 2 + size
        (count,) = struct.unpack_from(">i", data, pos)
        out += list(struct.unpack_from(f">{count}i", data, pos + 4))
        pos += 4 + 4 * count
    return sorted(out)


class ClassicMember:
    """A classic consumer (embedded protocol ``consumer``, assignor ``range``)."""

    def __init__(self, side: Side, group: str, topic: str) -> None:
        self.side, self.group, self.topic = side, group, topic
        self.conn = side.fresh()
        self.member_id, self.generation = "", -1
        self.owned: list[int] = []
        self.instance: str | None = None

    def call(self, api_key: int, body: dict[str, Any]) -> Any:
        return self.conn.send(api_key, self.side.versions[api_key], body)

    def join(self, protocol_type: str = "consumer", name: str = "range") -> dict[str, Any]:
        body = {"group_id": self.group, "session_timeout": 30000, "rebalance_timeout": 30000,
                "member_id": self.member_id, "group_instance_id": self.instance,
                "protocol_type": protocol_type, "reason": None,
                "protocols": [{"name": name,
                               "metadata": subscription(self.topic, self.owned)}]}
        answer, self.member_id = join_group(self.call, body)
        if answer["error_code"] == "none":
            self.member_id, self.generation = answer["member_id"], answer["generation_id"]
        leader = answer["leader"]
        return {"error_code": answer["error_code"], "generation_id": answer["generation_id"],
                "protocol_type": answer["protocol_type"],
                "protocol_name": answer["protocol_name"],
                "leader": "self" if leader and leader == self.member_id else leader or None,
                "members": len(answer["members"]),
                "skip_assignment": answer["skip_assignment"]}

    def sync(self, plan: list[int] | None = None, name: str = "range") -> dict[str, Any]:
        answer = self.call(SYNC_GROUP, {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": self.instance,
            "protocol_type": "consumer", "protocol_name": name,
            "assignments": [] if plan is None else [
                {"member_id": self.member_id, "assignment": assignment(self.topic, plan)}]})
        if answer["error_code"] == "none":
            self.owned = assigned(answer["assignment"])
        return {"error_code": answer["error_code"], "assigned": len(assigned(
            answer["assignment"])), "protocol_name": answer["protocol_name"]}

    def heartbeat(self) -> str:
        return self.call(HEARTBEAT, {"group_id": self.group, "generation_id": self.generation,
                                     "member_id": self.member_id,
                                     "group_instance_id": self.instance})["error_code"]

    def commit(self, generation: int | None = None) -> str:
        answer = self.call(OFFSET_COMMIT, {
            "group_id": self.group, "member_id": self.member_id, "group_instance_id": None,
            "generation_id_or_member_epoch": self.generation if generation is None
            else generation,
            "topics": [{"name": self.topic, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})
        return answer["topics"][0]["partitions"][0]["error_code"]

    def leave(self) -> Any:
        answer = self.call(LEAVE_GROUP, {"group_id": self.group, "members": [
            {"member_id": self.member_id, "group_instance_id": self.instance,
             "reason": None}]})
        return [answer["error_code"], [m["error_code"] for m in answer["members"]]]

    def close(self) -> None:
        self.conn.close()


def group_view(side: Side, group: str, *members: Any) -> dict[str, Any]:
    """ListGroups' row, and ConsumerGroupDescribe's epochs and member types (ids by position)."""
    listed = side.call(LIST_GROUPS, {"states_filter": [], "types_filter": []})
    ids = {m.member_id: f"m{i}" for i, m in enumerate(members)}
    described = side.call(CONSUMER_DESCRIBE, {"group_ids": [group],
                                              "include_authorized_operations": False})
    g = described["groups"][0]
    return {
        "listed": [(x["group_state"], x["group_type"], x["protocol_type"])
                   for x in listed["groups"] if x["group_id"] == group],
        "describe": {"error_code": g["error_code"], "state": g["group_state"],
                     "group_epoch": g["group_epoch"], "assignment_epoch": g["assignment_epoch"],
                     "members": sorted(
                         (ids.get(m["member_id"], "?"), m["member_epoch"], m["member_type"],
                          sum(len(t["partitions"]) for t in m["assignment"]["topic_partitions"]))
                         for m in g["members"])},
    }


def test_upgrade_classic_member_rejoins_and_downgrade(pair: Pair) -> None:
    topic, group = unique("mig"), unique("mig-group")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        c = ClassicMember(side, group, topic)
        out: dict[str, Any] = {"c joins classic": c.join()}
        out["c syncs all four"] = c.sync([0, 1, 2, 3])
        out["c commits"] = c.commit()
        a = ConsumerMember(side, group, topic, topic_id)
        out["a joins: upgrade"] = a.heartbeat(join=True)
        out["after upgrade"] = group_view(side, group, c, a)
        out["c commits its generation"] = c.commit()
        out["c commits a stale generation"] = c.commit(c.generation - 1)
        out["c heartbeat"] = c.heartbeat()
        out["c sync at its generation"] = c.sync()
        out["c rejoins owning all"] = c.join()
        out["c syncs"] = c.sync()
        out["c heartbeat after revoking"] = c.heartbeat()
        out["a before c released"] = a.heartbeat()
        out["c rejoins with what it kept"] = c.join()
        out["c syncs again"] = c.sync()
        out["c heartbeat when settled"] = c.heartbeat()
        out["a after c released"] = a.heartbeat()
        out["settled"] = group_view(side, group, c, a)
        stranger = ClassicMember(side, group, topic)
        stranger.member_id, stranger.generation = "nobody", c.generation
        out["unknown member heartbeat"] = stranger.heartbeat()
        out["unknown member sync"] = stranger.sync()
        out["c sync with another protocol name"] = c.sync(name="roundrobin")
        out["c wrong generation heartbeat"] = ClassicMember.heartbeat(
            _at(c, c.generation + 7))
        other_type = ClassicMember(side, group, topic)
        out["connect member joins"] = other_type.join(protocol_type="connect")
        other_name = ClassicMember(side, group, topic)
        out["member without range joins"] = other_name.join(name="roundrobin")
        out["a leaves: downgrade"] = a.heartbeat(epoch=-1)
        out["after downgrade"] = group_view(side, group, c)
        out["c heartbeat after downgrade"] = c.heartbeat()
        out["c rejoins the classic group"] = c.join()
        out["c syncs classic"] = c.sync([0, 1, 2, 3])
        out["c commits classic"] = c.commit()
        out["classic again"] = group_view(side, group, c)
        out["c leaves"] = c.leave()
        for member in (c, stranger, other_type, other_name):
            member.close()
        return out

    ours = pair.check(scenario)
    assert ours["after upgrade"]["listed"][0][1] == "consumer"
    assert ours["classic again"]["listed"][0][1] == "classic"


def _at(member: ClassicMember, generation: int) -> ClassicMember:
    twin = ClassicMember.__new__(ClassicMember)
    twin.__dict__.update(member.__dict__)
    twin.generation = generation
    return twin


def test_classic_member_leaves_and_upgrade_refused(pair: Pair) -> None:
    """A classic member of a consumer group leaves with LeaveGroup (the consumer member gets its
    partitions), a consumer-protocol member can be removed with LeaveGroup too, and a classic group of
    another protocol type (Connect's) is not upgraded."""
    topic, group, connect = unique("migl"), unique("migl-group"), unique("migl-connect")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        find_coordinator(side, connect)
        c = ClassicMember(side, group, topic)
        out: dict[str, Any] = {"c joins": c.join(), "c syncs": c.sync([0, 1, 2, 3])}
        a = ConsumerMember(side, group, topic, topic_id)
        out["a joins"] = a.heartbeat(join=True)
        out["c rejoins"] = c.join()
        out["c leaves"] = c.leave()
        out["a after c left"] = a.heartbeat()
        out["a again"] = a.heartbeat(owned=[])
        imposter = ClassicMember(side, group, topic)
        imposter.member_id = a.member_id
        out["a's id through LeaveGroup"] = imposter.leave()
        out["view"] = group_view(side, group, a)
        w = ClassicMember(side, connect, topic)
        out["connect worker joins"] = w.join(protocol_type="connect")
        out["consumer member joins connect group"] = ConsumerMember(
            side, connect, topic, topic_id).heartbeat(join=True)
        out["a leaves"] = a.heartbeat(epoch=-1)
        for member in (c, imposter, w):
            member.close()
        return out

    ours = pair.check(scenario)
    assert ours["consumer member joins connect group"]["error_code"] == "group_id_not_found"


def test_last_consumer_member_removed_by_leave_group(pair: Pair) -> None:
    """The group's last consumer-protocol member is removed by a LeaveGroup naming its id while
    a classic member stays: does the group go back to classic, as when it leaves by heartbeat?"""
    topic, group = unique("migd"), unique("migd-group")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        c = ClassicMember(side, group, topic)
        out: dict[str, Any] = {"c joins": c.join(), "c syncs": c.sync([0, 1, 2, 3])}
        a = ConsumerMember(side, group, topic, topic_id)
        out["a joins: upgrade"] = a.heartbeat(join=True)
        out["c rejoins"] = c.join()
        out["c syncs"] = c.sync()
        imposter = ClassicMember(side, group, topic)
        imposter.member_id = a.member_id
        out["a's id through LeaveGroup"] = imposter.leave()
        out["view"] = group_view(side, group, c)
        out["c heartbeat"] = c.heartbeat()
        out["a heartbeat after removal"] = a.heartbeat()
        out["c rejoins after"] = c.join()
        out["c syncs after"] = c.sync([0, 1, 2, 3])
        out["view after rejoin"] = group_view(side, group, c)
        out["c leaves"] = c.leave()
        for member in (c, imposter):
            member.close()
        return out

    pair.check(scenario)


def test_classic_static_member_replaces_the_last_consumer_member(pair: Pair) -> None:
    """A consumer-protocol static member leaves with epoch -2; a classic member with the same
    group.instance.id joins in its place: every member now speaks the classic protocol, and
    Kafka turns the group back into a classic group without a rebalance."""
    topic, group = unique("migs"), unique("migs-group")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        c = ClassicMember(side, group, topic)
        out: dict[str, Any] = {"c joins": c.join(), "c syncs": c.sync([0, 1, 2, 3])}
        a = ConsumerMember(side, group, topic, topic_id, instance_id="instance-1")
        out["a joins"] = a.heartbeat(join=True)
        out["c rejoins"] = c.join()
        out["c syncs again"] = c.sync()
        out["a settles"] = a.heartbeat()
        out["a leaves (static)"] = a.heartbeat(epoch=-2)
        s = ClassicMember(side, group, topic)
        s.instance = "instance-1"
        out["s takes instance-1"] = s.join()
        out["view"] = group_view(side, group, c, s)
        out["s syncs"] = s.sync()
        out["c heartbeat"] = c.heartbeat()
        out["s heartbeat"] = s.heartbeat()
        for member in (c, s):
            out[f"{'c' if member is c else 's'} leaves"] = member.leave()
            member.close()
        return out

    pair.check(scenario)
