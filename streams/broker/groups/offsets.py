"""Committed offsets: an in-memory view backed by the compacted ``__consumer_offsets`` topic.

Every commit is appended as one uncompressed batch to the group's partition and fsynced before
the caller answers, and the topic is replayed at start. Transactional offset commits (KIP-447)
are written as transactional batches and stay *pending* per producer id until the transaction
completes; each value remembers its position in the log so the later write wins when a pending
commit is materialized, as in Kafka.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import (
    ATTR_TRANSACTIONAL,
    CONTROL_COMMIT,
    InvalidBatch,
    Record,
    build_batch,
    decode_records,
    validate_produced,
)
from ..topics import OFFSETS_TOPIC
from .offsets_codec import (
    AUX_GROUP_KEY_VERSIONS,
    CONSUMER_GROUP_KEY_VERSION,
    GROUP_METADATA_KEY_VERSION,
    MEMBER_KEY_VERSIONS,
    SHARE_GROUP_KEY_VERSION,
    CorruptOffsetRecord,
    GroupKey,
    MemberGroupKey,
    OffsetAndMetadata,
    OffsetKey,
    TypedGroupKey,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_offset_key,
    encode_offset_value,
    partition_for,
)
from .replay import stored_batches

if TYPE_CHECKING:
    from ..storage.log import PartitionLog
    from ..topics import TopicManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(slots=True, frozen=True)
class _Entry:
    value: OffsetAndMetadata
    log_offset: int  # where the record sits in __consumer_offsets; later wins


class OffsetStore:
    """Committed (and transaction-pending) offsets of every group."""

    def __init__(self, topics: TopicManager, default_partitions: int) -> None:
        self.topics = topics
        self.default_partitions = default_partitions
        self.committed: dict[str, dict[TopicPartition, _Entry]] = {}
        # producer id -> group id -> partition -> offset staged by an open transaction
        self.pending: dict[int, dict[str, dict[TopicPartition, _Entry]]] = {}
        # The last group record of each group id, as replayed: (log offset, value) by key
        # version (classic GroupMetadata 2, consumer 3, share 11); group_store reads them.
        self.group_records: dict[int, dict[str, tuple[int, bytes]]] = {
            v: {} for v in (GROUP_METADATA_KEY_VERSION, CONSUMER_GROUP_KEY_VERSION,
                            SHARE_GROUP_KEY_VERSION)}
        # A consumer or share group's other records (consumer_records.py, share_records.py),
        # as replayed: by key version and group, and the per-member ones by key version,
        # group and member.
        self.aux_group_records: dict[int, dict[str, bytes]] = {
            v: {} for v in AUX_GROUP_KEY_VERSIONS}
        self.member_records: dict[int, dict[str, dict[str, bytes]]] = {
            v: {} for v in MEMBER_KEY_VERSIONS}

    # -- topic --------------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        topic = self.topics.topics.get(OFFSETS_TOPIC)
        return len(topic.partitions) if topic is not None else self.default_partitions

    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` (compacted) the first time anyone needs it."""
        self.topics.ensure_internal(OFFSETS_TOPIC, self.default_partitions)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def _log_for(self, group_id: str) -> PartitionLog:
        self.ensure_topic()
        return self.topics.partition(OFFSETS_TOPIC, self.partition_for(group_id))

    # -- queries ------------------------------------------------------------------------------

    def group_ids(self) -> set[str]:
        return {group for group, offsets in self.committed.items() if offsets}

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.committed.get(group_id))

    def get(self, group_id: str, tp: TopicPartition) -> OffsetAndMetadata | None:
        entry = self.committed.get(group_id, {}).get(tp)
        return entry.value if entry is not None else None

    def all_for(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: e.value for tp, e in self.committed.get(group_id, {}).items()}

    def has_pending(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Is a transaction holding uncommitted offsets for this group (and partition)?"""
        for groups in self.pending.values():
            offsets = groups.get(group_id)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    # -- writes -------------------------------------------------------------------------------

    async def commit(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                     ) -> None:
        """Append the offsets, apply them, and return once they are on disk."""
        if not offsets:
            return
        items = list(offsets.items())
        records = [
            Record(encode_offset_key(OffsetKey(group_id, t, p)), encode_offset_value(v), _now())
            for (t, p), v in items
        ]
        plog, base = self._append(group_id, build_batch(records))
        target = self.committed.setdefault(group_id, {})
        for i, (tp, value) in enumerate(items):
            target[tp] = _Entry(value, base + i)
        await plog.flush_to(base + len(records))

    async def stage_transactional(
        self, producer_id: int, producer_epoch: int, group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> None:
        """TxnOffsetCommit: write the offsets inside the producer's transaction (pending)."""
        if not offsets:
            return
        items = list(offsets.items())
        records = [
            Record(encode_offset_key(OffsetKey(group_id, t, p)), encode_offset_value(v), _now())
            for (t, p), v in items
        ]
        batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch,
                            attributes=ATTR_TRANSACTIONAL)
        plog, base = self._append(group_id, batch)
        target = self.pending.setdefault(producer_id, {}).setdefault(group_id, {})
        for i, (tp, value) in enumerate(items):
            target[tp] = _Entry(value, base + i)
        await plog.flush_to(base + len(records))

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction ended and its markers are written (by the transaction
        coordinator, to every partition of the transaction): publish or drop its offsets."""
        self._finish_pending(producer_id, commit)

    def latest_group_record(self, group_id: str) -> int | None:
        """Which key version holds the group's last record written before this start."""
        found = [(records[group_id][0], version) for version, records in
                 self.group_records.items() if group_id in records]
        return max(found)[1] if found else None

    def write_group_record(self, group_id: str, key_version: int, value: bytes | None
                           ) -> None:
        """Append a group's metadata record (None: its tombstone). Written through to the file
        at once, so it survives the broker process being killed; callers that answer a client
        on the strength of it ``await flush_group`` first."""
        key = encode_group_key(group_id, key_version)
        self._append(group_id, build_batch([Record(key, value, _now())]))

    def write_records(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append several records of one group (keys already encoded; None: a tombstone) in
        one batch, written through to the file at once (as ``write_group_record``)."""
        self._append(group_id, build_batch([Record(key, value, _now())
                                            for key, value in records]))

    async def flush_group(self, group_id: str) -> None:
        plog = self._log_for(group_id)
        await plog.flush_to(plog.next_offset)

    async def delete_group(self, group_id: str) -> None:
        """Tombstone every committed offset of the group and its metadata keys."""
        offsets = self.committed.pop(group_id, {})
        records = [Record(encode_offset_key(OffsetKey(group_id, t, p)), None, _now())
                   for t, p in offsets]
        records += [Record(encode_group_key(group_id, version), None, _now())
                    for version in self.group_records]
        plog, base = self._append(group_id, build_batch(records))
        await plog.flush_to(base + len(records))

    async def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Tombstone some committed offsets (OffsetDelete, expiry)."""
        current = self.committed.get(group_id, {})
        gone = [tp for tp in partitions if current.pop(tp, None) is not None]
        if not gone:
            return
        records = [Record(encode_offset_key(OffsetKey(group_id, t, p)), None, _now())
                   for t, p in gone]
        plog, base = self._append(group_id, build_batch(records))
        await plog.flush_to(base + len(records))

    def _append(self, group_id: str, batch: bytes) -> tuple[PartitionLog, int]:
        plog = self._log_for(group_id)
        data = bytearray(batch)
        result = plog.append(data, validate_produced(bytes(data)))
        return plog, result.base_offset

    def _finish_pending(self, producer_id: int, commit: bool) -> None:
        groups = self.pending.pop(producer_id, {})
        if not commit:
            return
        for group_id, offsets in groups.items():
            target = self.committed.setdefault(group_id, {})
            for tp, entry in offsets.items():
                current = target.get(tp)
                if current is None or current.log_offset < entry.log_offset:
                    target[tp] = entry

    # -- replay -------------------------------------------------------------------------------

    def load(self) -> None:
        """Rebuild committed and pending offsets from ``__consumer_offsets``."""
        topic = self.topics.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        for plog in topic.partitions:
            self._replay(plog)
        log.info("loaded committed offsets of %d group(s)", len(self.group_ids()))

    def _replay(self, plog: PartitionLog) -> None:
        for batch, header in stored_batches(plog):
            self._replay_batch(batch, header.producer_id, header.is_transactional,
                               header.is_control)

    def _replay_batch(self, batch: bytes, producer_id: int, transactional: bool,
                      control: bool) -> None:
        try:
            records = decode_records(batch)
        except (InvalidBatch, IndexError, struct.error) as exc:
            log.warning("skipping unreadable batch in %s: %s", OFFSETS_TOPIC, exc)
            return
        if control:
            if records and records[0].key is not None and len(records[0].key) >= 4:
                (kind,) = struct.unpack_from(">h", records[0].key, 2)
                self._finish_pending(producer_id, kind == CONTROL_COMMIT)
            return
        for record in records:
            try:
                self._replay_record(record, producer_id if transactional else None)
            except (CorruptOffsetRecord, UnicodeDecodeError) as exc:
                log.warning("skipping unreadable record at %s offset %d: %s", OFFSETS_TOPIC,
                            record.offset, exc)

    def _replay_record(self, record: Record, producer_id: int | None) -> None:
        if record.key is None:
            return
        key = decode_key(record.key)
        if isinstance(key, MemberGroupKey):
            members = self.member_records[key.version].setdefault(key.group_id, {})
            if record.value is None:
                members.pop(key.member_id, None)
            else:
                members[key.member_id] = record.value
            return
        if isinstance(key, TypedGroupKey) and key.version in AUX_GROUP_KEY_VERSIONS:
            if record.value is None:
                self.aux_group_records[key.version].pop(key.group_id, None)
            else:
                self.aux_group_records[key.version][key.group_id] = record.value
            return
        if isinstance(key, GroupKey | TypedGroupKey):
            # (A deleted group's offsets have tombstones of their own.)
            records = self.group_records[key.version if isinstance(key, TypedGroupKey)
                                         else GROUP_METADATA_KEY_VERSION]
            if record.value is None:
                records.pop(key.group_id, None)
            else:
                records[key.group_id] = (record.offset, record.value)
            return
        if not isinstance(key, OffsetKey):
            return
        tp = (key.topic, key.partition)
        if producer_id is not None:
            target = self.pending.setdefault(producer_id, {}).setdefault(key.group_id, {})
        else:
            target = self.committed.setdefault(key.group_id, {})
        if record.value is None:
            target.pop(tp, None)
        else:
            target[tp] = _Entry(decode_offset_value(record.value), record.offset)


def _now() -> int:
    return int(time.time() * 1000)
