"""What a task commits in the metadata string of each input partition's offset.

Kafka Streams commits a task's partition time there (KAFKA-7994, Kafka 2.4) so that a task
restarted or moved to another instance resumes its stream time instead of starting from
nothing, and since Kafka 3.3 (KIP-825, KAFKA-13785) a map of processor metadata: the
``lastEmitWindowCloseTime`` of every windowed aggregation that emits on window close, keyed
by its store name, so that a restored store does not emit again the finals already emitted.

The string is Kafka's own encoding (``TopicPartitionMetadata`` / ``ProcessorMetadata`` in
``org.apache.kafka.streams.processor.internals``), so an application moved between Kafka
Streams and this runtime under the same application.id reads what the other committed::

    base64( [version: 1 byte = 2][partition time: int64]
            ([entries: int32] ([key length: int32][key: utf-8][value: int64])*)? )

all big-endian; version 1 holds the partition time only, and an empty map is left out.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass, field

__all__ = ["NO_TIMESTAMP", "TopicPartitionMetadata", "decode", "encode"]

NO_TIMESTAMP = -1  # Kafka's RecordQueue.UNKNOWN
LATEST_VERSION = 2
_HEAD = struct.Struct(">bq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class TopicPartitionMetadata:
    """One input partition's committed partition time and its task's processor metadata."""

    partition_time: int = NO_TIMESTAMP
    processor_metadata: dict[str, int] = field(default_factory=dict)


def encode(partition_time: int, processor_metadata: dict[str, int]) -> str:
    """The metadata string of one committed offset, byte for byte as Kafka Streams writes it
    (entries in key order; Kafka's follow a HashMap's, which no reader depends on)."""
    out = bytearray(_HEAD.pack(LATEST_VERSION, partition_time))
    if processor_metadata:
        out += _INT.pack(len(processor_metadata))
        for key in sorted(processor_metadata):
            raw = key.encode("utf-8")
            out += _INT.pack(len(raw)) + raw + _LONG.pack(processor_metadata[key])
    return base64.b64encode(bytes(out)).decode("ascii")


def decode(text: str | None) -> tuple[TopicPartitionMetadata, str | None]:
    """The metadata in a committed offset's string, and why it could not be read (None if it
    could, or if it is empty: a commit without metadata). As Kafka's ``decode``, what cannot
    be read counts as unknown (another client's string, a newer version): partition time -1
    and no processor metadata; a partition time read before a broken map is kept."""
    if not text:
        return TopicPartitionMetadata(), None
    try:
        # Java's basic decoder: the RFC 4648 alphabet only, padding optional.
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return TopicPartitionMetadata(), "not base64"
    if len(raw) < 1:
        return TopicPartitionMetadata(), "empty"
    version = raw[0]
    if version not in (1, LATEST_VERSION):
        return TopicPartitionMetadata(), f"version {version} (this runtime reads <= 2)"
    if len(raw) < _HEAD.size:
        return TopicPartitionMetadata(), "too short for a partition time"
    partition_time = _HEAD.unpack_from(raw)[1]
    if version == 1 or len(raw) == _HEAD.size:
        return TopicPartitionMetadata(partition_time), None
    try:
        metadata = _decode_processor_metadata(raw, _HEAD.size)
    except (struct.error, ValueError) as exc:
        return TopicPartitionMetadata(partition_time), f"processor metadata: {exc}"
    return TopicPartitionMetadata(partition_time, metadata), None


def _decode_processor_metadata(raw: bytes, pos: int) -> dict[str, int]:
    (count,) = _INT.unpack_from(raw, pos)
    pos += _INT.size
    if count < 0:
        raise ValueError(f"negative entry count {count}")
    metadata: dict[str, int] = {}
    for _ in range(count):
        (size,) = _INT.unpack_from(raw, pos)
        pos += _INT.size
        if size < 0 or pos + size > len(raw):
            raise ValueError(f"key length {size} past the end")
        key = raw[pos:pos + size].decode("utf-8", errors="replace")
        pos += size
        (metadata[key],) = _LONG.unpack_from(raw, pos)
        pos += _LONG.size
    return metadata
