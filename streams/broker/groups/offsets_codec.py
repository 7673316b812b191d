"""Kafka's binary record format for ``__consumer_offsets``.

We write exactly what Kafka writes (offset commit key v1, value v3) so the topic reads the same to
Kafka tooling, and the partition of a group follows Kafka's rule (Java ``String.hashCode``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

OFFSET_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
CONSUMER_GROUP_KEY_VERSION = 3  # Kafka's ConsumerGroupMetadataKey
SHARE_GROUP_KEY_VERSION = 11  # Kafka's ShareGroupMetadataKey
# A group's other records (consumer_records.py, share_records.py), keyed by group id: Kafka's
# ConsumerGroupPartitionMetadataKey (4), ConsumerGroupTargetAssignmentMetadataKey (6) and
# ShareGroupTargetAssignmentMetadataKey (12)
AUX_GROUP_KEY_VERSIONS = (4, 6, 12)
# ... and keyed by group and member id: Kafka's ConsumerGroupMemberMetadataKey (5),
# ConsumerGroupTargetAssignmentMemberKey (7), ConsumerGroupCurrentMemberAssignmentKey (8) and
# their share-group counterparts (10, 13, 14)
MEMBER_KEY_VERSIONS = (5, 7, 8, 10, 13, 14)
OFFSET_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1


class CorruptOffsetRecord(ValueError):
    """A record in __consumer_offsets we cannot parse."""


@dataclass(slots=True, frozen=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int


@dataclass(slots=True, frozen=True)
class GroupKey:
    """Key of a classic group's metadata record (value: group_store.encode_classic)."""

    group_id: str


@dataclass(slots=True, frozen=True)
class TypedGroupKey:
    """Key of a KIP-848 consumer group's (version 3) or a share group's (version 11) record
    (values: group_store)."""

    group_id: str
    version: int


@dataclass(slots=True, frozen=True)
class MemberGroupKey:
    """Key of one member's record of a consumer or share group (MEMBER_KEY_VERSIONS)."""

    group_id: str
    member_id: str
    version: int


@dataclass(slots=True, frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % partitions`` (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def _write_string(out: bytearray, value: str) -> None:
    encoded = value.encode("utf-8")
    out += _I16.pack(len(encoded))
    out += encoded


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise CorruptOffsetRecord("record ends early")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def string(self) -> str:
        size = self.i16()
        if size < 0:
            return ""
        if self.pos + size > len(self.data):
            raise CorruptOffsetRecord("string runs past the record")
        value = self.data[self.pos : self.pos + size].decode("utf-8")
        self.pos += size
        return value


def encode_offset_key(key: OffsetKey) -> bytes:
    out = bytearray(_I16.pack(OFFSET_KEY_VERSION))
    _write_string(out, key.group_id)
    _write_string(out, key.topic)
    out += _I32.pack(key.partition)
    return bytes(out)


def encode_group_key(group_id: str, version: int = GROUP_METADATA_KEY_VERSION) -> bytes:
    out = bytearray(_I16.pack(version))
    _write_string(out, group_id)
    return bytes(out)


def encode_offset_value(value: OffsetAndMetadata) -> bytes:
    out = bytearray(_I16.pack(OFFSET_VALUE_VERSION))
    out += _I64.pack(value.offset)
    out += _I32.pack(value.leader_epoch)
    _write_string(out, value.metadata)
    out += _I64.pack(value.commit_timestamp)
    return bytes(out)


def decode_key(data: bytes) -> OffsetKey | GroupKey | TypedGroupKey | MemberGroupKey | None:
    """Parse a key; None for record types we do not track."""
    reader = _Reader(data)
    version = reader.i16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.i32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(reader.string())
    if version in (CONSUMER_GROUP_KEY_VERSION, SHARE_GROUP_KEY_VERSION, *AUX_GROUP_KEY_VERSIONS):
        return TypedGroupKey(reader.string(), version)
    if version in MEMBER_KEY_VERSIONS:
        return MemberGroupKey(reader.string(), reader.string(), version)
    return None


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    """Read value versions 0-3 (v4 is flexible and only written by newer Kafka)."""
    reader = _Reader(data)
    version = reader.i16()
    if version < 0 or version > 3:
        raise CorruptOffsetRecord(f"unknown offset value version {version}")
    offset = reader.i64()
    leader_epoch = reader.i32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string()
    commit_timestamp = reader.i64()
    expire_timestamp = reader.i64() if version == 1 else -1
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
