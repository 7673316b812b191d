"""A share-partition: the per-(share group, topic partition) record states of KIP-932.

A share group lets many members read the same partition; the broker tracks, per record, who
holds it and how often it was delivered. Between the share-partition start offset (SPSO) and end
offset (SPEO) every in-flight record is in one of Kafka's states:

* ``AVAILABLE``: may be handed out by the next ShareFetch,
* ``ACQUIRED``: locked to one member until it acknowledges it or the acquisition lock
  (``share.record.lock.duration.ms``) runs out,
* ``ACKNOWLEDGED``: processed (ACCEPT); never delivered again,
* ``ARCHIVED``: given up (REJECT, the delivery count limit reached, or an aborted transaction's
  record under read_committed); never delivered again.

The start offset moves past every leading ACKNOWLEDGED/ARCHIVED record, and the span
``end_offset - start_offset`` is capped by ``group.share.partition.max.record.locks`` as Kafka's
``SharePartition.maxInFlightRecords``. Acknowledgement types and state ids are Kafka's
(ShareAcknowledge ``AcknowledgeType``: 0 gap, 1 accept, 2 release, 3 reject; ``RecordState``:
0 available, 1 acquired, 2 acknowledged, 4 archived).

Pure state: no clock and no I/O; the caller passes ``now_ms`` and persists ``snapshot()``
(``share_state.ShareStateStore``) after each change, so a broker restart keeps every
acknowledgement. An acquired record is persisted as AVAILABLE with its delivery count, as
Kafka's persister does: after a restart nobody holds a lock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import INVALID_RECORD_STATE, INVALID_REQUEST

# Kafka 4.4's SharePartition messages for refused acknowledgements. Kafka tracks in-flight
# batches and switches to per-offset state once a batch is partly acknowledged; ours is per
# offset throughout, so a refused record gets Kafka's per-offset message.
NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
NOT_OWNER = "Member is not the owner of offset"
RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."


class RecordState(enum.IntEnum):
    """Kafka's ``RecordState`` ids (the ids persisted in share state batches)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch/ShareAcknowledge ``AcknowledgeTypes`` values (KIP-932)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # v2 (KIP-1222): the record stays acquired, its lock starts again


# Kafka 4.4 ShareGroupConfig defaults and bounds.
DELIVERY_COUNT_LIMIT_DEFAULT = 5
DELIVERY_COUNT_LIMIT_MIN = 2
DELIVERY_COUNT_LIMIT_MAX = 10
RECORD_LOCK_DURATION_MS_DEFAULT = 30_000
RECORD_LOCK_DURATION_MS_MIN = 15_000
RECORD_LOCK_DURATION_MS_MAX = 60_000
PARTITION_MAX_RECORD_LOCKS_DEFAULT = 2000
PARTITION_MAX_RECORD_LOCKS_MIN = 100
PARTITION_MAX_RECORD_LOCKS_MAX = 4000


class InvalidShareConfig(ValueError):
    """A share setting outside Kafka's bounds; the message names the key."""


@dataclass(slots=True, frozen=True)
class ShareConfig:
    """The settings one share-partition obeys (group config over broker default)."""

    record_lock_duration_ms: int = RECORD_LOCK_DURATION_MS_DEFAULT
    delivery_count_limit: int = DELIVERY_COUNT_LIMIT_DEFAULT
    max_record_locks: int = PARTITION_MAX_RECORD_LOCKS_DEFAULT
    renew_acknowledge_enabled: bool = True  # share.renew.acknowledge.enable (KIP-1222)

    def validate(
        self,
        *,
        min_lock_ms: int = RECORD_LOCK_DURATION_MS_MIN,
        max_lock_ms: int = RECORD_LOCK_DURATION_MS_MAX,
    ) -> ShareConfig:
        """Refuse values outside Kafka's bounds (messages as Kafka's ``GroupConfig``)."""
        checks = (
            ("share.record.lock.duration.ms", self.record_lock_duration_ms, min_lock_ms,
             max_lock_ms, "group.share.min.record.lock.duration.ms",
             "group.share.max.record.lock.duration.ms"),
            ("share.delivery.count.limit", self.delivery_count_limit, DELIVERY_COUNT_LIMIT_MIN,
             DELIVERY_COUNT_LIMIT_MAX, "group.share.min.delivery.count.limit",
             "group.share.max.delivery.count.limit"),
            ("share.partition.max.record.locks", self.max_record_locks,
             PARTITION_MAX_RECORD_LOCKS_MIN, PARTITION_MAX_RECORD_LOCKS_MAX,
             "group.share.min.partition.max.record.locks",
             "group.share.max.partition.max.record.locks"),
        )
        for key, value, low, high, low_key, high_key in checks:
            if value < low:
                raise InvalidShareConfig(f"{key} must be greater than or equal to {low_key}")
            if value > high:
                raise InvalidShareConfig(f"{key} must be less than or equal to {high_key}")
        return self


@dataclass(slots=True)
class InFlightRecord:
    """One record between start and end offset."""

    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = 0


@dataclass(slots=True, frozen=True)
class AcquiredRecord:
    """One record handed to a member (ShareFetch ``AcquiredRecords`` are ranges of these)."""

    offset: int
    delivery_count: int


@dataclass(slots=True, frozen=True)
class AckBatch:
    """One acknowledgement batch: ``first..last`` inclusive, one type per offset or one for all
    (ShareAcknowledge ``AcknowledgementBatches``)."""

    first_offset: int
    last_offset: int
    types: tuple[AcknowledgeType, ...]

    def type_at(self, offset: int) -> AcknowledgeType:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


@dataclass(slots=True, frozen=True)
class StateBatch:
    """A persisted run of equal state (Kafka's share-state ``StateBatch``)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(slots=True)
class SharePartition:
    """Record states of one share group on one topic partition."""

    start_offset: int
    config: ShareConfig = field(default_factory=ShareConfig)
    records: dict[int, InFlightRecord] = field(default_factory=dict)
    end_offset: int = -1  # next offset never fetched; set from start_offset when < 0

    def __post_init__(self) -> None:
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    # -- fetching ------------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        log_end_offset: int,
        now_ms: int,
        max_records: int,
        undeliverable: Iterable[int] = (),
    ) -> list[AcquiredRecord]:
        """Lock up to ``max_records`` records for ``member_id``: first AVAILABLE ones already in
        flight (redeliveries, lowest offset first), then new offsets below ``log_end_offset``
        while the in-flight span stays within ``max_record_locks``. Offsets in ``undeliverable``
        (aborted transactions' records, control records) are archived, never handed out."""
        self.expire_locks(now_ms)
        skip = set(undeliverable)
        deadline = now_ms + self.config.record_lock_duration_ms
        out: list[AcquiredRecord] = []
        for offset in sorted(self.records):
            if len(out) >= max_records:
                return out
            rec = self.records[offset]
            if rec.state is RecordState.AVAILABLE:
                # restored after a restart with its last delivery used: nothing is left
                if offset in skip or rec.delivery_count >= self.config.delivery_count_limit:
                    rec.state = RecordState.ARCHIVED
                    continue
                out.append(self._lock(rec, offset, member_id, deadline))
        limit = min(log_end_offset, self.start_offset + self.config.max_record_locks)
        while self.end_offset < limit and len(out) < max_records:
            offset = self.end_offset
            self.end_offset += 1
            if offset in skip:
                self.records[offset] = InFlightRecord(RecordState.ARCHIVED)
                continue
            rec = InFlightRecord(RecordState.AVAILABLE)
            self.records[offset] = rec
            out.append(self._lock(rec, offset, member_id, deadline))
        self._advance_start()
        return out

    @staticmethod
    def _lock(rec: InFlightRecord, offset: int, member_id: str, deadline: int) -> AcquiredRecord:
        rec.state = RecordState.ACQUIRED
        rec.delivery_count += 1
        rec.member_id = member_id
        rec.lock_deadline_ms = deadline
        return AcquiredRecord(offset, rec.delivery_count)

    # -- acknowledging -------------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Iterable[AckBatch], now_ms: int = 0) -> int:
        """``acknowledge_explained`` without the message: 0 or Kafka's error code."""
        return self.acknowledge_explained(member_id, batches, now_ms)[0]

    def acknowledge_explained(self, member_id: str, batches: Iterable[AckBatch],
                              now_ms: int = 0) -> tuple[int, str | None]:
        """Apply acknowledgements atomically: every offset (gaps and offsets before the start
        offset aside, as Kafka) must be ACQUIRED by ``member_id``, else nothing changes and
        INVALID_RECORD_STATE is returned (Kafka's answer for acks of records never acquired,
        already acknowledged or held by another member). RENEW keeps the record acquired with
        a fresh lock from ``now_ms``. Returns 0 on success, else Kafka's error code and the
        message Kafka 4.4's SharePartition gives with it (None where it gives none)."""
        todo: list[tuple[int, AcknowledgeType]] = []
        seen: set[int] = set()
        for batch in batches:
            if batch.last_offset < batch.first_offset or (
                len(batch.types) not in (1, batch.last_offset - batch.first_offset + 1)
            ):
                return INVALID_REQUEST, None  # (the ShareFetch/ShareAcknowledge handler's check)
            if self.records and self.start_offset <= batch.first_offset and (
                batch.last_offset >= self.end_offset
            ):
                # while records are in flight; with none, 121 below
                which = "first" if batch.first_offset >= self.end_offset else "last"
                return INVALID_REQUEST, (f"Batch record not found. The {which} offset in "
                                         "request is past acquired records.")
            # Only the offsets in flight are visited: a batch may span 2**64 offsets with one
            # type (the fuzzer's hang). Before the start offset is complete (Kafka skips it);
            # past the end nothing was ever fetched, so only gaps may lie there.
            first = max(batch.first_offset, self.start_offset)
            last = batch.last_offset
            if last >= self.end_offset:
                past = batch.types if len(batch.types) == 1 else batch.types[
                    max(0, self.end_offset - batch.first_offset):]
                if any(kind is not AcknowledgeType.GAP for kind in past):
                    return INVALID_RECORD_STATE, NOT_IN_CACHE
                last = self.end_offset - 1
            for offset in range(first, last + 1):
                kind = batch.type_at(offset)
                if kind is AcknowledgeType.GAP:
                    continue
                rec = self.records.get(offset)
                # an offset twice in one request (batches may touch): Kafka applies the first
                # and finds the record no longer acquired, then rolls the request back
                if rec is None or rec.state is not RecordState.ACQUIRED or offset in seen:
                    return INVALID_RECORD_STATE, NOT_ACQUIRED
                if rec.member_id != member_id:
                    return INVALID_RECORD_STATE, NOT_OWNER
                if kind is AcknowledgeType.RENEW and not self.config.renew_acknowledge_enabled:
                    return INVALID_RECORD_STATE, RENEW_DISABLED
                todo.append((offset, kind))
                seen.add(offset)
        for offset, kind in todo:
            rec = self.records[offset]
            if kind is AcknowledgeType.ACCEPT:
                self._settle(rec, RecordState.ACKNOWLEDGED)
            elif kind is AcknowledgeType.REJECT:
                self._settle(rec, RecordState.ARCHIVED)
            elif kind is AcknowledgeType.RENEW:
                rec.lock_deadline_ms = now_ms + self.config.record_lock_duration_ms
            else:
                self._release(rec)
        self._advance_start()
        return 0, None

    def release_member(self, member_id: str) -> int:
        """A member left (or its share session closed): its locks are given back now. Returns
        how many records were released."""
        released = 0
        for rec in self.records.values():
            if rec.state is RecordState.ACQUIRED and rec.member_id == member_id:
                self._release(rec)
                released += 1
        self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Acquisition locks past their deadline return the record (KIP-932's acquisition lock
        timeout); a record that used its last delivery is archived. Returns how many expired."""
        expired = 0
        for rec in self.records.values():
            if rec.state is RecordState.ACQUIRED and rec.lock_deadline_ms <= now_ms:
                self._release(rec)
                expired += 1
        if expired:
            self._advance_start()
        return expired

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline, for the caller's timer."""
        deadlines = [
            r.lock_deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED
        ]
        return min(deadlines) if deadlines else None

    def _release(self, rec: InFlightRecord) -> None:
        final = rec.delivery_count >= self.config.delivery_count_limit
        self._settle(rec, RecordState.ARCHIVED if final else RecordState.AVAILABLE)

    @staticmethod
    def _settle(rec: InFlightRecord, state: RecordState) -> None:
        rec.state = state
        rec.member_id = None
        rec.lock_deadline_ms = 0

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset:
            rec = self.records.get(self.start_offset)
            if rec is None or rec.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1

    # -- inspection and persistence ------------------------------------------------------------

    def in_flight(self) -> int:
        """Records currently locked to a member."""
        return sum(1 for r in self.records.values() if r.state is RecordState.ACQUIRED)

    def lag(self, log_end_offset: int) -> int:
        """Records not yet delivery-complete (Kafka's share-partition lag): from the start
        offset to the log end, less those acknowledged or archived."""
        done = sum(
            1 for r in self.records.values()
            if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        )
        return max(0, log_end_offset - self.start_offset - done)

    def reset_start_offset(self, offset: int) -> None:
        """AlterShareGroupOffsets: start over at ``offset`` (the group has no members)."""
        self.records.clear()
        self.start_offset = self.end_offset = offset

    def snapshot(self) -> tuple[int, list[StateBatch]]:
        """Start offset and state batches to persist; ACQUIRED is stored as AVAILABLE."""
        batches: list[StateBatch] = []
        for offset in sorted(self.records):
            rec = self.records[offset]
            state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
            last = batches[-1] if batches else None
            if (
                last is not None and last.last_offset == offset - 1 and last.state is state
                and last.delivery_count == rec.delivery_count
            ):
                batches[-1] = StateBatch(last.first_offset, offset, state, rec.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, rec.delivery_count))
        return self.start_offset, batches

    @classmethod
    def restore(
        cls, start_offset: int, batches: Iterable[StateBatch], config: ShareConfig
    ) -> SharePartition:
        """Rebuild from a snapshot: records past the last batch are fetched again as new."""
        part = cls(start_offset, config)
        for batch in batches:
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                part.records[offset] = InFlightRecord(batch.state, batch.delivery_count)
                part.end_offset = max(part.end_offset, offset + 1)
        part._advance_start()
        return part
