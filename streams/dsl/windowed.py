"""``KGroupedStream.windowed_by``: ``TimeWindowedKStream`` and ``SessionWindowedKStream``.

Both offer count / reduce / aggregate (session ``aggregate`` also takes a merger) and
``emit_strategy``; the result is a ``KTable`` keyed by ``Windowed(key, Window(start, end))``
backed by a window store (time and sliding windows) or a session store.

``window_close_delay(topology, node)`` tells ``suppress`` how long after a window's end it
closes (grace; gap + grace for sessions), found by walking up from a table node to the
windowed aggregation that produced it, as Kafka's ``GraphGraceSearchUtil`` does.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.windowed import (
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
)
from ..serde import Serde, Serdes
from ..topology.topology import ProcessorDef, Topology
from ..windowing import SessionWindowedSerde, TimeWindowedSerde
from .arity import check
from .grouped import burn_count_name
from .materialized import Materialized
from .windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from .grouped import KGroupedStream
    from .ktable import KTable

_AGGREGATE = "KSTREAM-AGGREGATE"
_REDUCE = "KSTREAM-REDUCE"

# topology -> {aggregation node: ms after a window's end at which it closes}
_CLOSE_DELAYS: weakref.WeakKeyDictionary[Topology, dict[str, int]] = \
    weakref.WeakKeyDictionary()


def windowed_by(grouped: KGroupedStream, windows: Any) -> Any:
    if isinstance(windows, TimeWindows | SlidingWindows):
        return TimeWindowedKStream(grouped, windows)
    if isinstance(windows, SessionWindows):
        return SessionWindowedKStream(grouped, windows)
    raise TypeError("windowed_by takes TimeWindows, SlidingWindows or SessionWindows, "
                    f"got {windows!r}")


def window_close_delay(topology: Topology, node: str) -> int:
    """Grace (sessions: gap + grace) of the windowed aggregation upstream of ``node``.

    With several upstream aggregations (a join of windowed tables) the smallest applies.
    """
    delays = _CLOSE_DELAYS.get(topology, {})
    found: list[int] = []
    pending, seen = [node], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in delays:
            found.append(delays[name])
            continue
        defn = topology.nodes.get(name)
        if not isinstance(defn, ProcessorDef):
            raise ValueError(
                "Suppressed.until_window_closes works only on a windowed KTable (the result of "
                f"a windowed aggregation), but {node!r} reads from {name!r}, which is not "
                "downstream of one")
        pending.extend(defn.parents)
    if not found:
        raise ValueError(f"{node!r} is not downstream of a windowed aggregation")
    return min(found)


def _reduce_aggregator(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """Kafka's reduce-as-aggregate: the first value becomes the aggregate."""
    def aggregate(key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else reducer(agg, value)
    return aggregate


class _WindowedKStream:
    def __init__(self, grouped: KGroupedStream, windows: Any) -> None:
        self.grouped = grouped
        self.builder = grouped.builder
        self.windows = windows
        self.strategy = EmitStrategy.ON_WINDOW_UPDATE

    def emit_strategy(self, strategy: EmitStrategy) -> Any:
        if not isinstance(strategy, EmitStrategy):
            raise TypeError("emit_strategy takes EmitStrategy.on_window_update() or "
                            f"EmitStrategy.on_window_close(), got {strategy!r}")
        self.strategy = strategy
        return self

    @property
    def _emit_on_close(self) -> bool:
        return self.strategy is EmitStrategy.ON_WINDOW_CLOSE

    def _build(self, prefix: str, materialized: Materialized | str | None,
               value_serde: Serde[Any] | None, make_store: Callable[..., Any],
               make_processor: Callable[[str], Callable[[], Any]], table_key_serde: Any,
               close_delay: int) -> KTable:
        from .ktable import KTable

        mat = Materialized.of(materialized)
        store_name = mat.name or self.builder.new_store_name(f"{prefix}-")
        name = self.builder.new_name(prefix)
        source = self.grouped._source_for(store_name)
        key_serde = mat.key_serde or self.grouped.key_serde
        value_serde = mat.value_serde or value_serde
        topology = self.builder.topology
        topology.add_processor(name, make_processor(store_name), source.node)
        topology.add_state_store(make_store(store_name, mat, key_serde, value_serde), name)
        _CLOSE_DELAYS.setdefault(topology, {})[name] = close_delay
        table_serde = None if key_serde is None else table_key_serde(key_serde)
        return KTable(self.builder, name, store_name, table_serde, value_serde)


class TimeWindowedKStream(_WindowedKStream):
    """A grouped stream windowed by ``TimeWindows`` or ``SlidingWindows``."""

    def _store(self, store_name: str, mat: Materialized, key_serde: Serde[Any] | None,
               value_serde: Serde[Any] | None) -> Any:
        windows = self.windows
        grace = windows.grace_ms
        if isinstance(windows, SlidingWindows):
            size = windows.time_difference_ms
            minimum = 2 * size + grace
            if mat.retention_ms is not None and mat.retention_ms < minimum:
                raise ValueError(
                    f"The retention period of the window store {store_name} must be no smaller "
                    f"than 2 * time difference plus the grace period. Got time difference="
                    f"[{size}], grace=[{grace}], retention=[{mat.retention_ms}]")
        else:
            size = windows.size_ms
            minimum = size + grace
            if mat.retention_ms is not None and mat.retention_ms < minimum:
                raise ValueError(
                    f"The retention period of the window store {store_name} must be no smaller "
                    f"than its window size plus the grace period. Got size=[{size}], "
                    f"grace=[{grace}], retention=[{mat.retention_ms}]")
        retention = minimum if mat.retention_ms is None else mat.retention_ms
        return self.builder.store_builder(store_name, mat, key_serde, value_serde, "window",
                                          retention_ms=retention, window_size_ms=size)

    def _aggregate(self, prefix: str, initializer: Callable[[], Any],
                   aggregator: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | str | None,
                   value_serde: Serde[Any] | None) -> KTable:
        windows, on_close = self.windows, self._emit_on_close
        processor_cls: Any = (SlidingWindowAggregateProcessor
                              if isinstance(windows, SlidingWindows)
                              else TimeWindowAggregateProcessor)
        size = (windows.time_difference_ms if isinstance(windows, SlidingWindows)
                else windows.size_ms)

        def make_processor(store_name: str) -> Callable[[], Any]:
            return lambda: processor_cls(store_name, windows, initializer, aggregator, on_close)

        return self._build(prefix, materialized, value_serde, self._store,
                           make_processor, lambda inner: TimeWindowedSerde(inner, size),
                           windows.grace_ms)

    def count(self, materialized: Materialized | str | None = None) -> KTable:
        if not isinstance(self.windows, SlidingWindows):  # Kafka's sliding count burns none
            burn_count_name(self.builder, materialized)
        return self._aggregate(_AGGREGATE, lambda: 0, lambda key, value, agg: agg + 1,
                               materialized, Serdes.long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | str | None = None) -> KTable:
        check(reducer, "TimeWindowedKStream.reduce", "reducer(aggregate, value)")
        return self._aggregate(_REDUCE, lambda: None, _reduce_aggregator(reducer), materialized,
                               self.grouped.value_serde)

    def aggregate(self, initializer: Callable[[], Any],
                  aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        check(initializer, "TimeWindowedKStream.aggregate", "initializer()")
        check(aggregator, "TimeWindowedKStream.aggregate", "aggregator(key, value, aggregate)")
        return self._aggregate(_AGGREGATE, initializer, aggregator, materialized, None)


class SessionWindowedKStream(_WindowedKStream):
    """A grouped stream windowed by ``SessionWindows``."""

    def _store(self, store_name: str, mat: Materialized, key_serde: Serde[Any] | None,
               value_serde: Serde[Any] | None) -> Any:
        gap, grace = self.windows.gap_ms, self.windows.grace_ms
        if mat.retention_ms is not None and mat.retention_ms < gap + grace:
            raise ValueError(
                f"The retention period of the session store {store_name} must be no smaller "
                f"than the session inactivity gap plus the grace period. Got gap=[{gap}], "
                f"grace=[{grace}], retention=[{mat.retention_ms}]")
        retention = gap + grace if mat.retention_ms is None else mat.retention_ms
        return self.builder.store_builder(store_name, mat, key_serde, value_serde, "session",
                                          retention_ms=retention)

    def _aggregate(self, prefix: str, initializer: Callable[[], Any],
                   aggregator: Callable[[Any, Any, Any], Any],
                   merger: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | str | None,
                   value_serde: Serde[Any] | None) -> KTable:
        windows, on_close = self.windows, self._emit_on_close

        def make_processor(store_name: str) -> Callable[[], Any]:
            return lambda: SessionWindowAggregateProcessor(store_name, windows, initializer,
                                                           aggregator, merger, on_close)

        return self._build(prefix, materialized, value_serde, self._store,
                           make_processor, SessionWindowedSerde,
                           windows.gap_ms + windows.grace_ms)

    def count(self, materialized: Materialized | str | None = None) -> KTable:
        burn_count_name(self.builder, materialized)
        return self._aggregate(_AGGREGATE, lambda: 0, lambda key, value, agg: agg + 1,
                               lambda key, a, b: a + b, materialized, Serdes.long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | str | None = None) -> KTable:
        check(reducer, "SessionWindowedKStream.reduce", "reducer(aggregate, value)")
        aggregator = _reduce_aggregator(reducer)
        return self._aggregate(_REDUCE, lambda: None, aggregator,
                               lambda key, a, b: aggregator(key, b, a), materialized,
                               self.grouped.value_serde)

    def aggregate(self, initializer: Callable[[], Any],
                  aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        check(initializer, "SessionWindowedKStream.aggregate", "initializer()")
        check(aggregator, "SessionWindowedKStream.aggregate", "aggregator(key, value, aggregate)")
        check(merger, "SessionWindowedKStream.aggregate", "merger(key, aggregate1, aggregate2)")
        return self._aggregate(_AGGREGATE, initializer, aggregator, merger, materialized, None)
