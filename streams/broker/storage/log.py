"""A partition's log: an ordered list of segments, offset assignment, durability and reads."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..records import (
    BatchHeader,
    iter_batches,
    parse_header,
    patch_base_offset,
    set_log_append_time,
)
from .producer_state import PartitionProducerState, control_type
from .segment import Segment
from .timestamps import first_record_at_or_after

log = logging.getLogger(__name__)

LOG_START_FILE = "log-start-offset"


class StorageError(OSError):
    """A write or fsync that failed (ENOSPC, EIO, ...); Produce answers KAFKA_STORAGE_ERROR.

    Unlike Kafka, which takes the log directory offline, the broker keeps serving reads and
    tries every later write, so writes resume by themselves once space is freed.
    """


# Partition directories whose writes are failing now. A full disk fails every partition at
# once: the first failure logs one warning (again at most once a minute while any keeps
# failing), and the last partition to write again logs one info line.
_failing: set[Path] = set()
_REPEAT_WARNING_S = 60.0
_last_warning = 0.0


def _storage_error(directory: Path, what: str, exc: OSError) -> StorageError:
    global _last_warning
    now = time.monotonic()
    if not _failing or now - _last_warning >= _REPEAT_WARNING_S:
        _last_warning = now
        log.warning("%s to %s failed (%s); answering KAFKA_STORAGE_ERROR until writes succeed "
                    "again", what, directory, exc.strerror or exc)
    _failing.add(directory)
    return StorageError(exc.errno or 0, f"{what} failed: {exc.strerror or exc}")


def _storage_ok(directory: Path) -> None:
    if directory in _failing:
        _failing.discard(directory)
        if not _failing:
            log.info("writes succeed again (%s)", directory)


@dataclass(slots=True)
class LogConfig:
    """The per-topic settings the log itself uses (names follow Kafka's topic configs)."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    log_append_time: bool = False


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


class PartitionLog:
    """Segments of one topic partition, kept in ``directory``.

    Appends are synchronous writes into the page cache; durability comes from ``flush_to``,
    which group-commits: one fdatasync covers everything appended before it started.
    """

    def __init__(self, directory: Path, config: LogConfig) -> None:
        self.directory = directory
        self.config = config
        self.segments: list[Segment] = []
        self.log_start_offset = 0
        self._durable_offset = 0
        self._flushing: asyncio.Future[None] | None = None
        self.data_waiters: list[asyncio.Future[None]] = []
        self.producer_state = PartitionProducerState(directory)
        self.cleaning = False  # the cleaner is reading closed segments: do not delete them

    # -- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        bases = sorted(
            int(p.stem) for p in self.directory.glob("*.log") if p.stem.isdigit()
        )
        for base in bases:
            self.segments.append(Segment(self.directory, base, self.config.index_interval_bytes))
        for segment in self.segments[:-1]:
            segment.load()
        if self.segments:
            self.segments[-1].recover()
            self.segments[-1].created_ms = int(time.time() * 1000)
        else:
            self._new_segment(0)
        start_file = self.directory / LOG_START_FILE
        if start_file.exists():
            try:
                self.log_start_offset = int(start_file.read_text().strip() or 0)
            except ValueError:
                log.warning("%s: unreadable log start offset file; using segment base", start_file)
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.log_start_offset = min(self.log_start_offset, self.next_offset)
        self._durable_offset = self.next_offset
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Snapshot taken when the active segment started, then replay the active segment."""
        self.producer_state.load(self.active.base_offset)
        for position, header in self._iter_active():
            kind = None
            if header.is_control:
                try:
                    kind = control_type(self.active.read_batch_at(position))
                except (ValueError, IndexError, struct.error) as exc:
                    # Kafka's ControlRecordType.parse ignores what it cannot read; so do we,
                    # rather than refuse to start over one batch.
                    log.warning("%s: skipping unreadable control batch at offset %d (%s)",
                                self.directory, header.base_offset, exc)
                    continue
            self.producer_state.on_batch(header, kind)

    def close(self) -> None:
        for segment in self.segments:
            try:
                segment.sync()
                if segment is self.segments[-1]:
                    segment.give_back_reserve()
            finally:
                segment.close()
        self.segments = []

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()
        self.segments = []
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- properties ---------------------------------------------------------------------------

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def next_offset(self) -> int:
        """Log end offset; on a single node it is also the high watermark."""
        return self.active.next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- writing ------------------------------------------------------------------------------

    def _new_segment(self, base_offset: int) -> Segment:
        segment = Segment(self.directory, base_offset, self.config.index_interval_bytes)
        segment.created_ms = int(time.time() * 1000)
        self.segments.append(segment)
        return segment

    def _maybe_roll(self, incoming: int, now_ms: int) -> None:
        active = self.active
        too_big = active.size + incoming > self.config.segment_bytes
        too_old = now_ms - active.created_ms >= self.config.segment_ms
        if too_big or too_old:
            self.roll()

    def roll(self) -> None:
        """Close the active segment and start a new one (no-op when the active one is empty)."""
        active = self.active
        if active.size == 0:
            return
        active.sync()
        active.give_back_reserve()
        active._close_index_fds()
        self.producer_state.write_snapshot(active.next_offset)
        self._new_segment(active.next_offset)

    def append(
        self, data: bytearray, batches: list[tuple[int, BatchHeader]], now_ms: int | None = None
    ) -> AppendResult:
        """Assign offsets to validated batches (patching them in place) and write them."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        try:
            self._maybe_roll(len(data), now_ms)
        except OSError as exc:
            raise _storage_error(self.directory, "rolling a segment", exc) from None
        base = self.next_offset
        next_offset = base
        patched: list[tuple[int, BatchHeader]] = []
        append_time = -1
        for pos, header in batches:
            patch_base_offset(data, pos, next_offset)
            if self.config.log_append_time and not header.is_control:
                set_log_append_time(data, pos, header, now_ms)
                append_time = now_ms
                header = header.__class__(
                    next_offset, *_fields_after_offset(header, now_ms, True)
                )
            else:
                header = header.__class__(next_offset, *_fields_after_offset(header, 0, False))
            patched.append((pos, header))
            next_offset = header.last_offset + 1
        self._write(data, patched)
        for pos, header in patched:
            kind = control_type(bytes(data[pos : pos + header.size])) if header.is_control else None
            self.producer_state.on_batch(header, kind)
        self._wake_readers()
        return AppendResult(base, append_time, self.log_start_offset)

    def _write(self, data: bytearray, batches: list[tuple[int, BatchHeader]]) -> None:
        """Append to the active segment; on an OSError put it back as it was and raise."""
        segment = self.active
        size, next_offset, max_timestamp = segment.size, segment.next_offset, segment.max_timestamp
        index_len, time_len = len(segment.index_offsets), len(segment.time_stamps)
        try:
            segment.append(data, batches)
        except OSError as exc:
            # A short write leaves bytes past the old end, a failed index write leaves the
            # batches noted in memory: cut both, so the next append starts where this one did.
            with contextlib.suppress(OSError):
                os.ftruncate(segment.fd, size)
            if segment.size != size:
                segment.size, segment.next_offset = size, next_offset
                segment.max_timestamp = max_timestamp
                del segment.index_offsets[index_len:], segment.index_positions[index_len:]
                del segment.time_stamps[time_len:], segment.time_offsets[time_len:]
                with contextlib.suppress(OSError):
                    segment._rewrite_index_files()  # a cut index is rebuilt; a stale one is not
            raise _storage_error(self.directory, "writing", exc) from None
        if _failing:
            _storage_ok(self.directory)

    def _wake_readers(self) -> None:
        waiters, self.data_waiters = self.data_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def flush_to(self, offset: int) -> None:
        """Return once everything below ``offset`` is on disk (fdatasync, group commit)."""
        while self._durable_offset < offset:
            if self._flushing is None:
                self._flushing = asyncio.ensure_future(self._flush())
            await asyncio.shield(self._flushing)

    async def _flush(self) -> None:
        try:
            target = self.next_offset
            segment = self.active
            try:
                await asyncio.get_running_loop().run_in_executor(None, segment.sync)
            except OSError as exc:
                raise _storage_error(self.directory, "fsync", exc) from None
            self._durable_offset = max(self._durable_offset, target)
        finally:
            self._flushing = None

    # -- reading ------------------------------------------------------------------------------

    def segment_for(self, offset: int) -> Segment | None:
        """The segment holding ``offset`` (or the next data after it, if it was removed)."""
        lo, hi = 0, len(self.segments) - 1
        found = None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.segments[mid].base_offset <= offset:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return self.segments[found if found is not None else 0]

    def read(self, offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        """Stored batches from ``offset`` (whole batches, at least one), below ``upper_offset``."""
        found = self.locate(offset, max_bytes, upper_offset)
        if found is None:
            return b""
        segment, start, stop = found
        return segment.read_range(start, stop)

    def locate(self, offset: int, max_bytes: int, upper_offset: int | None = None
               ) -> tuple[Segment, int, int] | None:
        """Where ``read`` would read: (segment, start, stop) file positions, or None."""
        upper = self.next_offset if upper_offset is None else upper_offset
        if offset >= upper:
            return None
        index = self.segments.index(self.segment_for(offset))  # type: ignore[arg-type]
        for segment in self.segments[index:]:
            if segment.next_offset <= offset:
                continue
            if segment.base_offset >= upper:
                return None
            start, stop = segment.locate(offset, max_bytes, upper)
            if stop > start:
                return segment, start, stop
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch with a timestamp >= ``timestamp``."""
        for segment in self.segments:
            found = segment.offset_for_timestamp(timestamp)
            if found is not None:
                base, position = found
                batch = segment.read_batch_at(position)
                offset, ts = first_record_at_or_after(batch, timestamp)
                if offset >= self.log_start_offset:
                    return offset, ts
        return None

    def _iter_active(self) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch in the active segment (state rebuilds at start)."""
        segment = self.active
        pos = 0
        while pos < segment.size:
            chunk = os.pread(segment.fd, min(segment.size - pos, 1 << 20), pos)
            consumed = 0
            for rel, header in iter_batches(chunk):
                yield pos + rel, header
                consumed = rel + header.size
            if consumed == 0:
                header = parse_header(chunk)
                yield pos, header
                consumed = header.size
            pos += consumed

    @property
    def last_stable_offset(self) -> int:
        """First offset of the earliest open transaction, else the high watermark."""
        first = self.producer_state.first_unstable_offset()
        return self.next_offset if first is None else first

    def aborted_transactions(self, start: int, end: int) -> list[dict[str, int]]:
        return self.producer_state.aborted_overlapping(start, end)

    def max_timestamp(self) -> tuple[int, int]:
        """(offset, timestamp) of the batch holding the largest timestamp (ListOffsets -3)."""
        best = (-1, -1)
        for segment in self.segments:
            if segment.max_timestamp > best[1] and segment.time_offsets:
                best = (segment.time_offsets[-1], segment.max_timestamp)
        return best

    # -- truncation from the front ------------------------------------------------------------

    def advance_log_start(self, offset: int) -> None:
        """DeleteRecords / retention: move the log start and drop whole segments below it."""
        offset = min(offset, self.next_offset)
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        tmp = self.directory / (LOG_START_FILE + ".tmp")
        tmp.write_text(str(offset))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / LOG_START_FILE)
        self.drop_segments_below_start()

    def drop_segments_below_start(self) -> None:
        """Delete whole segments below the log start offset (deferred while cleaning)."""
        if self.cleaning:
            return
        while len(self.segments) > 1 and self.segments[1].base_offset <= self.log_start_offset:
            self.segments.pop(0).delete()
        self.producer_state.truncate_before(self.log_start_offset)


def _fields_after_offset(header: BatchHeader, now_ms: int, append_time: bool) -> tuple:
    values = (
        header.length,
        header.leader_epoch,
        header.magic,
        header.crc,
        header.attributes,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.record_count,
    )
    if append_time:
        values = values[:6] + (now_ms, now_ms) + values[8:]
    return values
