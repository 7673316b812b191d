"""A KIP-848 consumer group as Kafka 4.4's own ``__consumer_offsets`` records, so Kafka's group
coordinator serde (and the tools built on it) can read what we write.

Each key starts with Kafka's ``CoordinatorRecordType`` and holds the group id (and member id);
values are version 0 of Kafka's flexible schemas:

* 3 ConsumerGroupMetadata (group): Epoch (the MetadataHash tag is not written);
* 4 ConsumerGroupPartitionMetadata (group): the subscribed topics' partition counts the target
  assignment was computed from (Kafka 4.4 reads it; it now keeps a metadata hash instead);
* 5 ConsumerGroupMemberMetadata (group, member): InstanceId, RackId, ClientId, ClientHost,
  SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs, ServerAssignor, and for a
  classic-protocol member (online migration) the tagged ClassicMemberMetadata;
* 6 ConsumerGroupTargetAssignmentMetadata (group): AssignmentEpoch;
* 7 ConsumerGroupTargetAssignmentMember (group, member): its target partitions;
* 8 ConsumerGroupCurrentMemberAssignment (group, member): MemberEpoch (-2 for a static member
  that left, as Kafka writes it, its epoch then in PreviousMemberEpoch), PreviousMemberEpoch,
  State, AssignedPartitions, PartitionsPendingRevocation.

Partitions are named by topic id; a topic deleted since drops out when read back.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from .record_format import (
    NO_TAGS,
    VALUE_VERSION,
    Reader,
    TopicPartition,
    compact_array,
    compact_bytes,
    compact_string,
    group_key,
    member_key,
    tagged,
    topic_partitions,
)

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 6, 7, 8
GROUP_KEYS = (PARTITION_METADATA, TARGET_ASSIGNMENT_METADATA)  # besides GROUP_METADATA
MEMBER_KEYS = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
STABLE, UNREVOKED_PARTITIONS = 0, 1  # Kafka's MemberState
STATIC_LEFT_EPOCH = -2
_CLASSIC_TAG = 0


@dataclass(slots=True)
class MemberRecord:
    """One member as its records hold it."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: frozenset[str] = frozenset()
    regex: str | None = None
    rebalance_timeout_ms: int = 0
    server_assignor: str | None = None
    # (session timeout, JoinGroup protocols) of a classic-protocol member
    classic: tuple[int, tuple[tuple[str, bytes], ...]] | None = None
    epoch: int = 0
    previous_epoch: int = -1
    left_static: bool = False
    assigned: set[TopicPartition] = field(default_factory=set)
    revoking: set[TopicPartition] = field(default_factory=set)
    has_current: bool = False  # read back: whether its current assignment record was there


@dataclass(slots=True)
class GroupRecords:
    """A consumer group as its records hold it."""

    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    topic_sizes: dict[str, int] = field(default_factory=dict)
    members: dict[str, MemberRecord] = field(default_factory=dict)
    target: dict[str, set[TopicPartition]] = field(default_factory=dict)


def encode(group: GroupRecords, topic_id: Callable[[str], uuid.UUID | None]
           ) -> dict[bytes, bytes]:
    """Every record of the group: {key: value}."""
    version = struct.pack(">h", VALUE_VERSION)
    gid = group.group_id
    sizes = []
    for name in sorted(group.topic_sizes):
        tid = topic_id(name)
        if tid is not None:
            sizes.append(tid.bytes + compact_string(name)
                         + struct.pack(">i", group.topic_sizes[name]) + compact_array([])
                         + NO_TAGS)
    out = {
        group_key(GROUP_METADATA, gid): version + struct.pack(">i", group.epoch) + NO_TAGS,
        group_key(PARTITION_METADATA, gid): version + compact_array(sizes) + NO_TAGS,
        group_key(TARGET_ASSIGNMENT_METADATA, gid):
            version + struct.pack(">i", group.assignment_epoch) + NO_TAGS,
    }
    for member_id, target in group.target.items():
        out[member_key(TARGET_ASSIGNMENT_MEMBER, gid, member_id)] = (
            version + topic_partitions(target, topic_id) + NO_TAGS)
    for m in group.members.values():
        tags = {}
        if m.classic is not None:
            session, protocols = m.classic
            # a nullable struct: a presence byte (1) before its fields
            tags[_CLASSIC_TAG] = struct.pack(">bi", 1, session) + compact_array(
                [compact_string(name) + compact_bytes(meta) + NO_TAGS
                 for name, meta in protocols]) + NO_TAGS
        out[member_key(MEMBER_METADATA, gid, m.member_id)] = (
            version + compact_string(m.instance_id) + compact_string(m.rack_id)
            + compact_string(m.client_id) + compact_string(m.client_host)
            + compact_array([compact_string(t) for t in sorted(m.subscribed)])
            + compact_string(m.regex) + struct.pack(">i", m.rebalance_timeout_ms)
            + compact_string(m.server_assignor) + tagged(tags))
        epoch, previous = ((STATIC_LEFT_EPOCH, m.epoch) if m.left_static
                           else (m.epoch, m.previous_epoch))
        state = UNREVOKED_PARTITIONS if m.revoking else STABLE
        out[member_key(CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id)] = (
            version + struct.pack(">iib", epoch, previous, state)
            + topic_partitions(m.assigned, topic_id) + topic_partitions(m.revoking, topic_id)
            + NO_TAGS)
    return out


def _classic(data: bytes) -> tuple[int, tuple[tuple[str, bytes], ...]] | None:
    reader = Reader(data)
    if reader.take(">b") < 0:  # the nullable struct's presence byte: -1 is null
        return None
    session = reader.take(">i")
    protocols = []
    for _ in range(reader.array_size()):
        name, meta = reader.string() or "", reader.blob()
        reader.tags()
        protocols.append((name, meta))
    reader.tags()
    return session, tuple(protocols)


def decode(group_id: str, group_values: dict[int, bytes],
           member_values: dict[int, dict[str, bytes]],
           topic_name: Callable[[uuid.UUID], str | None]) -> GroupRecords:
    """The group from its records' values: ``group_values`` by record type (3, 4, 6),
    ``member_values`` by record type (5, 7, 8) and member id. A member is one with a
    ConsumerGroupMemberMetadata record."""
    reader = Reader(group_values[GROUP_METADATA])
    reader.version()
    group = GroupRecords(group_id, reader.take(">i"))
    if PARTITION_METADATA in group_values:
        reader = Reader(group_values[PARTITION_METADATA])
        reader.version()
        for _ in range(reader.array_size()):
            tid = uuid.UUID(bytes=reader.raw(16))
            reader.string()  # the name then; the topic id says which topic it is now
            count = reader.take(">i")
            for _ in range(reader.array_size()):  # partition racks: not kept
                reader.take(">i")
                for _ in range(reader.array_size()):
                    reader.string()
                reader.tags()
            reader.tags()
            name = topic_name(tid)
            if name is not None:
                group.topic_sizes[name] = count
    if TARGET_ASSIGNMENT_METADATA in group_values:
        reader = Reader(group_values[TARGET_ASSIGNMENT_METADATA])
        reader.version()
        group.assignment_epoch = reader.take(">i")
    for member_id, data in member_values.get(TARGET_ASSIGNMENT_MEMBER, {}).items():
        reader = Reader(data)
        reader.version()
        group.target[member_id] = reader.topic_partitions(topic_name)
    for member_id, data in member_values.get(MEMBER_METADATA, {}).items():
        reader = Reader(data)
        reader.version()
        member = MemberRecord(member_id, reader.string(), reader.string(),
                              reader.string() or "", reader.string() or "")
        member.subscribed = frozenset(reader.string() or "" for _ in range(reader.array_size()))
        member.regex = reader.string()
        member.rebalance_timeout_ms = reader.take(">i")
        member.server_assignor = reader.string()
        tags = reader.tags()
        if _CLASSIC_TAG in tags:
            member.classic = _classic(tags[_CLASSIC_TAG])
        current = member_values.get(CURRENT_MEMBER_ASSIGNMENT, {}).get(member_id)
        if current is not None:
            reader = Reader(current)
            reader.version()
            epoch, previous = reader.take(">i"), reader.take(">i")
            reader.take(">b")  # the state follows from the partitions
            member.assigned = reader.topic_partitions(topic_name)
            member.revoking = reader.topic_partitions(topic_name)
            member.left_static = epoch == STATIC_LEFT_EPOCH
            member.epoch, member.previous_epoch = ((previous, -1) if member.left_static
                                                   else (epoch, previous))
            member.has_current = True
        group.members[member_id] = member
    return group
