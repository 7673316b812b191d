"""Log compaction for ``cleanup.policy=compact``: keep the latest record per key.

Only closed segments below the last stable offset and older than ``min.compaction.lag.ms`` are
cleaned. The work is split so the event loop never blocks on it: ``plan_and_write`` (run in a
thread) reads those segments, builds the key -> latest offset map and writes cleaned copies next
to them; ``swap`` (on the loop) renames the copies into place and reopens the segments. Offsets
never change; batches nothing was removed from are copied verbatim, compressed or not.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..records import (
    ATTR_CONTROL,
    BatchHeader,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from .files import FILES, LOG
from .log import PartitionLog
from .segment import Segment

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "cleaner-checkpoint.json"
_CHUNK = 1 << 20


@dataclass(slots=True)
class CompactionConfig:
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    delete_retention_ms: int = 86_400_000


@dataclass
class CleanerCheckpoint:
    """What the cleaner remembers per partition: where dirt starts and when segments were cleaned."""

    first_dirty_offset: int = 0
    cleaned_at: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path) -> CleanerCheckpoint:
        path = directory / CHECKPOINT_FILE
        if not path.exists():
            return cls()
        try:
            raw = json.loads(path.read_text())
            return cls(int(raw["first_dirty_offset"]),
                       {int(k): int(v) for k, v in raw["cleaned_at"].items()})
        except (OSError, ValueError, KeyError) as exc:
            log.warning("%s: unreadable cleaner checkpoint (%s); cleaning from the start", path, exc)
            return cls()

    def save(self, directory: Path) -> None:
        path = directory / CHECKPOINT_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"first_dirty_offset": self.first_dirty_offset,
                                   "cleaned_at": {str(k): v for k, v in self.cleaned_at.items()}}))
        os.replace(tmp, path)


@dataclass
class CleaningPlan:
    segments: list[Segment]
    cleaned_paths: dict[int, Path]
    end_offset: int
    removed_records: int = 0


def cleanable_segments(plog: PartitionLog, config: CompactionConfig, now_ms: int) -> list[Segment]:
    """Closed segments wholly below the LSO and older than the minimum compaction lag."""
    lso = plog.last_stable_offset
    out = []
    for segment in plog.segments[:-1]:
        if segment.next_offset > lso:
            break
        if segment.max_timestamp > now_ms - config.min_compaction_lag_ms:
            break
        out.append(segment)
    return out


def needs_cleaning(plog: PartitionLog, config: CompactionConfig, now_ms: int) -> bool:
    segments = cleanable_segments(plog, config, now_ms)
    if not segments:
        return False
    checkpoint = CleanerCheckpoint.load(plog.directory)
    total = sum(s.size for s in segments)
    dirty_segments = [s for s in segments if s.next_offset > checkpoint.first_dirty_offset]
    dirty = sum(s.size for s in dirty_segments)
    if total and dirty / total >= config.min_cleanable_dirty_ratio:
        return True
    overdue = now_ms - config.max_compaction_lag_ms
    return any(0 <= s.max_timestamp < overdue for s in dirty_segments)


def _batches(segment: Segment) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch of a closed segment; runs in the cleaner thread, so it pins the file and
    never evicts others (files.py)."""
    pos = 0
    while pos < segment.size:
        with FILES.pinned(segment, LOG, evict=False) as fd:
            chunk = os.pread(fd, min(segment.size - pos, _CHUNK), pos)
        consumed = 0
        for rel, header in iter_batches(chunk):
            yield header, chunk[rel : rel + header.size]
            consumed = rel + header.size
        if consumed == 0:
            batch = segment.read_batch_at(pos, evict=False)
            yield parse_header(batch), batch
            consumed = len(batch)
        pos += consumed


def plan_and_write(plog: PartitionLog, config: CompactionConfig, now_ms: int) -> CleaningPlan:
    """Build the offset map and write cleaned copies of the cleanable segments (thread-safe)."""
    segments = cleanable_segments(plog, config, now_ms)
    checkpoint = CleanerCheckpoint.load(plog.directory)
    aborted = plog.producer_state.aborted

    def is_aborted(header: BatchHeader) -> bool:
        return any(
            t.producer_id == header.producer_id and t.first_offset <= header.base_offset
            <= t.last_offset for t in aborted
        )

    latest: dict[bytes, int] = {}
    for segment in segments:
        for header, batch in _batches(segment):
            if header.is_control or (header.is_transactional and is_aborted(header)):
                continue
            for record in decode_records(batch):
                if record.key is not None:
                    latest[record.key] = record.offset

    plan = CleaningPlan(segments, {}, segments[-1].next_offset if segments else 0)
    for segment in segments:
        cleaned_before = checkpoint.cleaned_at.get(segment.base_offset)
        horizon_passed = (
            cleaned_before is not None and now_ms - cleaned_before > config.delete_retention_ms
        )
        out_path = segment.log_path.with_name(segment.log_path.name + ".cleaned")
        with open(out_path, "wb") as out:
            for header, batch in _batches(segment):
                if header.is_control:
                    if not horizon_passed:
                        out.write(batch)
                    else:
                        plan.removed_records += 1
                    continue
                if header.is_transactional and is_aborted(header):
                    plan.removed_records += header.record_count
                    continue
                records = decode_records(batch)
                kept = [
                    r for r in records
                    if r.key is None
                    or (latest.get(r.key) == r.offset and not (r.value is None and horizon_passed))
                ]
                plan.removed_records += len(records) - len(kept)
                if len(kept) == len(records):
                    out.write(batch)
                elif kept:
                    out.write(_rebuild(header, kept))
            out.flush()
            os.fsync(out.fileno())
        plan.cleaned_paths[segment.base_offset] = out_path
    return plan


def _rebuild(header: BatchHeader, records: list[Record]) -> bytes:
    return build_batch(
        records,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        attributes=header.attributes & ~ATTR_CONTROL,
        preserve_offsets=True,
    )


def swap(plog: PartitionLog, plan: CleaningPlan, now_ms: int) -> None:
    """Put the cleaned copies in place of the originals (on the event loop thread)."""
    checkpoint = CleanerCheckpoint.load(plog.directory)
    for segment in plan.segments:
        cleaned = plan.cleaned_paths[segment.base_offset]
        index = plog.segments.index(segment)
        segment.close()
        os.replace(cleaned, segment.log_path)
        fresh = Segment(plog.directory, segment.base_offset, segment.index_interval_bytes)
        fresh.recover()
        fresh.created_ms = segment.created_ms
        plog.segments[index] = fresh
        checkpoint.cleaned_at.setdefault(segment.base_offset, now_ms)
    live = {s.base_offset for s in plog.segments}
    checkpoint.cleaned_at = {k: v for k, v in checkpoint.cleaned_at.items() if k in live}
    checkpoint.first_dirty_offset = max(checkpoint.first_dirty_offset, plan.end_offset)
    checkpoint.save(plog.directory)
    if plan.removed_records:
        log.info("compacted %s: removed %d records below offset %d", plog.directory.name,
                 plan.removed_records, plan.end_offset)
