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

from .offsets_codec import CorruptOffsetRecord

MEMBER_METADATA, GROUP_METADATA = 10, 11
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 12, 13, 14
GROUP_KEYS = (GROUP_METADATA, TARGET_ASSIGNMENT_METADATA)
MEMBER_KEYS = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
STABLE = 0  # Kafka's MemberState.STABLE
VALUE_VERSION = 0

TopicPartition = tuple[str, int]


# -- Kafka's flexible-version primitives (KIP-482) ---------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return _uvarint(0)
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def _compact_array(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = _uvarint(0)


def _topic_partitions(assigned: set[TopicPartition], topic_id: Callable[[str], uuid.UUID | None]
                      ) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned:
        by_topic.setdefault(topic, []).append(partition)
    entries = []
    for topic in sorted(by_topic):
        tid = topic_id(topic)
        if tid is None:
            continue  # deleted meanwhile
        entries.append(tid.bytes + _compact_array(
            [struct.pack(">i", p) for p in sorted(by_topic[topic])]) + NO_TAGS)
    return _compact_array(entries)


class _Reader:
    """A cursor over a flexible-version value; unknown tagged fields are skipped."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptOffsetRecord("share group record ends early")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise CorruptOffsetRecord("varint too long in share group record")

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise CorruptOffsetRecord("share group record field runs past its end")
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value

    def string(self) -> str | None:
        size = self.uvarint()
        return None if size == 0 else self.raw(size - 1).decode()

    def array_size(self) -> int:
        return max(0, self.uvarint() - 1)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def topic_partitions(self, topic_name: Callable[[uuid.UUID], str | None]
                         ) -> set[TopicPartition]:
        out: set[TopicPartition] = set()
        for _ in range(self.array_size()):
            name = topic_name(uuid.UUID(bytes=self.raw(16)))
            partitions = [self.take(">i") for _ in range(self.array_size())]
            self.tags()
            if name is not None:  # a topic deleted since: its partitions are gone
                out.update((name, p) for p in partitions)
        return out

    def version(self) -> None:
        version = self.take(">h")
        if version != VALUE_VERSION:
            raise CorruptOffsetRecord(f"unknown share group record value version {version}")


# -- keys -------------------------------------------------------------------------------------


def _key_string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def group_key(record_type: int, group_id: str) -> bytes:
    return struct.pack(">h", record_type) + _key_string(group_id)


def member_key(record_type: int, group_id: str, member_id: str) -> bytes:
    return struct.pack(">h", record_type) + _key_string(group_id) + _key_string(member_id)


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
            version + _compact_string(m.rack_id) + _compact_string(m.client_id)
            + _compact_string(m.client_host)
            + _compact_array([_compact_string(t) for t in sorted(m.subscribed)]) + NO_TAGS)
        out[member_key(TARGET_ASSIGNMENT_MEMBER, gid, m.member_id)] = (
            version + _topic_partitions(m.target, topic_id) + NO_TAGS)
        out[member_key(CURRENT_MEMBER_ASSIGNMENT, gid, m.member_id)] = (
            version + struct.pack(">iib", m.epoch, m.previous_epoch, STABLE)
            + _topic_partitions(m.assigned, topic_id) + NO_TAGS)
    return out


def decode(group_id: str, group_values: dict[int, bytes],
           member_values: dict[int, dict[str, bytes]],
           topic_name: Callable[[uuid.UUID], str | None]) -> GroupRecords:
    """The group from its records' values: ``group_values`` by record type (11, 12),
    ``member_values`` by record type (10, 13, 14) and member id. A member is one with a
    ShareGroupMemberMetadata record."""
    reader = _Reader(group_values[GROUP_METADATA])
    reader.version()
    group = GroupRecords(group_id, reader.take(">i"))
    if TARGET_ASSIGNMENT_METADATA in group_values:
        reader = _Reader(group_values[TARGET_ASSIGNMENT_METADATA])
        reader.version()
        group.assignment_epoch = reader.take(">i")
    for member_id, data in member_values.get(MEMBER_METADATA, {}).items():
        reader = _Reader(data)
        reader.version()
        rack_id, client_id, client_host = reader.string(), reader.string(), reader.string()
        subscribed = frozenset(reader.string() or "" for _ in range(reader.array_size()))
        member = MemberRecord(member_id, subscribed=subscribed, client_id=client_id or "",
                              client_host=client_host or "", rack_id=rack_id)
        target = member_values.get(TARGET_ASSIGNMENT_MEMBER, {}).get(member_id)
        if target is not None:
            reader = _Reader(target)
            reader.version()
            member.target = reader.topic_partitions(topic_name)
        current = member_values.get(CURRENT_MEMBER_ASSIGNMENT, {}).get(member_id)
        if current is not None:
            reader = _Reader(current)
            reader.version()
            member.epoch, member.previous_epoch = reader.take(">i"), reader.take(">i")
            reader.take(">b")  # state: share members are always stable
            member.assigned = reader.topic_partitions(topic_name)
        group.members[member_id] = member
    return group
