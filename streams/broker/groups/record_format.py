"""Kafka's coordinator-record encoding for ``__consumer_offsets`` (the group records of
KIP-848 consumer groups and KIP-932 share groups): keys are the record type then non-flexible
strings; values are flexible messages (KIP-482: unsigned varints, compact strings and arrays,
tagged fields), version 0.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

from .offsets_codec import CorruptOffsetRecord

VALUE_VERSION = 0
TopicPartition = tuple[str, int]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_string(value: str | None) -> bytes:
    if value is None:
        return _uvarint(0)
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def compact_array(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = _uvarint(0)


def compact_bytes(value: bytes) -> bytes:
    return _uvarint(len(value) + 1) + value


def tagged(fields: dict[int, bytes]) -> bytes:
    """A tagged-fields section holding ``fields`` (tag: the field's encoded bytes)."""
    return _uvarint(len(fields)) + b"".join(
        _uvarint(tag) + _uvarint(len(data)) + data for tag, data in sorted(fields.items()))


def topic_partitions(assigned: set[TopicPartition], topic_id: Callable[[str], uuid.UUID | None]
                      ) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned:
        by_topic.setdefault(topic, []).append(partition)
    entries = []
    for topic in sorted(by_topic):
        tid = topic_id(topic)
        if tid is None:
            continue  # deleted meanwhile
        entries.append(tid.bytes + compact_array(
            [struct.pack(">i", p) for p in sorted(by_topic[topic])]) + NO_TAGS)
    return compact_array(entries)


class Reader:
    """A cursor over a flexible-version value; unknown tagged fields are skipped."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptOffsetRecord("group record ends early")
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
                raise CorruptOffsetRecord("varint too long in a group record")

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise CorruptOffsetRecord("group record field runs past its end")
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value

    def string(self) -> str | None:
        size = self.uvarint()
        return None if size == 0 else self.raw(size - 1).decode()

    def array_size(self) -> int:
        return max(0, self.uvarint() - 1)

    def tags(self) -> dict[int, bytes]:
        """The tagged fields (tag: raw bytes), for the caller to read the ones it knows."""
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.raw(self.uvarint())
        return out

    def blob(self) -> bytes:
        return self.raw(self.uvarint() - 1)

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
            raise CorruptOffsetRecord(f"unknown group record value version {version}")


# -- keys -------------------------------------------------------------------------------------


def _key_string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def group_key(record_type: int, group_id: str) -> bytes:
    return struct.pack(">h", record_type) + _key_string(group_id)


def member_key(record_type: int, group_id: str, member_id: str) -> bytes:
    return struct.pack(">h", record_type) + _key_string(group_id) + _key_string(member_id)


def record_changes(wanted: dict[bytes, bytes], written: dict[bytes, bytes],
                   metadata_key: bytes) -> list[tuple[bytes, bytes | None]]:
    """What to write so that a group's records in ``__consumer_offsets`` become ``wanted``:
    the records that changed since ``written``, tombstones for those no longer wanted, and the
    group's metadata record last (so it stays the group's latest record at the next start);
    nothing when nothing changed."""
    changes: list[tuple[bytes, bytes | None]] = [
        (key, value) for key, value in wanted.items()
        if written.get(key) != value and key != metadata_key]
    changes += [(key, None) for key in written if key not in wanted and key != metadata_key]
    if not changes and written.get(metadata_key) == wanted.get(metadata_key):
        return []
    return [*changes, (metadata_key, wanted.get(metadata_key))]
