"""``KTable.suppress``: a buffer that holds back table updates until a time condition holds.

The buffer (a ``TimeOrderedKeyValueBuffer`` state store with a changelog, see
``streams/state/buffer.py``) keeps the latest update per key, ordered by *buffer time* (the
window end for ``until_window_closes``, the record timestamp for ``until_time_limit``; ties in
serialized-key order). After each record the processor evicts, oldest first, every entry with
``buffer_time <= ST - delay``, where ST is the largest record timestamp the buffer has seen
since its task started (Kafka's ``KTableSuppressProcessor``, whose ``observedStreamTime``
starts from nothing: a restored buffer emits once new input passes a window's close; neither
takes the stream time committed with the offsets, see buffer.py). An
evicted entry is forwarded with the timestamp and headers of its latest update and
``Change(latest new, old value from before buffering began)``. Final-results mode drops
tombstones at emission (Kafka's ``safeToDropTombstones``).

When a bounded buffer overflows it either evicts its oldest entries early (``emit_early``) or
stops processing with a ``StreamsError`` (strict ``shut_down_when_full``).
"""

from __future__ import annotations

from typing import Any

from ..state.buffer import BufferEntry, TimeOrderedKeyValueBuffer
from .api import Change, Processor, ProcessorContext, Record
from .task import StreamsError


class SuppressProcessor(Processor[Any, Any]):
    def __init__(self, name: str, store_name: str, delay_ms: int, window_end_time: bool,
                 max_records: int | None, max_bytes: int | None, strict: bool) -> None:
        self.name = name
        self.store_name = store_name
        self.delay_ms = delay_ms
        self.final_results = window_end_time  # buffer by window end; drop tombstones
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.strict = strict
        self.buffer: TimeOrderedKeyValueBuffer

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.buffer = context.get_state_store(self.store_name)
        self.buffer.measure_bytes = self.max_bytes is not None

    def process(self, record: Record[Any, Any]) -> None:
        buffer = self.buffer
        buffer.observe(record.timestamp)
        change = record.value
        if not isinstance(change, Change):
            change = Change(change, None)
        key = record.key
        time = key.window.end if self.final_results else record.timestamp
        if not self.final_results:
            # Kafka's buffer is non-resetting: an update of a buffered key keeps its place
            # (and so its buffer time); only the value and record context are replaced.
            previous = buffer.entries.get(buffer.key_serde.serialize(buffer.name, key))
            if previous is not None:
                time = previous.time
        buffer.put(time, key, change.new, change.old, record.timestamp, record.headers)
        self._evict_expired()
        self._enforce_limits()

    def _emit(self, entry: BufferEntry) -> None:
        self.buffer.remove(entry)
        if entry.new is None and self.final_results:
            return
        self.context.forward(Record(entry.key, Change(entry.new, entry.old), entry.timestamp,
                                    entry.headers))

    def _evict_expired(self) -> None:
        buffer = self.buffer
        expiry = buffer.stream_time - self.delay_ms
        while True:
            entry = buffer.oldest()
            if entry is None or entry.time > expiry:
                return
            self._emit(entry)

    def _over(self) -> bool:
        buffer = self.buffer
        return ((self.max_records is not None and buffer.num_records() > self.max_records)
                or (self.max_bytes is not None and buffer.bytes > self.max_bytes))

    def _enforce_limits(self) -> None:
        if not self._over():
            return
        if self.strict:
            raise StreamsError(
                f"suppression buffer {self.name} is full ({self.buffer.num_records()} records, "
                f"{self.buffer.bytes} bytes; limits: records={self.max_records}, "
                f"bytes={self.max_bytes}) and is configured to shut down when full")
        while self._over():
            entry = self.buffer.oldest()
            if entry is None:
                return
            self._emit(entry)
