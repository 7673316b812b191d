"""Differential tests of KIP-848 consumer groups (ConsumerGroupHeartbeat 68,
ConsumerGroupDescribe 69): the same heartbeat sequences against our broker and Apache Kafka 4.4,
answers compared field by field. Which partitions the uniform assignor picks may differ
(docs/kafka-differences.md), so assignments are compared by size; epochs, error codes, when an
assignment is sent and when a partition moves are compared exactly."""

from __future__ import annotations

import uuid
from typing import Any

from .compare import Pair, Side
from .steps import (
    INCREMENTAL_ALTER_CONFIGS,
    OFFSET_COMMIT,
    SETTLING,
    create_topic,
    find_coordinator,
)

HEARTBEAT, DESCRIBE, LIST_GROUPS = 68, 69, 16


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Member:
    def __init__(self, side: Side, group: str, topic: str, topic_id: Any,
                 instance_id: str | None = None) -> None:
        self.side, self.group, self.topic, self.topic_id = side, group, topic, topic_id
        self.instance_id = instance_id
        self.member_id = uuid.uuid4().hex[:22]
        self.epoch = 0
        self.owned: list[int] = []

    def heartbeat(self, epoch: int | None = None, join: bool = False,
                  owned: list[int] | None = None) -> dict[str, Any]:
        body = {"group_id": self.group, "member_id": self.member_id,
                "member_epoch": self.epoch if epoch is None else epoch,
                "instance_id": self.instance_id, "rack_id": None,
                "rebalance_timeout": 30000 if join else -1,
                "subscribed_topic_names": [self.topic] if join else None,
                "subscribed_topic_regex": None, "server_assignor": None,
                "topic_partitions": [] if join else [
                    {"topic_id": self.topic_id,
                     "partitions": sorted(self.owned if owned is None else owned)}]}
        answer = self.side.call(HEARTBEAT, body)
        while join and answer["error_code"] in SETTLING:
            answer = self.side.call(HEARTBEAT, body)
        if answer["error_code"] == "none" and epoch is None:
            self.epoch = answer["member_epoch"]
            if answer["assignment"] is not None:
                self.owned = [p for t in answer["assignment"]["topic_partitions"]
                              for p in t["partitions"]]
        return shape(answer)

    def commit(self, epoch: int) -> str:
        answer = self.side.call(OFFSET_COMMIT, {
            "group_id": self.group, "generation_id_or_member_epoch": epoch,
            "member_id": self.member_id, "group_instance_id": None,
            "topics": [{"name": self.topic, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})
        return answer["topics"][0]["partitions"][0]["error_code"]


def shape(answer: dict[str, Any]) -> dict[str, Any]:
    """A heartbeat answer with the assignment reduced to its size (None: not sent)."""
    assignment = answer["assignment"]
    return {"error_code": answer["error_code"], "member_epoch": answer["member_epoch"],
            "heartbeat_interval": answer["heartbeat_interval"],
            "assigned": None if assignment is None else
            sum(len(t["partitions"]) for t in assignment["topic_partitions"])}


def assign_at_once(side: Side) -> None:
    """Kafka 4.4 batches assignment runs (KIP-1263: group.consumer.assignment.interval.ms,
    default 1 s, computed on a background thread); ours assigns within the heartbeat that
    changed the group, which Kafka does with the interval 0 and offload off (both dynamic broker
    configs, set cluster-wide here)."""
    if side.name != "kafka":
        return
    answer = side.call(INCREMENTAL_ALTER_CONFIGS, {"resources": [{
        "resource_type": 4, "resource_name": "", "configs": [
            {"name": "group.consumer.assignment.interval.ms", "config_operation": 0,
             "value": "0"},
            {"name": "group.consumer.assignor.offload.enable", "config_operation": 0,
             "value": "false"}]}], "validate_only": False})
    assert answer["responses"][0]["error_code"] == "none", answer


def prepare(side: Side, topic: str, group: str) -> Any:
    """Immediate assignment, a 4-partition topic, the group's coordinator; the topic id."""
    assign_at_once(side)
    create_topic(side, topic, partitions=4)
    find_coordinator(side, group)
    metadata = side.call(3, {"topics": [{"name": topic, "topic_id": None}],
                             "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})
    return uuid.UUID(str(metadata["topics"][0]["topic_id"]))


def test_heartbeat_epochs_revocation_and_fencing(pair: Pair) -> None:
    topic, group, nobody = unique("k848"), unique("k848-group"), unique("none")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        a, b = Member(side, group, topic, topic_id), Member(side, group, topic, topic_id)
        out: dict[str, Any] = {"a joins": a.heartbeat(join=True),
                               "b joins": b.heartbeat(join=True),
                               "a told to revoke": a.heartbeat()}
        kept = list(a.owned)
        out["a commits at its epoch"] = a.commit(a.epoch)
        out["a commits ahead of its epoch"] = a.commit(a.epoch + 1)
        out["b before a released"] = b.heartbeat()
        out["a still owning all"] = a.heartbeat(owned=[0, 1, 2, 3])
        out["a released"] = a.heartbeat(owned=kept)
        out["b after a released"] = b.heartbeat()
        out["overlap"] = sorted(set(a.owned) & set(b.owned))
        out["a forged epoch"] = a.heartbeat(epoch=a.epoch + 5)
        out["a rejoin without fields"] = a.heartbeat(epoch=0, owned=[])
        stranger = Member(side, group, topic, topic_id)
        out["unknown member"] = stranger.heartbeat(epoch=3)
        out["unknown member commits"] = stranger.commit(1)
        out["a after hostile input"] = a.heartbeat()
        listed = side.call(LIST_GROUPS, {"states_filter": [], "types_filter": ["consumer"]})
        out["listed"] = [g for g in listed["groups"] if g["group_id"] == group]
        described = side.call(DESCRIBE, {"group_ids": [group, nobody],
                                         "include_authorized_operations": False})
        for g in described["groups"]:
            for m in g["members"]:
                m["member_id"] = "a" if m["member_id"] == a.member_id else "b"
                for key in ("assignment", "target_assignment"):
                    m[key] = sum(len(t["partitions"]) for t in m[key]["topic_partitions"])
            g["members"].sort(key=lambda m: m["member_id"])
        # Kafka answers groups per coordinator shard, not in request order.
        out["described"] = sorted(described["groups"], key=lambda g: g["group_id"])
        out["a leaves"] = a.heartbeat(epoch=-1)
        out["b takes over"] = b.heartbeat()
        out["a commits after leaving"] = a.commit(2)
        out["b leaves"] = b.heartbeat(epoch=-1)
        return out

    ours = pair.check(scenario)
    assert ours["overlap"] == [] and ours["b takes over"]["assigned"] == 4


def test_static_member_leaves_and_comes_back(pair: Pair) -> None:
    """Epoch -2 keeps a static member's partitions for its instance id; the instance rejoining
    under a new member id gets them back with its epoch; a twin is UNRELEASED_INSTANCE_ID."""
    topic, group = unique("k848s"), unique("k848s-group")

    def scenario(side: Side) -> Any:
        topic_id = prepare(side, topic, group)
        a = Member(side, group, topic, topic_id, instance_id="instance-1")
        b = Member(side, group, topic, topic_id)
        out: dict[str, Any] = {"a joins": a.heartbeat(join=True),
                               "b joins": b.heartbeat(join=True),
                               "a revokes": a.heartbeat(), "a settles": a.heartbeat(),
                               "b settles": b.heartbeat()}
        kept = sorted(a.owned)
        out["a leaves (static)"] = a.heartbeat(epoch=-2)
        out["b meanwhile"] = b.heartbeat()
        again = Member(side, group, topic, topic_id, instance_id="instance-1")
        out["instance back"] = again.heartbeat(join=True)
        out["same partitions"] = sorted(again.owned) == kept
        twin = Member(side, group, topic, topic_id, instance_id="instance-1")
        out["twin"] = twin.heartbeat(join=True)
        out["instance heartbeat"] = again.heartbeat()
        out["leave unknown member"] = Member(side, group, topic, topic_id).heartbeat(epoch=-1)
        out["leave unknown group"] = Member(side, unique("nogroup"), topic,
                                            topic_id).heartbeat(epoch=-1)
        out["leave"] = [again.heartbeat(epoch=-1), b.heartbeat(epoch=-1)]
        return out

    ours = pair.check(scenario)
    assert ours["same partitions"] and ours["twin"]["error_code"] == "unreleased_instance_id"
