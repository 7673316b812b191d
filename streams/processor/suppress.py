"""``KTable.suppress``: a buffer that holds back table updates until a time condition holds.

The buffer keeps the latest update per key, ordered by *buffer time* (the window end for
``until_window_closes``, the record timestamp for ``until_time_limit``; ties in serialized-key
order). After each record the
processor evicts, oldest first, every entry with ``buffer_time <= ST - delay``, where ST is the
largest record timestamp this processor has seen (Kafka's ``KTableSuppressProcessor``). An
evicted entry is forwarded with the timestamp and headers of its latest update and
``Change(latest new, old value from before buffering began)``. Final-results mode drops
tombstones at emission (Kafka's ``safeToDropTombstones``).

When a bounded buffer overflows it either evicts its oldest entries early (``emit_early``) or
stops processing with a ``StreamsError`` (strict ``shut_down_when_full``).
"""

from __future__ import annotations

import heapq
from typing import Any

from ..serde import Serde
from .api import Change, Processor, Record
from .task import StreamsError


class _Entry:
    __slots__ = ("time", "seq", "record", "old", "size")

    def __init__(self, time: int, seq: int, record: Record[Any, Any], old: Any,
                 size: int) -> None:
        self.time = time
        self.seq = seq
        self.record = record
        self.old = old
        self.size = size


class SuppressProcessor(Processor[Any, Any]):
    def __init__(self, name: str, delay_ms: int, window_end_time: bool,
                 max_records: int | None, max_bytes: int | None, strict: bool,
                 key_serde: Serde[Any] | None, value_serde: Serde[Any] | None) -> None:
        self.name = name
        self.delay_ms = delay_ms
        self.final_results = window_end_time  # buffer by window end; drop tombstones
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.strict = strict
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.observed = -1
        self.entries: dict[Any, _Entry] = {}
        self.heap: list[tuple[int, bytes, int, Any]] = []
        self.bytes = 0
        self._seq = 0

    def _size(self, key: Any, value: Any) -> int:
        """Serialized key + value bytes (repr length when the table has no serde)."""
        if self.max_bytes is None:
            return 0
        try:
            key_bytes = self.key_serde.serialize(self.name, key) if self.key_serde else None
            value_bytes = (self.value_serde.serialize(self.name, value)
                           if self.value_serde else None)
        except Exception:
            key_bytes = value_bytes = None
        size = len(key_bytes) if key_bytes is not None else len(repr(key))
        return size + (len(value_bytes) if value_bytes is not None else len(repr(value)))

    def _key_bytes(self, key: Any) -> bytes:
        """Ties in buffer time go in serialized-key order, as in Kafka's buffer."""
        if self.key_serde is None:
            return b""
        try:
            return self.key_serde.serialize(self.name, key) or b""
        except Exception:
            return b""

    def process(self, record: Record[Any, Any]) -> None:
        if record.timestamp > self.observed:
            self.observed = record.timestamp
        change = record.value
        if not isinstance(change, Change):
            change = Change(change, None)
        key = record.key
        time = key.window.end if self.final_results else record.timestamp
        previous = self.entries.get(key)
        old = change.old if previous is None else previous.old
        if previous is not None:
            self.bytes -= previous.size
        size = self._size(key, change.new)
        self._seq += 1
        self.entries[key] = _Entry(time, self._seq, record.with_value(change), old, size)
        heapq.heappush(self.heap, (time, self._key_bytes(key), self._seq, key))
        self.bytes += size
        self._evict_expired()
        self._enforce_limits()

    def _pop_oldest(self) -> _Entry | None:
        heap, entries = self.heap, self.entries
        while heap:
            _, _, seq, key = heap[0]
            entry = entries.get(key)
            if entry is None or entry.seq != seq:
                heapq.heappop(heap)  # superseded by a later update of the key
                continue
            return entry
        return None

    def _emit(self, entry: _Entry) -> None:
        heapq.heappop(self.heap)
        record = entry.record
        del self.entries[record.key]
        self.bytes -= entry.size
        new = record.value.new
        if new is None and self.final_results:
            return
        self.context.forward(record.with_value(Change(new, entry.old)))

    def _evict_expired(self) -> None:
        expiry = self.observed - self.delay_ms
        while True:
            entry = self._pop_oldest()
            if entry is None or entry.time > expiry:
                return
            self._emit(entry)

    def _over(self) -> bool:
        return ((self.max_records is not None and len(self.entries) > self.max_records)
                or (self.max_bytes is not None and self.bytes > self.max_bytes))

    def _enforce_limits(self) -> None:
        if not self._over():
            return
        if self.strict:
            raise StreamsError(
                f"suppression buffer {self.name} is full ({len(self.entries)} records, "
                f"{self.bytes} bytes; limits: records={self.max_records}, "
                f"bytes={self.max_bytes}) and is configured to shut down when full")
        while self._over():
            entry = self._pop_oldest()
            if entry is None:
                return
            self._emit(entry)
