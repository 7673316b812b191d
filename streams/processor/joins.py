"""Join processors: stream-table, stream-global-table, table-table and stream-stream (windowed).

The DSL side (``streams/dsl/joins.py``) wires these; the semantics follow Kafka Streams'
``KStreamKTableJoinProcessor``, ``KTableKTable{Inner,Left,Right,Outer}Join`` and
``KStreamKStreamJoin`` (reference §2.1-§2.3, §2.5, gotchas §7). Joiners always take
``(left_value, right_value)``; processors on the right side of a join call them reversed.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from ..serde import InternalSerde, Serde, Serdes, resolve_serde
from .api import Change, Processor, ProcessorContext, Record, TaskId
from .cached import CacheForwarding
from .value_getter import bind_view

log = logging.getLogger(__name__)

Joiner = Callable[[Any, Any], Any]
KeySelector = Callable[[Any, Any], Any]

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_MAX_TIME = 2**63 - 1


# -- serdes a processor must resolve itself ----------------------------------------------------


def topic_key_serde(explicit: Serde[Any] | None, app_config: dict[str, Any] | None) -> Serde[Any]:
    """How a user topic's keys are written: the given serde, the configured default, else bytes.

    The FK join writes foreign keys in this format so that the default partitioner puts a
    subscription on the partition of the right table that holds the key.
    """
    if explicit is not None:
        return explicit
    config = app_config or {}
    configured = resolve_serde(config.get("default.key.serde") or config.get("default_key_serde"))
    return configured or Serdes.bytes()


def internal_value_serde(explicit: Serde[Any] | None,
                         app_config: dict[str, Any] | None) -> Serde[Any]:
    """What the task uses for a store or internal topic: the given serde, the configured
    default, else the internal serde (``TaskConfig.internal_value_serde``)."""
    if explicit is not None:
        return explicit
    config = app_config or {}
    configured = resolve_serde(
        config.get("default.value.serde") or config.get("default_value_serde"))
    return configured or InternalSerde()


# -- stream-table and stream-global-table -------------------------------------------------------


class StreamTableJoinProcessor(Processor[Any, Any]):
    """``KStream.join/left_join(KTable | GlobalKTable)``: a lookup per stream record.

    Only the stream triggers; the output keeps the stream record's key and timestamp. Null
    values are dropped. A null key (or, for a global table, a null ``key_selector`` result) is
    dropped by inner joins and joined with ``None`` by left joins (KIP-962, reference §2.2 and
    §2.5).
    """

    def __init__(self, store_name: str, joiner: Joiner, left: bool,
                 key_selector: KeySelector | None = None) -> None:
        self.store_name = store_name
        self.joiner = joiner
        self.left = left
        self.key_selector = key_selector

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = bind_view(context, self.store_name)  # a store, or a table's value getter

    def process(self, record: Record[Any, Any]) -> None:
        if self._joinable(record):
            self._join(record)

    def _joinable(self, record: Record[Any, Any]) -> bool:
        """False for a record no join kind joins: a null value, or a null key in an inner
        join (a left join joins it with None, KIP-962)."""
        if record.value is None or (record.key is None and not self.left):
            log.debug("stream-table join %s: skipping a record with a null key or value",
                      self.store_name)
            return False
        return True

    def _lookup(self, record: Record[Any, Any]) -> Any:
        """The table's value the record joins (None: none)."""
        key = record.key
        lookup = key if self.key_selector is None else self.key_selector(key, record.value)
        return None if lookup is None else self.store.get(lookup)

    def _join(self, record: Record[Any, Any]) -> None:
        other = self._lookup(record)
        if other is None and not self.left:
            return
        self.context.forward(record.with_value(self.joiner(record.key, record.value, other)))


# -- table-table (primary key) ------------------------------------------------------------------


class TableMaterializeProcessor(Processor[Any, Any]):
    """Keeps a store of a table that had none, so joins can look its values up.

    Kafka reads such tables through value getters; materializing them is equivalent. The
    forwarded ``Change.old`` is taken from the store, so it is exact whatever upstream sent.
    """

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        key = record.key
        if key is None:
            return
        if not record.value.is_latest:  # KIP-914: history only, the latest value stays
            self.context.forward(record)
            return
        new = record.value.new
        old = self.store.get(key)
        self.store.put(key, new, record.timestamp)
        self.context.forward(record.with_value(Change(new, old)))


class TableTableJoinProcessor(Processor[Any, Any]):
    """One side of a primary-key table-table join (``mode`` picks Kafka's processor).

    * ``inner``: nothing unless the other side has a value; a tombstone on this side forwards
      a tombstone.
    * ``left``: the left side of a left join; joins with ``None`` when the right is missing.
    * ``right``: the right side of a left join; nothing unless the left has a value, then
      ``joiner(left, new_right)`` even when the new right value is ``None``.
    * ``outer``: joins whenever either side has a value; tombstone when both are gone.

    The output timestamp is max(this, other) while the other side has a value, else this
    record's timestamp. ``joiner`` here already takes ``(this_value, other_value)``.
    """

    def __init__(self, other_store_name: str, joiner: Joiner, mode: str,
                 send_old: Callable[[], bool]) -> None:
        if mode not in ("inner", "left", "right", "outer"):
            raise ValueError(f"unknown table join mode {mode!r}")
        self.other_store_name = other_store_name
        self.joiner = joiner
        self.mode = mode
        self.send_old = send_old

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.other_store = bind_view(context, self.other_store_name)
        self.sending_old = self.send_old()

    def process(self, record: Record[Any, Change[Any]]) -> None:
        key = record.key
        if key is None:
            log.debug("table-table join: skipping a record with a null key")
            return
        change = record.value
        if not change.is_latest:
            return  # KIP-914: an out-of-order update of a versioned table joins nothing
        found = self.other_store.get_with_timestamp(key)
        other = None if found is None else found[0]
        mode = self.mode
        joiner = self.joiner
        if other is None:
            if mode in ("inner", "right"):
                return
            if change.new is None and change.old is None:
                return
            timestamp = record.timestamp
        else:
            timestamp = max(record.timestamp, found[1])  # type: ignore[index]
        new = old = None
        if mode == "right":
            new = joiner(change.new, other)
            if self.sending_old:
                old = joiner(change.old, other)
        elif mode == "outer":
            if other is not None or change.new is not None:
                new = joiner(change.new, other)
            if self.sending_old and (other is not None or change.old is not None):
                old = joiner(change.old, other)
        else:
            if change.new is not None:
                new = joiner(change.new, other)
            if self.sending_old and change.old is not None:
                old = joiner(change.old, other)
        self.context.forward(Record(key, Change(new, old), timestamp, record.headers))


class TableJoinMergeProcessor(CacheForwarding, Processor[Any, Any]):
    """``KTABLE-MERGE``: joins both sides' results; writes them to the result store if any
    (through its record cache when that is on, as Kafka's KTableKTableJoinMerger)."""

    def __init__(self, store_name: str | None) -> None:
        self.store_name = store_name
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.store_name is not None:
            self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context, enable=self.store is not None)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if self.store is not None:
            if self._put_cached(record, record.key, record.value.new, record.timestamp):
                return
            self.store.put(record.key, record.value.new, record.timestamp)
        self.context.forward(record)


# -- stream-stream (windowed) -------------------------------------------------------------------


def _java_long(value: int) -> int:
    """``value`` as Java's 64-bit signed arithmetic leaves it (wrapping on overflow)."""
    return (value + 2**63) % 2**64 - 2**63


class TimeTracker:
    """Stream time and the oldest pending non-joined record, shared by both sides of a join."""

    __slots__ = ("stream_time", "min_time", "next_emit_ms")

    def __init__(self) -> None:
        self.stream_time = -1
        self.min_time = _MAX_TIME
        self.next_emit_ms = -1

    def advance(self, timestamp: int) -> None:
        if timestamp > self.stream_time:
            self.stream_time = timestamp

    def update_min(self, timestamp: int) -> None:
        if timestamp < self.min_time:
            self.min_time = timestamp


class TimeTrackers:
    """One ``TimeTracker`` per task, handed to both join processors of that task."""

    def __init__(self) -> None:
        self._by_task: dict[TaskId, TimeTracker] = {}

    def get(self, task_id: TaskId) -> TimeTracker:
        tracker = self._by_task.get(task_id)
        if tracker is None:
            tracker = self._by_task[task_id] = TimeTracker()
        return tracker

    def remove(self, task_id: TaskId) -> None:
        self._by_task.pop(task_id, None)


class JoinWindowProcessor(Processor[Any, Any]):
    """``KSTREAM-WINDOWED``: passes the record on to the join, then buffers it for the other side."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)
        if record.key is not None and record.value is not None:
            self.store.put(record.key, record.value, record.timestamp, record.timestamp)


def outer_key(timestamp: int, is_left: bool, key_bytes: bytes) -> bytes:
    """Outer-store key ``[ts: 8][side: 1 (left) / 0 (right)][key]``: scans run <ts, side, key>."""
    return _LONG.pack(timestamp) + (b"\x01" if is_left else b"\x00") + key_bytes


def append_value(existing: bytes | None, value_bytes: bytes) -> bytes:
    """The outer store keeps a list per key (equal timestamps): ``([len: 4][value])*``."""
    return (existing or b"") + _INT.pack(len(value_bytes)) + value_bytes


def split_values(data: bytes) -> list[bytes]:
    values, offset, end = [], 0, len(data)
    while offset < end:
        size = _INT.unpack_from(data, offset)[0]
        offset += 4
        values.append(bytes(data[offset:offset + size]))
        offset += size
    return values


class StreamStreamJoinProcessor(Processor[Any, Any]):
    """One side of a windowed stream-stream join (Kafka's ``KStreamKStreamJoin``).

    A record joins every record of the other side's window store with
    ``ts - before <= other.ts <= ts + after`` (before/after seen from this side); joined output
    is timestamped max(this, other). On an outer side a record that found no partner goes to
    the shared "outer" store, and non-joined records are emitted (with their own timestamp, in
    <ts, side, key> order) once ``stream_time > ts + lookback + grace`` (strictly; lookback is
    the window's ``after`` for left records and ``before`` for right records). Without an outer
    store (deprecated ``JoinWindows.of``) or when the record's window is already closed, the
    non-joined result is emitted at once. Null keys on an outer side are emitted immediately
    (KIP-962); other null keys and all null values are dropped. An optimized self-join
    runs as Kafka's self-join processor instead (_process_self_join).
    """

    def __init__(
        self,
        *,
        is_left: bool,
        other_store_name: str,
        this_value_serde: Serde[Any] | None,
        outer_store_name: str | None,
        joiner: Joiner,
        outer: bool,
        before_ms: int,
        after_ms: int,
        windows_before_ms: int,
        windows_after_ms: int,
        grace_ms: int,
        trackers: TimeTrackers,
        self_join_store: str | None = None,
        retention_ms: int = 0,
    ) -> None:
        self.is_left = is_left
        # A self-join under topology.optimization=all (KIP-862): the left side runs Kafka's
        # self-join processor over its own window store (``self_join_store``, written after
        # the join sees it) and the right side does nothing (_process_self_join).
        self.self_join_store = self_join_store
        self.retention_ms = retention_ms
        if self_join_store is not None:
            outer, outer_store_name = False, None
        self.other_store_name = other_store_name
        self.this_value_serde = this_value_serde
        self.outer_store_name = outer_store_name
        self.joiner = joiner  # always (key, left_value, right_value)
        self.outer = outer
        self.before_ms = before_ms
        self.after_ms = after_ms
        self.windows_before_ms = windows_before_ms
        self.windows_after_ms = windows_after_ms
        self.grace_ms = grace_ms
        self.trackers = trackers
        self.outer_store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.other_store = other_store = context.get_state_store(self.other_store_name)
        config = context.app_config or {}
        # this side's window store is not connected (as in Kafka): resolve its serde the way
        # the task resolves store serdes (explicit, else the configured default, else internal)
        this_serde = internal_value_serde(self.this_value_serde, config)
        self.key_serde = other_store.key_serde
        self.left_value_serde, self.right_value_serde = (
            (this_serde, other_store.value_serde) if self.is_left
            else (other_store.value_serde, this_serde))
        self.tracker = self.trackers.get(context.task_id)
        if self.outer_store_name is not None:
            self.outer_store = context.get_state_store(self.outer_store_name)
        if self.self_join_store is not None and self.is_left:
            self.this_store = context.get_state_store(self.self_join_store)
        # Kafka throttles the non-joined emission check to once per wall-clock interval; its
        # TopologyTestDriver sets the interval to 0. The default here is 0 (no throttle).
        self.emit_interval_ms = int(config.get(
            "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0))

    def close(self) -> None:
        self.trackers.remove(self.context.task_id)

    def _join(self, key: Any, this_value: Any, other_value: Any) -> Any:
        if self.is_left:
            return self.joiner(key, this_value, other_value)
        return self.joiner(key, other_value, this_value)

    def process(self, record: Record[Any, Any]) -> None:
        if self.self_join_store is not None:
            self._process_self_join(record)
            return
        timestamp = record.timestamp
        tracker = self.tracker
        tracker.advance(timestamp)
        key, value = record.key, record.value
        if value is None or (key is None and not self.outer):
            log.debug("stream-stream join: skipping a record with a null key or value")
            return
        if key is None:
            self.context.forward(record.with_value(self._join(key, value, None)))
            return
        outer_store = self.outer_store
        if outer_store is not None and timestamp == tracker.stream_time:
            self._emit_non_joined(record)
        time_from = max(0, timestamp - self.before_ms)
        time_to = max(0, timestamp + self.after_ms)
        key_bytes = None if outer_store is None else self._key_bytes(key)
        joined = False
        for other_ts, other_value in self.other_store.fetch(key, time_from, time_to):
            joined = True
            if outer_store is not None:
                partner = outer_key(other_ts, not self.is_left, key_bytes)  # type: ignore[arg-type]
                if outer_store.get(partner) is not None:
                    outer_store.delete(partner)
            self.context.forward(Record(key, self._join(key, value, other_value),
                                        max(timestamp, other_ts), record.headers))
        if joined or not self.outer:
            return
        if outer_store is None or time_to < tracker.stream_time:
            self.context.forward(record.with_value(self._join(key, value, None)))
            return
        tracker.update_min(timestamp)
        serde = self.left_value_serde if self.is_left else self.right_value_serde
        slot = outer_key(timestamp, self.is_left, key_bytes)  # type: ignore[arg-type]
        outer_store.put(slot, append_value(outer_store.get(slot),
                                           serde.serialize(self.outer_store_name, value)))

    def _process_self_join(self, record: Record[Any, Any]) -> None:
        """Kafka's KStreamKStreamSelfJoin (topology.optimization=all): an inner join of the
        record with the stream's window store as it was before the record (this side's
        windowed node stores it after the join): first as the left value with the others in
        [ts - before, ts + after], then as the right value with those in [ts - after,
        ts + before], the record with itself before the first later partner (or last) unless
        it is older than the store's retention. Null keys and values are dropped."""
        if not self.is_left:
            return  # the other side of the same records: the left side joins them all
        key, value, timestamp = record.key, record.value, record.timestamp
        if key is None or value is None:
            log.debug("stream-stream self-join: skipping a record with a null key or value")
            return
        self.tracker.advance(timestamp)
        join_self = timestamp > self.tracker.stream_time - self.retention_ms + 1
        forward, joiner, headers = self.context.forward, self.joiner, record.headers
        before, after = self.windows_before_ms, self.windows_after_ms
        store = self.this_store
        for other_ts, other in store.fetch(key, max(0, timestamp - before),
                                           max(0, timestamp + after)):
            forward(Record(key, joiner(key, value, other), max(timestamp, other_ts), headers))
        emitted_self = False
        for other_ts, other in store.fetch(key, max(0, timestamp - after),
                                           max(0, timestamp + before)):
            if timestamp < other_ts and not emitted_self and join_self:
                emitted_self = True
                forward(Record(key, joiner(key, value, value), timestamp, headers))
            forward(Record(key, joiner(key, other, value), max(timestamp, other_ts), headers))
        if not emitted_self and join_self:
            forward(Record(key, joiner(key, value, value), timestamp, headers))

    def _key_bytes(self, key: Any) -> bytes:
        return self.key_serde.serialize(self.other_store_name, key)

    def _emit_non_joined(self, record: Record[Any, Any]) -> None:
        tracker = self.tracker
        stream_time = tracker.stream_time
        grace = self.grace_ms
        if _java_long(tracker.min_time + self.after_ms + grace) >= stream_time:
            # nothing can have closed yet. Kafka adds in Java longs: with no pending record
            # (min time Long.MAX_VALUE) and a window reaching past the record or a grace, the
            # sum wraps negative and the check goes on, so the emit throttle's interval starts
            # at the join's first record; with neither it waits for the first pending record
            return
        if self.emit_interval_ms > 0:
            now = self.context.current_system_time_ms()
            if now < tracker.next_emit_ms:
                return
            tracker.next_emit_ms = now + self.emit_interval_ms
        tracker.min_time = _MAX_TIME
        store = self.outer_store
        left_open = right_open = False
        emitted: list[bytes] = []
        for slot, data in store.all():
            slot_ts = _LONG.unpack_from(slot)[0]
            tracker.min_time = slot_ts
            if left_open and right_open:
                break
            is_left = slot[8] == 1
            lookback = self.windows_after_ms if is_left else self.windows_before_ms
            if slot_ts + lookback + grace >= stream_time:
                if is_left:
                    left_open = True
                else:
                    right_open = True
                # Kafka's outer store (a list-value store) iterates a slot's values one by
                # one, each setting the min time: with both sides open the scan stops at this
                # slot's second value, leaving the min time here rather than at the next slot
                if left_open and right_open and len(data) > 4 + _INT.unpack_from(data)[0]:
                    break
                continue
            key = self.key_serde.deserialize(self.other_store_name, bytes(slot[9:]))
            serde = self.left_value_serde if is_left else self.right_value_serde
            for value_bytes in split_values(data):
                value = serde.deserialize(self.outer_store_name, value_bytes)
                result = (self.joiner(key, value, None) if is_left
                          else self.joiner(key, None, value))
                self.context.forward(Record(key, result, slot_ts, record.headers))
            emitted.append(bytes(slot))
        for slot in emitted:
            store.delete(slot)
