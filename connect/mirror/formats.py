"""MirrorMaker 2's internal record formats, byte for byte as Kafka writes them.

Kafka's ``OffsetSync``, ``Checkpoint`` and ``Heartbeat`` (connect/mirror-client) serialize keys and
values with the Kafka protocol's own struct encoding: fields in order, STRING as an int16 length
then UTF-8, INT16/INT32/INT64 big-endian. Checkpoint and Heartbeat values start with an int16
``version`` header (0). Writing exactly that lets Kafka's ``MirrorClient`` /
``RemoteClusterUtils.translateOffsets`` read our checkpoints and our translation read Kafka MM2's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class FormatError(ValueError):
    """Bytes that are not a record of the expected format (Kafka's SchemaException)."""


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 32767:
        raise FormatError(f"string of {len(raw)} bytes is too long for a STRING field")
    return _I16.pack(len(raw)) + raw


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | None) -> None:
        if data is None:
            raise FormatError("null key or value")
        self.data = bytes(data)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise FormatError(f"record too short: needs {end} bytes, has {len(self.data)}")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def string(self) -> str:
        length = self.i16()
        if length < 0:
            raise FormatError("null STRING where a value is required")
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"STRING is not UTF-8: {exc}") from None

    def version(self) -> None:
        version = self.i16()
        if version != VERSION:
            raise FormatError(f"unknown record version {version}")


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Upstream offset ``upstream_offset`` of ``topic``-``partition`` (the source topic) is at
    ``downstream_offset`` in the replica. Key: topic, partition; value: upstreamOffset, offset."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def record_key(self) -> bytes:
        return _string(self.topic) + _I32.pack(self.partition)

    def record_value(self) -> bytes:
        return _I64.pack(self.upstream_offset) + _I64.pack(self.downstream_offset)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> OffsetSync:
        k, v = _Reader(key), _Reader(value)
        return cls(k.string(), k.i32(), v.i64(), v.i64())


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Group ``group`` committed ``upstream_offset`` upstream, which is ``downstream_offset`` in
    ``topic``-``partition`` (the replica's name on the target). Key: group, topic, partition;
    value: version, upstreamOffset, offset, metadata."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def record_key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _I32.pack(self.partition)

    def record_value(self) -> bytes:
        return (_I16.pack(VERSION) + _I64.pack(self.upstream_offset)
                + _I64.pack(self.downstream_offset) + _string(self.metadata))

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Checkpoint:
        v = _Reader(value)
        v.version()
        upstream, downstream, metadata = v.i64(), v.i64(), v.string()
        k = _Reader(key)
        return cls(k.string(), k.string(), k.i32(), upstream, downstream, metadata)

    def connect_partition(self) -> dict[str, object]:
        """The source partition under which a checkpoint task stores its offset (Kafka's)."""
        return {"group": self.group, "topic": self.topic, "partition": self.partition}


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Emitted every ``emit.heartbeats.interval.seconds`` on the target's ``heartbeats`` topic.
    Key: sourceClusterAlias, targetClusterAlias; value: version, timestamp."""

    source_alias: str
    target_alias: str
    timestamp: int

    def record_key(self) -> bytes:
        return _string(self.source_alias) + _string(self.target_alias)

    def record_value(self) -> bytes:
        return _I16.pack(VERSION) + _I64.pack(self.timestamp)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Heartbeat:
        v = _Reader(value)
        v.version()
        timestamp = v.i64()
        k = _Reader(key)
        return cls(k.string(), k.string(), timestamp)

    def connect_partition(self) -> dict[str, object]:
        return {"sourceClusterAlias": self.source_alias, "targetClusterAlias": self.target_alias}


__all__ = ["Checkpoint", "FormatError", "Heartbeat", "OffsetSync"]
