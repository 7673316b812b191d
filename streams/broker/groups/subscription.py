"""The topics a classic `consumer` group subscribes to, read from its members' metadata.

OffsetDelete needs them (Kafka's ClassicGroup.computeSubscribedTopics): every version of the
ConsumerProtocolSubscription starts with version (int16) and topics (array of string). When any
member's metadata cannot be read, Kafka treats the group as subscribed to every topic.
"""

from __future__ import annotations

import struct

from .group import Group

ALL_TOPICS = frozenset({"*"})  # sentinel: subscriptions unknown, so everything is subscribed


def _topics(metadata: bytes) -> set[str]:
    (count,) = struct.unpack_from(">i", metadata, 2)
    if count < 0 or count > len(metadata):
        raise ValueError("bad topic count")
    pos, out = 6, set()
    for _ in range(count):
        (size,) = struct.unpack_from(">h", metadata, pos)
        pos += 2
        if size < 0 or pos + size > len(metadata):
            raise ValueError("bad topic name")
        out.add(metadata[pos : pos + size].decode("utf-8"))
        pos += size
    return out


def subscribed_topics(group: Group) -> frozenset[str]:
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics |= _topics(member.metadata_for(group.protocol_name))
    except (struct.error, ValueError, UnicodeDecodeError):
        return ALL_TOPICS
    return frozenset(topics)
