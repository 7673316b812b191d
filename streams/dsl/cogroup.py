"""``CogroupedKStream``: several grouped streams feeding one shared aggregate.

Like Kafka's CogroupedStreamAggregateBuilder, every input gets its own aggregate processor
(``COGROUPKSTREAM-AGGREGATE-…``) with its own aggregator, all on the one store, and their
outputs meet in a pass-through ``COGROUPKSTREAM-MERGE-…`` node that is the result table.
Inputs whose keys were changed are repartitioned first; no other repartitioning happens.
Windowed cogroups reuse the windowed-aggregation processors (streams/processor/windowed.py)
the same way: one per input, one shared window or session store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.aggregate import StreamAggregateProcessor
from ..processor.stateless import PassThroughProcessor
from ..serde import Serde
from ..state.stores import StoreBuilder
from ..windowing import SessionWindowedSerde, TimeWindowedSerde
from .arity import check
from .joins import copartition
from .materialized import Materialized
from .windows import SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from .builder import StreamsBuilder
    from .grouped import KGroupedStream
    from .kstream import KStream
    from .ktable import KTable

Aggregator = Callable[[Any, Any, Any], Any]


class CogroupedKStream:
    def __init__(self, builder: StreamsBuilder) -> None:
        self.builder = builder
        self.inputs: list[tuple[KGroupedStream, Aggregator]] = []

    def cogroup(self, grouped: KGroupedStream, aggregator: Aggregator) -> CogroupedKStream:
        """Add ``grouped`` with its own ``aggregator(key, value, agg)``."""
        check(aggregator, "CogroupedKStream.cogroup", "aggregator(key, value, aggregate)")
        if any(existing is grouped for existing, _ in self.inputs):
            raise ValueError("this grouped stream is already part of the cogroup")
        self.inputs.append((grouped, aggregator))
        return self

    def sources(self, store_name: str) -> list[tuple[KStream, Aggregator]]:
        """Each input's stream to aggregate, repartitioned by key when its keys changed."""
        result = []
        repartitioned = 0
        for grouped, aggregator in self.inputs:
            stream = grouped.stream
            if stream.repartition_required:
                base = store_name if repartitioned == 0 else f"{store_name}-{repartitioned}"
                repartitioned += 1
                stream = stream.repartition_for(base, grouped.key_serde, grouped.value_serde,
                                                optimizable=False)
            result.append((stream, aggregator))
        return result

    def aggregate(self, initializer: Callable[[], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        """Non-windowed: one key-value store shared by every input's aggregator."""
        check(initializer, "CogroupedKStream.aggregate", "initializer()")
        builder = self.builder

        def make_store(name: str, mat: Materialized, key_serde: Serde[Any] | None,
                       value_serde: Serde[Any] | None) -> StoreBuilder:
            return builder.store_builder(name, mat, key_serde, value_serde)

        return self.build(materialized, make_store,
                          lambda store, aggregator: lambda: StreamAggregateProcessor(
                              store, initializer, aggregator), None, None)

    def windowed_by(self, windows: Any) -> TimeWindowedCogroupedKStream | \
            SessionWindowedCogroupedKStream:
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedCogroupedKStream(self, windows)
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        raise TypeError("windowed_by takes TimeWindows, SlidingWindows or SessionWindows, "
                        f"got {windows!r}")

    def build(self, materialized: Materialized | str | None,
              make_store: Callable[..., StoreBuilder],
              make_processor: Callable[[str, Aggregator], Callable[[], Any]],
              table_key_serde: Callable[[Serde[Any]], Serde[Any]] | None,
              close_delay: int | None) -> KTable:
        """One aggregate processor per input on a shared store, merged into one table."""
        from .ktable import KTable

        builder = self.builder
        topology = builder.topology
        mat = Materialized.of(materialized)
        store_name = mat.name or builder.new_store_name("COGROUPKSTREAM-AGGREGATE-")
        key_serde = mat.key_serde or self.inputs[0][0].key_serde
        value_serde = mat.value_serde
        aggregators = []
        sources = self.sources(store_name)
        for stream, aggregator in sources:
            name = builder.new_name("COGROUPKSTREAM-AGGREGATE")
            topology.add_processor(name, make_processor(store_name, aggregator), stream.node)
            aggregators.append(name)
        topology.add_state_store(make_store(store_name, mat, key_serde, value_serde),
                                 *aggregators)
        if close_delay is not None:  # lets suppress(until_window_closes) find the grace
            from .windowed import _CLOSE_DELAYS

            delays = _CLOSE_DELAYS.setdefault(topology, {})
            for name in aggregators:
                delays[name] = close_delay
        merge = builder.new_name("COGROUPKSTREAM-MERGE")
        topology.add_processor(merge, PassThroughProcessor, *aggregators)
        # Kafka's CogroupedStreamAggregateBuilder: the inputs share one store per task, so
        # their topics are co-partitioned (same partition counts and key bytes).
        copartition(topology, *(stream.node for stream, _ in sources), operator=merge)
        table_serde = key_serde
        if table_key_serde is not None:
            table_serde = None if key_serde is None else table_key_serde(key_serde)
        return KTable(builder, merge, store_name, table_serde, value_serde)


class TimeWindowedCogroupedKStream:
    """A cogroup windowed by ``TimeWindows`` or ``SlidingWindows``; results keyed by Windowed."""

    def __init__(self, cogrouped: CogroupedKStream, windows: TimeWindows | SlidingWindows
                 ) -> None:
        self.cogrouped = cogrouped
        self.windows = windows

    def aggregate(self, initializer: Callable[[], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        from ..processor.windowed import (
            SlidingWindowAggregateProcessor,
            TimeWindowAggregateProcessor,
        )
        from .windowed import TimeWindowedKStream

        windows = self.windows
        sliding = isinstance(windows, SlidingWindows)
        processor_cls: Any = SlidingWindowAggregateProcessor if sliding \
            else TimeWindowAggregateProcessor
        size = windows.time_difference_ms if sliding else windows.size_ms  # type: ignore[union-attr]
        stores = TimeWindowedKStream(self.cogrouped.inputs[0][0], windows)
        return self.cogrouped.build(
            materialized, stores._store,
            lambda store, aggregator: lambda: processor_cls(store, windows, initializer,
                                                            aggregator, False),
            lambda inner: TimeWindowedSerde(inner, size), windows.grace_ms)


class SessionWindowedCogroupedKStream:
    """A cogroup windowed by ``SessionWindows``; ``merger(key, agg1, agg2)`` joins sessions."""

    def __init__(self, cogrouped: CogroupedKStream, windows: SessionWindows) -> None:
        self.cogrouped = cogrouped
        self.windows = windows

    def aggregate(self, initializer: Callable[[], Any], merger: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        from ..processor.windowed import SessionWindowAggregateProcessor
        from .windowed import SessionWindowedKStream

        windows = self.windows
        stores = SessionWindowedKStream(self.cogrouped.inputs[0][0], windows)
        return self.cogrouped.build(
            materialized, stores._store,
            lambda store, aggregator: lambda: SessionWindowAggregateProcessor(
                store, windows, initializer, aggregator, merger, False),
            SessionWindowedSerde, windows.gap_ms + windows.grace_ms)
