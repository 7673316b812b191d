"""Durable share-partition state in the compacted internal topic ``__share_group_state``.

As Kafka's share coordinator (KIP-932), every change of a share-partition is written as a
snapshot of that partition (start offset and state batches, Kafka's ``ShareSnapshot``) keyed
by group, topic and partition, fsynced before the caller answers; compaction keeps the latest
snapshot per key, and the topic is replayed at start. A group's keys all live in the partition
chosen as for ``__consumer_offsets`` (Kafka's ``abs(groupId.hashCode) % partitions``).

The record encoding is ours (JSON), not Kafka's share-coordinator schema: the topic is internal
and no client reads it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import (
    InvalidBatch,
    Record,
    build_batch,
    decode_records,
    validate_produced,
)
from ..topics import SHARE_STATE_TOPIC
from .offsets_codec import partition_for
from .replay import stored_batches
from .share_partition import RecordState, ShareConfig, SharePartition, StateBatch

if TYPE_CHECKING:
    from ..storage.log import PartitionLog
    from ..topics import TopicManager

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class ShareKey:
    """One share-partition: (group, topic, partition)."""

    group_id: str
    topic: str
    partition: int

    def encode(self) -> bytes:
        return json.dumps([self.group_id, self.topic, self.partition]).encode()

    @classmethod
    def decode(cls, data: bytes) -> ShareKey:
        group_id, topic, partition = json.loads(data)
        return cls(str(group_id), str(topic), int(partition))


@dataclass(slots=True, frozen=True)
class ShareSnapshot:
    """What is persisted of one share-partition."""

    start_offset: int
    batches: tuple[StateBatch, ...]
    topic_id: str | None = None  # the topic's id: a re-created topic starts afresh

    def encode(self) -> bytes:
        doc: dict[str, object] = {
            "start": self.start_offset,
            "batches": [[b.first_offset, b.last_offset, int(b.state), b.delivery_count]
                        for b in self.batches],
        }
        if self.topic_id is not None:
            doc["tid"] = self.topic_id
        return json.dumps(doc).encode()

    @classmethod
    def decode(cls, data: bytes) -> ShareSnapshot:
        doc = json.loads(data)
        batches = tuple(
            StateBatch(int(f), int(last), RecordState(int(s)), int(c))
            for f, last, s, c in doc["batches"]
        )
        tid = doc.get("tid")
        return cls(int(doc["start"]), batches, None if tid is None else str(tid))


class ShareStateStore:
    """Snapshots of every share-partition, kept in ``__share_group_state``."""

    def __init__(self, topics: TopicManager, default_partitions: int) -> None:
        self.topics = topics
        self.default_partitions = default_partitions
        self.snapshots: dict[ShareKey, ShareSnapshot] = {}

    @property
    def num_partitions(self) -> int:
        topic = self.topics.topics.get(SHARE_STATE_TOPIC)
        return len(topic.partitions) if topic is not None else self.default_partitions

    def _log_for(self, group_id: str) -> PartitionLog:
        self.topics.ensure_internal(SHARE_STATE_TOPIC, self.default_partitions)
        return self.topics.partition(
            SHARE_STATE_TOPIC, partition_for(group_id, self.num_partitions)
        )

    # -- queries -------------------------------------------------------------------------------

    def get(self, key: ShareKey) -> ShareSnapshot | None:
        return self.snapshots.get(key)

    def keys_of(self, group_id: str) -> list[ShareKey]:
        return sorted(
            (k for k in self.snapshots if k.group_id == group_id),
            key=lambda k: (k.topic, k.partition),
        )

    def restore(self, key: ShareKey, config: ShareConfig) -> SharePartition | None:
        """The persisted share-partition, or None if it was never initialized."""
        snap = self.snapshots.get(key)
        if snap is None:
            return None
        return SharePartition.restore(snap.start_offset, snap.batches, config)

    # -- writes --------------------------------------------------------------------------------

    async def save(self, key: ShareKey, part: SharePartition, topic_id: str | None = None
                   ) -> None:
        """Persist the share-partition and return once it is on disk."""
        start, batches = part.snapshot()
        await self.save_snapshot(key, ShareSnapshot(start, tuple(batches), topic_id))

    async def save_snapshot(self, key: ShareKey, snap: ShareSnapshot) -> None:
        """Persist one snapshot (unchanged ones cost nothing)."""
        if self.snapshots.get(key) == snap:
            return
        await self._write(key.group_id, [Record(key.encode(), snap.encode(), _now())])
        self.snapshots[key] = snap

    async def delete(self, keys: list[ShareKey]) -> None:
        """Tombstone share-partitions (DeleteShareGroupOffsets, group deletion)."""
        by_group: dict[str, list[Record]] = {}
        for key in keys:
            if self.snapshots.pop(key, None) is not None:
                by_group.setdefault(key.group_id, []).append(Record(key.encode(), None, _now()))
        for group_id, records in by_group.items():
            await self._write(group_id, records)

    async def _write(self, group_id: str, records: list[Record]) -> None:
        plog = self._log_for(group_id)
        data = bytearray(build_batch(records))
        result = plog.append(data, validate_produced(bytes(data)))
        await plog.flush_to(result.base_offset + len(records))

    # -- replay --------------------------------------------------------------------------------

    def load(self) -> None:
        """Rebuild the snapshots from ``__share_group_state`` (latest record per key wins)."""
        topic = self.topics.topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            return
        for plog in topic.partitions:
            self._replay(plog)
        log.info("loaded %d share-partition state(s)", len(self.snapshots))

    def _replay(self, plog: PartitionLog) -> None:
        for batch, header in stored_batches(plog):
            if not header.is_control:
                self._replay_batch(batch)

    def _replay_batch(self, batch: bytes) -> None:
        try:
            records = decode_records(batch)
        except (InvalidBatch, IndexError, ValueError) as exc:
            log.warning("skipping unreadable batch in %s: %s", SHARE_STATE_TOPIC, exc)
            return
        for record in records:
            if record.key is None:
                continue
            try:
                key = ShareKey.decode(record.key)
                if record.value is None:
                    self.snapshots.pop(key, None)
                else:
                    self.snapshots[key] = ShareSnapshot.decode(record.value)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("skipping unreadable record at %s offset %d: %s",
                            SHARE_STATE_TOPIC, record.offset, exc)


def _now() -> int:
    return int(time.time() * 1000)
