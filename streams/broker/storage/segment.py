"""One log segment: `<base offset>.log` plus a sparse offset index and a time index.

Index files are an on-disk cache of what a scan of the log would rebuild: entries are appended as
batches are written, loaded at start for closed segments, and rebuilt by scanning when they are
missing or damaged. The log file is the only source of truth.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import struct
from array import array
from pathlib import Path

import crc32c

from ..records import HEADER_SIZE, BatchHeader, iter_batches, parse_header
from . import prealloc
from .files import FILES, INDEX, LOG, TIME_INDEX

log = logging.getLogger(__name__)

_INDEX_ENTRY = struct.Struct(">II")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qI")  # timestamp, relative offset
_SCAN_CHUNK = 1 << 20
# A batch's first 27 bytes: base offset, length, leader epoch, magic, CRC, attributes and the
# last offset delta; what a fetch needs to pick whole batches without reading their records.
_BATCH_PREFIX = struct.Struct(">qiibIhi")
_HEADER_WINDOW = 4096
_NO_UPPER = 1 << 63
# Blocks reserved past the end (prealloc.py): as much as the segment holds, within these bounds,
# so an idle partition reserves little and a busy one calls fallocate rarely.
_RESERVE_MIN = 256 * 1024
_RESERVE_MAX = 8 << 20
_NO_RESERVE = 1 << 62


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """An append-only file of record batches starting at ``base_offset``."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        stem = directory / segment_name(base_offset)
        self.log_path = stem.with_suffix(".log")
        self.index_path = stem.with_suffix(".index")
        self.time_index_path = stem.with_suffix(".timeindex")
        # The file exists from now on, but stays closed until used (see files.py).
        with FILES.pinned(self, LOG) as fd:
            self.size = os.fstat(fd).st_size
        # Sparse offset index: base offset of an indexed batch -> its file position.
        self.index_offsets = array("q")
        self.index_positions = array("q")
        # Time index: running max timestamp -> first offset that reached it.
        self.time_stamps = array("q")
        self.time_offsets = array("q")
        self.next_offset = base_offset  # one past the last offset stored here
        self.max_timestamp = -1
        self.created_ms = 0
        self._bytes_since_index = 0
        self._reserved_to = self.size  # blocks are allocated up to here (prealloc.py)

    def file_path(self, kind: str) -> Path:
        return {LOG: self.log_path, INDEX: self.index_path, TIME_INDEX: self.time_index_path}[kind]

    @property
    def fd(self) -> int:
        """The log file's descriptor, for immediate use on the event loop (not pinned)."""
        return FILES.get(self, LOG)

    def _log(self, evict: bool = True) -> contextlib.AbstractContextManager[int]:
        return FILES.pinned(self, LOG, evict)

    # -- opening ------------------------------------------------------------------------------

    def recover(self) -> int:
        """Scan the whole log, check every CRC, cut a torn or corrupt tail, rebuild the indexes.

        Returns the number of bytes cut off.
        """
        with self._log() as fd:
            return self._recover(fd)

    def _recover(self, fd: int) -> int:
        valid_end = 0
        self._reset_indexes()
        pos = 0
        while pos < self.size:
            chunk = os.pread(fd, max(_SCAN_CHUNK, HEADER_SIZE), pos)
            if len(chunk) < HEADER_SIZE:
                break
            header = parse_header(chunk)
            if header.magic != 2 or header.length < HEADER_SIZE - 12:
                break
            if header.size > len(chunk):
                chunk = os.pread(fd, header.size, pos)
                if len(chunk) < header.size:
                    break
            if crc32c.crc32c(memoryview(chunk)[21 : header.size]) != header.crc:
                break
            consumed = 0
            view = memoryview(chunk)
            for rel, h in iter_batches(view):
                if rel != consumed:
                    break
                if rel > 0 and crc32c.crc32c(view[rel + 21 : rel + h.size]) != h.crc:
                    break
                if h.base_offset < self.next_offset and self.next_offset != self.base_offset:
                    break  # offsets went backwards: garbage
                self._note_batch(pos + rel, h)
                consumed = rel + h.size
            if consumed == 0:
                break
            pos += consumed
            valid_end = pos
        cut = self.size - valid_end
        if cut:
            log.warning(
                "segment %s: cutting %d bytes of torn or corrupt tail at position %d",
                self.log_path,
                cut,
                valid_end,
            )
            os.ftruncate(fd, valid_end)
            self.size = valid_end
        self._rewrite_index_files()
        return cut

    def load(self) -> None:
        """Open a closed segment from its index files, rebuilding them if they look damaged."""
        try:
            self._load_index_files()
        except (OSError, ValueError) as exc:
            log.warning("segment %s: index unusable (%s); rebuilding", self.log_path, exc)
            self.recover()
            return
        # The last batch sits after the last index entry: walk from there to learn next_offset.
        start = self.index_positions[-1] if self.index_positions else 0
        with self._log() as fd:
            tail = os.pread(fd, self.size - start, start)
        last: BatchHeader | None = None
        for _rel, h in iter_batches(tail):
            last = h
        if last is None and self.size:
            self.recover()
            return
        if last is not None:
            self.next_offset = last.last_offset + 1
            self.max_timestamp = max(self.max_timestamp, last.max_timestamp)
        self.created_ms = int(os.stat(self.log_path).st_mtime * 1000)

    def _load_index_files(self) -> None:
        self._reset_indexes()
        if not self.index_path.exists() or not self.time_index_path.exists():
            raise ValueError("index file missing")
        raw = self.index_path.read_bytes()
        raw = raw[: len(raw) - len(raw) % _INDEX_ENTRY.size]
        for rel, position in _INDEX_ENTRY.iter_unpack(raw):
            if position >= self.size:
                break
            if self.index_positions and position <= self.index_positions[-1]:
                raise ValueError("index positions not increasing")
            self.index_offsets.append(self.base_offset + rel)
            self.index_positions.append(position)
        if self.size and not self.index_positions:
            raise ValueError("empty index for a non-empty segment")
        raw = self.time_index_path.read_bytes()
        raw = raw[: len(raw) - len(raw) % _TIME_ENTRY.size]
        for ts, rel in _TIME_ENTRY.iter_unpack(raw):
            self.time_stamps.append(ts)
            self.time_offsets.append(self.base_offset + rel)
            self.max_timestamp = max(self.max_timestamp, ts)

    def _reset_indexes(self) -> None:
        self.index_offsets = array("q")
        self.index_positions = array("q")
        self.time_stamps = array("q")
        self.time_offsets = array("q")
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._bytes_since_index = 0

    def _rewrite_index_files(self) -> None:
        self._close_index_fds()
        with open(self.index_path, "wb") as f:
            for off, position in zip(self.index_offsets, self.index_positions, strict=True):
                f.write(_INDEX_ENTRY.pack(off - self.base_offset, position))
        with open(self.time_index_path, "wb") as f:
            for ts, off in zip(self.time_stamps, self.time_offsets, strict=True):
                f.write(_TIME_ENTRY.pack(ts, off - self.base_offset))

    # -- writing ------------------------------------------------------------------------------

    def _note_batch(self, position: int, header: BatchHeader) -> tuple[bool, bool]:
        """Update in-memory indexes for a batch at ``position``; says which entries were added."""
        add_index = not self.index_offsets or self._bytes_since_index >= self.index_interval_bytes
        if add_index:
            self.index_offsets.append(header.base_offset)
            self.index_positions.append(position)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        add_time = header.max_timestamp > self.max_timestamp
        if add_time:
            self.max_timestamp = header.max_timestamp
            self.time_stamps.append(header.max_timestamp)
            self.time_offsets.append(header.base_offset)
        self.next_offset = header.last_offset + 1
        return add_index, add_time

    def append(self, data: bytes | bytearray, headers: list[tuple[int, BatchHeader]]) -> None:
        """Append batches (offsets already assigned) and index them."""
        position = self.size
        with self._log() as fd:
            if position + len(data) > self._reserved_to:
                self._reserve(fd, position + len(data))
            written = os.pwrite(fd, data, position)
        if written != len(data):
            raise OSError(f"short write to {self.log_path}: {written} of {len(data)} bytes")
        self.size += len(data)
        for rel, header in headers:
            add_index, add_time = self._note_batch(position + rel, header)
            if add_index:
                os.write(
                    FILES.get(self, INDEX),
                    _INDEX_ENTRY.pack(header.base_offset - self.base_offset, position + rel),
                )
            if add_time:
                os.write(
                    FILES.get(self, TIME_INDEX),
                    _TIME_ENTRY.pack(header.max_timestamp, header.base_offset - self.base_offset),
                )

    def _reserve(self, fd: int, end: int) -> None:
        start = max(self._reserved_to, self.size)
        ahead = min(max(end, _RESERVE_MIN), _RESERVE_MAX)
        if prealloc.reserve(fd, start, end - start + ahead):
            self._reserved_to = end + ahead
        else:
            self._reserved_to = _NO_RESERVE  # not here: plain appends

    def give_back_reserve(self) -> None:
        """Free the blocks reserved past the end (the segment is closed for appends)."""
        with self._log() as fd:
            prealloc.give_back(fd, self.size)
        self._reserved_to = self.size

    def sync(self) -> None:
        """fdatasync the log; any descriptor of the file flushes all of its written data
        (fsync(2)), so a reopened one after eviction is as good. Runs in executor threads too,
        which never evict."""
        with self._log(evict=False) as fd:
            os.fdatasync(fd)

    # -- reading ------------------------------------------------------------------------------

    def position_for(self, offset: int) -> int:
        """File position of the indexed batch at or before ``offset``."""
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    def read(self, offset: int, max_bytes: int, max_position: int | None = None) -> bytes:
        """Whole batches starting with the one that holds ``offset``, up to ``max_bytes``.

        At least one whole batch is returned even if it is larger than ``max_bytes`` (KIP-74).
        ``max_position`` bounds the read (e.g. to the last stable offset's position).
        """
        with self._log() as fd:
            start, stop = self._locate(fd, offset, max_bytes, _NO_UPPER, max_position)
            return os.pread(fd, stop - start, start) if stop > start else b""

    def read_range(self, start: int, stop: int) -> bytes:
        with self._log() as fd:
            return os.pread(fd, stop - start, start)

    def locate(self, offset: int, max_bytes: int, upper_offset: int = -1) -> tuple[int, int]:
        """File positions [start, stop) of what ``read`` returns, reading only batch headers,
        and stopping before the first batch at or past ``upper_offset`` (-1: no bound). Fetch
        sends that range with sendfile(2), so the records never pass through Python."""
        with self._log() as fd:
            return self._locate(fd, offset, max_bytes,
                                _NO_UPPER if upper_offset < 0 else upper_offset, None)

    def _locate(self, fd: int, offset: int, max_bytes: int, upper: int,
                max_position: int | None) -> tuple[int, int]:
        end = self.size if max_position is None else min(self.size, max_position)
        pos = self.position_for(offset)
        start = -1
        buf = b""
        buf_at = pos
        window = _HEADER_WINDOW
        while pos < end:
            rel = pos - buf_at
            if rel + _BATCH_PREFIX.size > len(buf):
                # Small batches: one read holds many headers. Big ones: read just the header.
                buf = os.pread(fd, min(window, end - pos), pos)
                buf_at, rel = pos, 0
                if len(buf) < _BATCH_PREFIX.size:
                    break  # a torn tail (cut at the next start)
            base, length, _epoch, _magic, _crc, _attributes, last_delta = \
                _BATCH_PREFIX.unpack_from(buf, rel)
            size = length + 12
            if size < HEADER_SIZE or pos + size > end:
                break  # not a whole batch: never written by the broker, but never loop on it
            if start < 0:
                if base + last_delta < offset:
                    pos += size
                    continue
                if base >= upper:
                    break
                start = pos
            elif base >= upper or pos + size - start > max_bytes:
                break
            pos += size
            window = _HEADER_WINDOW if size < _HEADER_WINDOW else _BATCH_PREFIX.size
        if start < 0:
            return pos, pos
        return start, pos

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First batch whose max timestamp >= ``timestamp``: (base offset, file position)."""
        if self.max_timestamp < timestamp:
            return None
        i = bisect.bisect_left(self.time_stamps, timestamp)
        start_offset = self.time_offsets[i - 1] if i > 0 else self.base_offset
        pos = self.position_for(start_offset)
        with self._log() as fd:
            return self._scan_for_timestamp(fd, pos, timestamp)

    def _scan_for_timestamp(self, fd: int, pos: int, timestamp: int) -> tuple[int, int] | None:
        while pos < self.size:
            chunk = os.pread(fd, min(self.size - pos, _SCAN_CHUNK), pos)
            consumed = 0
            for rel, h in iter_batches(chunk):
                consumed = rel + h.size
                if h.max_timestamp >= timestamp and not h.is_control:
                    return h.base_offset, pos + rel
            if consumed == 0:
                h = parse_header(chunk)
                consumed = h.size
            pos += consumed
        return None

    def read_batch_at(self, position: int, evict: bool = True) -> bytes:
        with self._log(evict) as fd:
            header = parse_header(os.pread(fd, HEADER_SIZE, position))
            return os.pread(fd, header.size, position)

    # -- closing ------------------------------------------------------------------------------

    def _close_index_fds(self) -> None:
        FILES.close(self, (INDEX, TIME_INDEX))

    def close(self) -> None:
        FILES.close(self)

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)
