"""A share group's membership as Kafka 4.4's own ``__consumer_offsets`` records (KIP-932), so
Kafka's group coordinator serde (and the tools built on it) can read what we write.

Each record's key starts with its record type (Kafka's ``CoordinatorRecordType``) and holds
the group id (and member id); values are version 0 of Kafka's flexible message schemas:

* 11 ShareGroupMetadata (group): Epoch, MetadataHash (we write 0: no metadata hash is kept);
* 10 ShareGroupMemberMetadata (group, member): RackId, ClientId, ClientHost,
  SubscribedTopicNames;
* 12 ShareGroupTargetAssignmentMetadata (group): AssignmentEpoch;
* 13 ShareGroupTargetAssignmentMember (group, member): TopicPartitions (by topic id);
* 14 ShareGroupCurrentMemberAssignment (group, member): MemberEpoch, PreviousMemberEpoch,
  State (0 stable), AssignedPartitions (by topic id).

ShareGroupStatePartitionMetadata (15) is not written: which share-partitions are initialized
is kept in ``__share_group_state``.
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
    compact_string,
    group_key,
    member_key,
    topic_partitions,
)

MEMBER_METADATA, GROUP_METADATA = 10, 11
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 12, 13, 14
GROUP_KEYS = (GROUP_METADATA, TARGET_ASSIGNMENT_METADATA)
MEMBER_KEYS = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
STABLE = 0  # Kafka's MemberState.STABLE

# -- values -----------------------------------------------------------------------------------


@dataclass(slots=True)
class MemberRecord:
    """One member as its three records hold it."""

    member_id: str
    epoch: int = 0
    previous_epoch: int = 0
    subscribed: frozenset[str] = frozenset()
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    assigned: set[TopicPartition] = field(default_factory=set)
    target: set[TopicPartition] = field(default_factory=set)


@dataclass(slots=True)
class GroupRecords:
    """A share group as its records hold it."""

    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, MemberRecord] = field(default_factory=dict)


def encode(group: GroupRecords, topic_id: Callable[[str], uuid.UUID | None]
           ) -> dict[bytes, bytes]:
    """Every record of the group: {key: value}."""
    version = struct.pack(">h", VALUE_VERSION)
    gid = group.group_id
    out = {
        group_key(GROUP_METADATA, gid):
            version + struct.pack(">iq", group.epoch, 0) + NO_TAGS,
        group_key(TARGET_ASSIGNMENT_METADATA, gid):
            version + struct.pack(">i", group.assignment_epoch) + NO_TAGS,
    }
    for m in group.members.values():
        out[member_key(MEMBER_METADATA, gid, m.member_id)] = (
            version + compact_string(m.rack_id) + compact_string(m.client_id)
            + compact_string(m.client_host)
            + compact_array([compact_string(t) for t in sorted(m.subscribed)]) + NO_TAGS)
        out[member_key(TARGET_ASSIGNMENT_MEMBER, gid, m.member_id)] = (
            version + topic_partitions(m.target, topic_id) + NO_TAGS)
        out[member_key(CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id)] = (
            version + struct.pack(">iib", m.epoch, m.previous_epoch, STABLE)
            + topic_partitions(m.assigned, topic_id) + NO_TAGS)
    return out


def decode(group_id: str, group_values: dict[int, bytes],
           member_values: dict[int, dict[str, bytes]],
           topic_name: Callable[[uuid.UUID], str | None]) -> GroupRecords:
    """The group from its records' values: ``group_values`` by record type (11, 12),
    ``member_values`` by record type (10, 13, 14) and member id. A member is one with a
    ShareGroupMemberMetadata record."""
    reader = Reader(group_values[GROUP_METADATA])
    reader.version()
    group = GroupRecords(group_id, reader.take(">i"))
    if TARGET_ASSIGNMENT_METADATA in group_values:
        reader = Reader(group_values[TARGET_ASSIGNMENT_METADATA])
        reader.version()
        group.assignment_epoch = reader.take(">i")
    for member_id, data in member_values.get(MEMBER_METADATA, {}).items():
        reader = Reader(data)
        reader.version()
        rack_id, client_id, client_host = reader.string(), reader.string(), reader.string()
        subscribed = frozenset(reader.string() or "" for _ in range(reader.array_size()))
        member = MemberRecord(member_id, subscribed=subscribed, client_id=client_id or "",
                              client_host=client_host or "", rack_id=rack_id)
        target = member_values.get(TARGET_ASSIGNMENT_MEMBER, {}).get(member_id)
        if target is not None:
            reader = Reader(target)
            reader.version()
            member.target = reader.topic_partitions(topic_name)
        current = member_values.get(CURRENT_MEMBER_ASSIGNMENT, {}).get(member_id)
        if current is not None:
            reader = Reader(current)
            reader.version()
            member.epoch, member.previous_epoch = reader.take(">i"), reader.take(">i")
            reader.take(">b")  # state: share members are always stable
            member.assigned = reader.topic_partitions(topic_name)
        group.members[member_id] = member
    return group
