"""The embedded consumer protocol of classic groups (Kafka's ``ConsumerProtocol``): the
subscription a member puts in its JoinGroup metadata and the assignment SyncGroup carries.

The coordinator reads them only where Kafka's does: converting a classic group into a KIP-848
consumer group and back (KIP-848 "online migration"), and answering classic members of a
consumer group. Layouts (ConsumerProtocolSubscription / ConsumerProtocolAssignment, versions
0-3), all big-endian:

* subscription: version int16, topics [string], user_data bytes (nullable), v1+ owned
  partitions [topic string, partitions [int32]], v2+ generation int32, v3+ rack string
  (nullable);
* assignment: version int16, assigned partitions [topic string, partitions [int32]],
  user_data bytes (nullable).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from .byte_reader import ByteReader

TopicPartition = tuple[str, int]


class MalformedProtocol(ValueError):
    """The embedded protocol bytes cannot be read (Kafka: SchemaException)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: frozenset[TopicPartition]
    rack_id: str | None


class _Reader(ByteReader):
    """The embedded protocol's fields, with its arrays of topic partitions."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, MalformedProtocol, text_errors="replace")

    def partitions(self) -> frozenset[TopicPartition]:
        out: set[TopicPartition] = set()
        for _ in range(self.count()):
            topic = self.string() or ""
            for _ in range(self.count()):
                out.add((topic, self.take(">i")))
        return frozenset(out)


def version_of(data: bytes) -> int:
    """The protocol version a member's metadata uses (Kafka's ConsumerProtocol.deserializeVersion);
    an assignment sent back to it is written at that version (capped at 3)."""
    return min(_Reader(data).take(">h"), 3)


def read_subscription(data: bytes) -> Subscription:
    reader = _Reader(data)
    version = reader.take(">h")
    if version < 0:
        raise MalformedProtocol(f"version {version}")
    topics = tuple(reader.string() or "" for _ in range(reader.count()))
    owned: frozenset[TopicPartition] = frozenset()
    rack: str | None = None
    if not reader.done():
        reader.blob()  # user data
    if version >= 1 and not reader.done():
        owned = reader.partitions()
    if version >= 2 and not reader.done():
        reader.take(">i")  # generation
    if version >= 3 and not reader.done():
        rack = reader.string()
    return Subscription(version, topics, owned, rack)


def read_assignment(data: bytes) -> frozenset[TopicPartition]:
    """The partitions of a ConsumerProtocolAssignment (empty bytes: nothing assigned)."""
    if not data:
        return frozenset()
    reader = _Reader(data)
    reader.take(">h")
    return reader.partitions()


def write_assignment(partitions: Iterable[TopicPartition], version: int) -> bytes:
    """A ConsumerProtocolAssignment of these partitions, no user data."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = [struct.pack(">hi", max(version, 0), len(by_topic))]
    for topic, parts in sorted(by_topic.items()):
        name = topic.encode()
        out.append(struct.pack(">h", len(name)) + name)
        out.append(struct.pack(f">i{len(parts)}i", len(parts), *sorted(parts)))
    out.append(struct.pack(">i", -1))
    return b"".join(out)
