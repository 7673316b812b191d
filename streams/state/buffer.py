"""The suppression buffer (kind ``"suppress"``): Kafka's ``InMemoryTimeOrderedKeyValueBuffer``.

Why a store: ``KTable.suppress`` holds table updates back for as long as a window stays open,
and an instance that restarts, is redeployed or loses the task in a rebalance must still emit
them. So, as in Kafka, the buffer is a state store registered in the topology (named
``KTABLE-SUPPRESS-STATE-STORE-<n>``) with a compacted changelog, restored through the same path
as every other store.

The buffer keeps the latest update per key in memory, ordered by *buffer time* (window end or
record timestamp) and then serialized key. Every change is logged when it happens: the key's
current entry, or a tombstone when it leaves the buffer (emitted). Kafka's buffer logs its dirty
keys at flush, before a commit, instead; that leaves the buffer's changelog behind the changelog
of the store that feeds it (which a task without a record cache writes on every update), and
after an unclean stop under at_least_once the restored buffer then held entries that had
already been emitted (a final count of 12 re-emitted as a stale 1). Logging each change keeps
the two changelogs at the same point; with a record cache, the buffer only sees updates when
the cache flushes, so it costs no more records than the store's own. The changelog value
(format version 1, big-endian)::

    [1][buffer time: 8][record timestamp: 8][new: 4-byte length, -1 = None][bytes]
    [old: same][header count: 4]([name length: 4][utf-8][value length: 4, -1 = None][bytes])*

``old`` is the value before buffering began (what the emitted ``Change`` carries as old).
Every changelog record is stamped with the buffer's *stream time* (the largest record timestamp
it has seen), for inspection; a restored buffer does not take it up again (see ``restore``).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from ..windowing import Window, Windowed
from .api import ChangeLogger

_FORMAT = 1
_HEAD = struct.Struct(">bqq")
_LEN = struct.Struct(">i")
_LONG = struct.Struct(">q")
# Rebuild the heap when superseded positions outnumber live entries by this factor.
_HEAP_SLACK = 2


class BufferEntry:
    """One buffered key: its latest update and the value from before buffering began."""

    __slots__ = ("time", "seq", "key", "key_bytes", "new", "old", "timestamp", "headers", "size")

    def __init__(self, time: int, seq: int, key: Any, key_bytes: bytes, new: Any, old: Any,
                 timestamp: int, headers: tuple[tuple[str, bytes | None], ...],
                 size: int) -> None:
        self.time = time
        self.seq = seq
        self.key = key
        self.key_bytes = key_bytes
        self.new = new
        self.old = old
        self.timestamp = timestamp
        self.headers = headers
        self.size = size


class TimeOrderedKeyValueBuffer:
    """Buffered updates by key, evicted oldest buffer time first; see the module docstring.

    The suppress processor calls ``observe(timestamp)``, ``put(...)``, ``oldest()`` and
    ``remove(entry)``, each change logged at once; the restorer calls
    ``restore(key, value, timestamp)``.
    """

    persistent = False  # in memory: always restored from the changelog's beginning

    def __init__(self, name: str, key_serde: Serde[Any], value_serde: Serde[Any],
                 logger: ChangeLogger | None = None) -> None:
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.logger = logger
        self.measure_bytes = False  # set by a processor with a byte limit
        self.stream_time = -1
        self.bytes = 0
        self.entries: dict[bytes, BufferEntry] = {}
        self._heap: list[tuple[int, bytes, int]] = []  # (time, key bytes, seq)
        self._seq = 0

    # -- the processor's side -----------------------------------------------------------------

    def observe(self, timestamp: int) -> None:
        if timestamp > self.stream_time:
            self.stream_time = timestamp

    def put(self, time: int, key: Any, new: Any, old: Any, timestamp: int,
            headers: tuple[tuple[str, bytes | None], ...]) -> None:
        """Buffer the latest update of ``key``; ``old`` counts only if the key is new here."""
        key_bytes = self.key_serde.serialize(self.name, key)
        if key_bytes is None:
            raise ValueError(f"suppression buffer {self.name}: keys cannot be None")
        previous = self.entries.get(key_bytes)
        size = len(key_bytes) + len(self._value_bytes(new)) if self.measure_bytes else 0
        if previous is not None:
            self.bytes -= previous.size
            old = previous.old
            if previous.time == time:  # same heap position: update in place
                previous.key, previous.new, previous.timestamp = key, new, timestamp
                previous.headers, previous.size = headers, size
                self.bytes += size
                self._log(key_bytes, previous)
                return
        entry = BufferEntry(time, 0, key, key_bytes, new, old, timestamp, headers, size)
        self._insert(entry)
        self._log(key_bytes, entry)

    def oldest(self) -> BufferEntry | None:
        """The entry with the smallest (buffer time, serialized key), or None if empty."""
        heap, entries = self._heap, self.entries
        while heap:
            _, key_bytes, seq = heap[0]
            entry = entries.get(key_bytes)
            if entry is not None and entry.seq == seq:
                return entry
            heapq.heappop(heap)  # superseded by a later update of the key, or removed
        return None

    def remove(self, entry: BufferEntry) -> None:
        """Take ``entry`` out (it is being emitted); logged as a tombstone at the next flush."""
        if self.entries.get(entry.key_bytes) is entry:
            del self.entries[entry.key_bytes]
            self.bytes -= entry.size
            self._log(entry.key_bytes, None)

    def num_records(self) -> int:
        return len(self.entries)

    # -- store lifecycle ----------------------------------------------------------------------

    def flush(self) -> None:
        """Nothing to do: every change was logged when it happened (see the module docstring)."""

    def _log(self, key_bytes: bytes, entry: BufferEntry | None) -> None:
        if self.logger is not None:
            self.logger(key_bytes, None if entry is None else self._encode(entry),
                        self.stream_time)

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Apply one changelog record (not logged again). Stream time is not restored: as
        in Kafka's KTableSuppressProcessor it starts over with the first record processed.
        Under at_least_once the changelog may run ahead of the committed input; a stream
        time taken from it would close windows while their records are being reprocessed,
        emitting partial results as final ones."""
        previous = self.entries.pop(key, None)
        if previous is not None:
            self.bytes -= previous.size
        if value is None:
            return
        entry = self._decode(key, value)
        self._insert(entry)

    def approximate_num_entries(self) -> int:
        return len(self.entries)

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Buffered keys and their latest values, in eviction order (for inspection)."""
        for _, key_bytes, seq in sorted(self._heap):
            entry = self.entries.get(key_bytes)
            if entry is not None and entry.seq == seq:
                yield entry.key, entry.new

    def close(self) -> None:
        self._clear()

    def wipe(self) -> None:
        self._clear()

    # -- internals ----------------------------------------------------------------------------

    def _clear(self) -> None:
        self.entries.clear()
        self._heap.clear()
        self.bytes = 0
        self.stream_time = -1

    def _insert(self, entry: BufferEntry) -> None:
        self._seq += 1
        entry.seq = self._seq
        entry.size = entry.size or (len(entry.key_bytes) + len(self._value_bytes(entry.new))
                                    if self.measure_bytes else 0)
        self.entries[entry.key_bytes] = entry
        self.bytes += entry.size
        heap = self._heap
        if len(heap) > _HEAP_SLACK * len(self.entries) + 1024:
            self._heap = heap = [(e.time, k, e.seq) for k, e in self.entries.items()]
            heapq.heapify(heap)
        else:
            heapq.heappush(heap, (entry.time, entry.key_bytes, entry.seq))

    def _value_bytes(self, value: Any) -> bytes:
        if value is None:
            return b""
        return self.value_serde.serialize(self.name, value) or b""

    def _encode(self, entry: BufferEntry) -> bytes:
        parts = [_HEAD.pack(_FORMAT, entry.time, entry.timestamp)]
        for value in (entry.new, entry.old):
            data = None if value is None else self.value_serde.serialize(self.name, value)
            parts.append(_LEN.pack(-1 if data is None else len(data)))
            if data is not None:
                parts.append(data)
        parts.append(_LEN.pack(len(entry.headers)))
        for name, header in entry.headers:
            encoded = name.encode("utf-8")
            parts += [_LEN.pack(len(encoded)), encoded,
                      _LEN.pack(-1 if header is None else len(header))]
            if header is not None:
                parts.append(header)
        return b"".join(parts)

    def _decode(self, key_bytes: bytes, data: bytes) -> BufferEntry:
        version, time, timestamp = _HEAD.unpack_from(data)
        if version != _FORMAT:
            raise ValueError(f"suppression buffer {self.name}: unknown changelog format "
                             f"{version}")
        pos = _HEAD.size
        values = []
        for _ in range(2):
            raw, pos = _read_bytes(data, pos)
            values.append(None if raw is None else self.value_serde.deserialize(self.name, raw))
        (count,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        headers = []
        for _ in range(count):
            name, pos = _read_bytes(data, pos)
            header, pos = _read_bytes(data, pos)
            headers.append(((name or b"").decode("utf-8"), header))
        key = self.key_serde.deserialize(self.name, key_bytes)
        return BufferEntry(time, 0, key, key_bytes, values[0], values[1], timestamp,
                           tuple(headers), 0)


def _read_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    (length,) = _LEN.unpack_from(data, pos)
    pos += _LEN.size
    if length < 0:
        return None, pos
    return data[pos:pos + length], pos + length


class BufferKeySerde(Serde[Any]):
    """The buffer's key serde when the table has none: the default serde, with windowed keys
    (which the defaults cannot encode) written as ``[W][start: 8][end: 8][inner key]``."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner
        self.name = f"buffer-key({inner.name})"

    def to_bytes(self, value: Any) -> bytes:
        if isinstance(value, Windowed):
            inner = self.inner.serialize(None, value.key) or b""
            return b"W" + _LONG.pack(value.window.start) + _LONG.pack(value.window.end) + inner
        return b"K" + (self.inner.serialize(None, value) or b"")

    def from_bytes(self, data: bytes) -> Any:
        data = bytes(data)
        if data[:1] == b"W":
            start, end = _LONG.unpack_from(data, 1)[0], _LONG.unpack_from(data, 9)[0]
            return Windowed(self.inner.deserialize(None, data[17:]), Window(start, end))
        return self.inner.deserialize(None, data[1:])


def build_buffer(builder: Any, ctx: Any) -> TimeOrderedKeyValueBuffer:
    """The ``STORE_FACTORIES["suppress"]`` factory."""
    key_serde, value_serde = builder.serdes(ctx)
    if builder.key_serde is None:
        key_serde = BufferKeySerde(key_serde)
    return TimeOrderedKeyValueBuffer(builder.name, key_serde, value_serde,
                                     ctx.logger_for(builder.name) if builder.logging else None)
