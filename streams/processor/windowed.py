"""Windowed stream aggregations: time (tumbling/hopping), sliding and session windows.

Semantics follow Kafka Streams' ``KStreamWindowAggregate``, ``KStreamSlidingWindowAggregate``
and ``KStreamSessionWindowAggregate`` (reference §1.5-§1.7):

* Each processor tracks its own observed stream time (max record timestamp it has seen),
  starting from nothing whenever its task is (re)created, as Kafka's processors do
  (``observedStreamTime = NO_TIMESTAMP``). The store keeps its own stream time, restored from
  the changelog, and hides windows older than its retention (Kafka's segmented stores). So
  under at_least_once, input replayed after a crash is processed again, never dropped as
  late because the restored store had got further: a replayed record whose window the store
  already expired builds a fresh aggregate (Kafka re-emits such partial windows and
  sessions too), which is an at-least-once duplicate, not a loss.
* Late records are dropped with the exact inequalities of §1.6 (time: update a window only if
  ``end > ST - grace``; sliding: ``end >= ST - grace``; session: drop if the merged session's
  ``end < ST - grace - gap``).
* Updates are forwarded as ``Record(Windowed(key, window), Change(new, old), ts)`` where ts is
  the max record timestamp in the window (session: the session end). With
  ``EmitStrategy.on_window_close()`` nothing is forwarded on update; once the window closes
  (``ST >= end + grace``) its final value is forwarded, in window-time order, with
  ``Change(value, None)``. There is no emit throttle (Kafka's TopologyTestDriver behaviour).
  The last window close time emitted (Kafka's ``lastEmitWindowCloseTime``) is the task's
  processor metadata under the store's name, committed with the input offsets (KIP-825,
  KAFKA-13785; see commit_metadata.py): a task restarted or moved on a restored store emits
  only the windows that closed after it, never again the finals already emitted.
  Final results are emitted *before* the record updates the store (Kafka emits after): the
  output is the same, except that a stream-time jump cannot expire a window from the store
  before its final result went out.
* Null keys are always dropped; null values are dropped by sliding windows only (§1.4).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..windowing import Window, Windowed
from .api import Change, Processor, Record
from .cached import CacheForwarding, flushed_timestamp

log = logging.getLogger(__name__)

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]  # (key, value, aggregate) -> aggregate
Merger = Callable[[Any, Any, Any], Any]  # (key, agg1, agg2) -> aggregate


class _WindowedAggregateBase(Processor[Any, Any]):
    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator,
                 emit_on_close: bool) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.emit_on_close = emit_on_close
        self.observed = -1

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)

    def _last_emit_close_time(self) -> int:
        """Up to which close time finals were emitted (-1: none), read from the task's
        processor metadata, which the runtime restores from the committed offsets before the
        task processes anything."""
        last = self.context.processor_metadata_for_key(self.store_name)
        return -1 if last is None else last

    def _emitted(self, close_time: int) -> None:
        self.context.add_processor_metadata_key_value(self.store_name, close_time)

    def _observe(self, timestamp: int) -> None:
        if timestamp > self.observed:
            self.observed = timestamp

    def _drop(self, what: str, record: Record[Any, Any]) -> None:
        log.warning("%s: skipping record (%s) key=%r ts=%d stream_time=%d", self.store_name, what,
                    record.key, record.timestamp, self.observed)

    def _emit_range(self, record: Record[Any, Any], close_time: int, lower: int,
                    upper: int) -> None:
        """Forward the final value of every window with start in [lower, upper]."""
        if lower <= upper:
            forward = self.context.forward
            for windowed, value, ts in list(self.store.fetch_all_timestamped(lower, upper)):
                forward(Record(windowed, Change(value, None), ts, record.headers))
        self._emitted(close_time)


class TimeWindowAggregateProcessor(CacheForwarding, _WindowedAggregateBase):
    """Tumbling and hopping windows (``TimeWindows``), epoch-aligned ``[start, start+size)``."""

    def __init__(self, store_name: str, windows: Any, initializer: Initializer,
                 aggregator: Aggregator, emit_on_close: bool = False) -> None:
        super().__init__(store_name, initializer, aggregator, emit_on_close)
        self.windows = windows

    def init(self, context: Any) -> None:
        super().init(context)
        # Emitting on every update: with the record cache, updates wait in the store's cache
        # and only the latest per window is forwarded when it flushes (as in Kafka).
        self._init_cache_forwarding(context, enable=not self.emit_on_close)

    def _flushed(self, key: Any, new: Any, old: Any, timestamp: int, context: Any) -> None:
        if new is None and old is None:
            return  # a window the store never held, deleted: Kafka's CachingWindowStore skips it
        key, start = key  # the window store's cache key
        windowed = Windowed(key, Window(start, start + self.windows.size_ms))
        self._forward_flushed(windowed, new, old, flushed_timestamp(new, timestamp, context),
                              context)

    def process(self, record: Record[Any, Any]) -> None:
        key = record.key
        if key is None:
            self._drop("null key", record)
            return
        timestamp = record.timestamp
        self._observe(timestamp)
        close_time = self.observed - self.windows.grace_ms
        if self.emit_on_close:
            self._maybe_emit_final(record, close_time)
        cached = self._cache_active()
        store = self.store
        for start, window in self.windows.windows_for(timestamp).items():
            if window.end <= close_time:
                self._drop(f"expired window [{start},{window.end})", record)
                continue
            found = store.fetch_with_timestamp(key, start)
            if found is None or found[0] is None:
                old, new_ts = None, timestamp
                new = self.aggregator(key, record.value, self.initializer())
            else:
                old, old_ts = found
                new_ts = max(timestamp, old_ts)
                new = self.aggregator(key, record.value, old)
            if cached:
                store.put(key, new, start, new_ts, self._cache_context(record))
                continue
            store.put(key, new, start, new_ts)
            if not self.emit_on_close:
                self.context.forward(Record(Windowed(key, window), Change(new, old), new_ts,
                                            record.headers))

    def _maybe_emit_final(self, record: Record[Any, Any], close_time: int) -> None:
        last = self._last_emit_close_time()
        if last != -1 and last >= close_time:
            return
        size = self.windows.size_ms
        upper = close_time - size  # windows with start <= upper have end <= close time
        if upper < 0:
            return
        lower = 0 if last == -1 else max(0, last - size) + 1
        self._emit_range(record, close_time, lower, upper)


class SlidingWindowAggregateProcessor(CacheForwarding, _WindowedAggregateBase):
    """``SlidingWindows``: ``[t - d, t]`` windows, both ends inclusive, aligned to records.

    Every record has a left window ``[t - d, t]`` and, when a later record falls within d of
    it, a right window ``[t + 1, t + 1 + d]``. New windows copy the aggregate of an existing
    window holding the same records, so the aggregator sees each record once per window.
    With the record cache, updates wait in the store's cache and the latest per window is
    forwarded when it flushes, as Kafka's caching window store does.
    """

    def __init__(self, store_name: str, windows: Any, initializer: Initializer,
                 aggregator: Aggregator, emit_on_close: bool = False) -> None:
        super().__init__(store_name, initializer, aggregator, emit_on_close)
        self.d = windows.time_difference_ms
        self.grace = windows.grace_ms

    def init(self, context: Any) -> None:
        super().init(context)
        self._init_cache_forwarding(context, enable=not self.emit_on_close)

    def _flushed(self, key: Any, new: Any, old: Any, timestamp: int, context: Any) -> None:
        if new is None and old is None:
            return
        key, start = key  # the window store's cache key
        self._forward_flushed(Windowed(key, Window(start, start + self.d)), new, old,
                              flushed_timestamp(new, timestamp, context), context)

    def _put(self, record: Record[Any, Any], start: int, agg: Any, old: Any,
             timestamp: int) -> None:
        """Store a window's aggregate and forward the change (or leave both to the cache)."""
        if self._cache_active():
            self.store.put(record.key, agg, start, timestamp, self._cache_context(record))
            return
        self.store.put(record.key, agg, start, timestamp)
        if not self.emit_on_close:
            self.context.forward(Record(Windowed(record.key, Window(start, start + self.d)),
                                        Change(agg, old), timestamp, record.headers))

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            self._drop("null key or value", record)
            return
        timestamp = record.timestamp
        self._observe(timestamp)
        close_time = self.observed - self.grace
        if self.emit_on_close:
            self._maybe_emit_final(record, close_time)
        if timestamp + self.d < close_time:
            self._drop("expired window", record)
        elif timestamp < self.d:
            self._process_early(record, close_time)
        else:
            self._process(record, close_time)

    def _update(self, start: int, agg: Any, agg_ts: int, record: Record[Any, Any],
                close_time: int) -> None:
        end = start + self.d
        if end < close_time:
            self._drop(f"expired window [{start},{end}]", record)
            return
        new = self.aggregator(record.key, record.value, agg)
        new_ts = record.timestamp if agg is None else max(record.timestamp, agg_ts)
        self._put(record, start, new, agg, new_ts)

    def _create_right_window(self, record: Record[Any, Any], agg: Any, agg_ts: int) -> None:
        self._put(record, record.timestamp + 1, agg, None, agg_ts)

    def _process(self, record: Record[Any, Any], close_time: int) -> None:
        ts, d = record.timestamp, self.d
        starts: set[int] = set()
        left: tuple[Any, int] | None = None  # the window just before the record's left window
        right: tuple[Any, int] | None = None  # the latest window containing the record
        left_exists = right_exists = False
        previous_ts: int | None = None
        windows = list(self.store.backward_fetch_timestamped(record.key, max(0, ts - 2 * d),
                                                             ts + 1))
        for start, agg, agg_ts in windows:
            starts.add(start)
            end = start + d
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                if right is None:
                    right = (agg, agg_ts)
                self._update(start, agg, agg_ts, record, close_time)
            elif end == ts:
                left_exists = True
                self._update(start, agg, agg_ts, record, close_time)
                if agg_ts >= ts:
                    return  # a record at ts already made every window this one needs
                previous_ts = agg_ts
            else:
                left = (agg, agg_ts)
                previous_ts = agg_ts
                break
        if previous_ts is not None:
            previous_right = previous_ts + 1
            if previous_right not in starts and previous_right + d >= ts:
                self._update(previous_right, self.initializer(), ts, record, close_time)
        if not left_exists:
            if previous_ts is not None and ts - d <= previous_ts and left is not None:
                self._update(ts - d, left[0], ts, record, close_time)
            else:
                self._update(ts - d, self.initializer(), ts, record, close_time)
        if not right_exists and right is not None and right[1] > ts:
            self._create_right_window(record, *right)

    def _process_early(self, record: Record[Any, Any], close_time: int) -> None:
        """Records before ``d`` share the window [0, d] instead of windows with start < 0."""
        ts = record.timestamp
        starts: set[int] = set()
        combined: tuple[Any, int] | None = None
        right: tuple[Any, int] | None = None
        right_exists = False
        previous_ts: int | None = None
        for start, agg, agg_ts in list(self.store.fetch_timestamped(record.key, 0, ts + 1)):
            starts.add(start)
            if start == 0:
                combined = (agg, agg_ts)
                if agg_ts < ts:
                    previous_ts = agg_ts
            elif start <= ts:
                right = (agg, agg_ts)
                self._update(start, agg, agg_ts, record, close_time)
            else:  # start == ts + 1
                right_exists = True
        if right is None and combined is not None and combined[1] > ts:
            right = combined
        if not right_exists and right is not None and right[1] > ts:
            self._create_right_window(record, *right)
        if previous_ts is not None and previous_ts + 1 not in starts:
            self._update(previous_ts + 1, self.initializer(), ts, record, close_time)
        if combined is None:
            self._update(0, self.initializer(), ts, record, close_time)
        else:
            self._update(0, combined[0], combined[1], record, close_time)

    def _maybe_emit_final(self, record: Record[Any, Any], close_time: int) -> None:
        last = self._last_emit_close_time()
        if last != -1 and last >= close_time:
            return
        upper = close_time - self.d - 1  # windows with end < close time
        if upper < 0:
            return
        lower = 0 if last == -1 else max(0, last - self.d)
        self._emit_range(record, close_time, lower, upper)


class SessionWindowAggregateProcessor(CacheForwarding, _WindowedAggregateBase):
    """``SessionWindows``: per-key sessions merged when a record falls within the gap."""

    def __init__(self, store_name: str, windows: Any, initializer: Initializer,
                 aggregator: Aggregator, merger: Merger, emit_on_close: bool = False) -> None:
        super().__init__(store_name, initializer, aggregator, emit_on_close)
        self.gap = windows.gap_ms
        self.grace = windows.grace_ms
        self.merger = merger

    def init(self, context: Any) -> None:
        super().init(context)
        # With the record cache, merges and updates wait in the session store's cache and
        # only each session's latest value (or its removal) is forwarded at a flush, as
        # Kafka's CachingSessionStore does.
        self._init_cache_forwarding(context, enable=not self.emit_on_close)

    def _flushed(self, key: Any, new: Any, old: Any, timestamp: int, context: Any) -> None:
        if new is None and old is None:
            return  # a session created and merged away within one flush: nothing to say
        self._forward_flushed(key, new, old, key.window.end, context)

    def process(self, record: Record[Any, Any]) -> None:
        key = record.key
        if key is None:
            self._drop("null key", record)
            return
        ts = record.timestamp
        self._observe(ts)
        close_time = self.observed - self.grace - self.gap
        if self.emit_on_close:
            self._maybe_emit_final(record, close_time)
        store = self.store
        merged = list(store.find_sessions(key, ts - self.gap, ts + self.gap))
        agg = self.initializer()
        start = end = ts
        for windowed, value in merged:
            agg = self.merger(key, agg, value)
            start = min(start, windowed.window.start)
            end = max(end, windowed.window.end)
        if end < close_time:
            self._drop(f"expired session [{start},{end}]", record)
        elif self._cache_active():
            context = self._cache_context(record)
            if (start, end) != (ts, ts):
                for windowed, _value in merged:
                    store.remove(windowed, ts, context)
            store.put(Windowed(key, Window(start, end)),
                      self.aggregator(key, record.value, agg), ts, context)
        else:
            forward = None if self.emit_on_close else self.context.forward
            if (start, end) != (ts, ts):
                for windowed, value in merged:
                    store.remove(windowed, ts)
                    if forward is not None:
                        forward(Record(windowed, Change(None, value), windowed.window.end,
                                       record.headers))
            agg = self.aggregator(key, record.value, agg)
            session = Windowed(key, Window(start, end))
            store.put(session, agg, ts)
            if forward is not None:
                forward(Record(session, Change(agg, None), end, record.headers))

    def _maybe_emit_final(self, record: Record[Any, Any], close_time: int) -> None:
        last = self._last_emit_close_time()
        if last != -1 and last >= close_time:
            return
        upper = close_time - 1  # sessions with end < close time are closed
        if upper < 0:
            return
        lower = max(0, last)
        if lower <= upper:
            forward = self.context.forward
            for windowed, value in list(self.store.find_sessions_by_end(lower, upper)):
                forward(Record(windowed, Change(value, None), windowed.window.end,
                               record.headers))
        self._emitted(close_time)
