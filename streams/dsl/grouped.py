"""``KGroupedStream``: count, reduce and aggregate per key (windowed variants in windowed.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.aggregate import StreamAggregateProcessor
from ..serde import Serde, Serdes
from .arity import check
from .materialized import Materialized

if TYPE_CHECKING:
    from .kstream import KStream
    from .ktable import KTable


class KGroupedStream:
    def __init__(self, stream: KStream, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None) -> None:
        self.stream = stream
        self.builder = stream.builder
        self.key_serde = key_serde
        self.value_serde = value_serde

    def _source_for(self, store_name: str) -> KStream:
        """The stream to aggregate: repartitioned by key first when keys were changed."""
        if self.stream.repartition_required:
            return self.stream.repartition_for(store_name, self.key_serde, self.value_serde)
        return self.stream

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | str | None,
                   default_value_serde: Serde[Any] | None) -> KTable:
        from .ktable import KTable

        mat = Materialized.of(materialized)
        store_name = mat.name or self.builder.new_store_name(f"{prefix}-")
        name = self.builder.new_name(prefix)
        source = self._source_for(store_name)
        key_serde = mat.key_serde or self.key_serde
        value_serde = mat.value_serde or default_value_serde
        topology = self.builder.topology
        topology.add_processor(
            name, lambda: StreamAggregateProcessor(store_name, initializer, aggregator),
            source.node)
        topology.add_state_store(
            self.builder.store_builder(store_name, mat, key_serde, value_serde), name)
        return KTable(self.builder, name, store_name, key_serde, value_serde)

    def count(self, materialized: Materialized | str | None = None) -> KTable:
        burn_count_name(self.builder, materialized)
        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0,
                               lambda key, value, agg: agg + 1, materialized, Serdes.long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | str | None = None) -> KTable:
        check(reducer, "KGroupedStream.reduce", "reducer(aggregate, value)")
        return self._aggregate("KSTREAM-REDUCE", None,
                               lambda key, value, agg: reducer(agg, value), materialized,
                               self.value_serde)

    def aggregate(self, initializer: Callable[[], Any],
                  aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        check(initializer, "KGroupedStream.aggregate", "initializer()")
        check(aggregator, "KGroupedStream.aggregate", "aggregator(key, value, aggregate)")
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, materialized, None)

    def windowed_by(self, windows: Any) -> Any:
        from .windowed import windowed_by

        return windowed_by(self, windows)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> Any:
        check(aggregator, "KGroupedStream.cogroup", "aggregator(key, value, aggregate)")
        from .cogroup import CogroupedKStream

        return CogroupedKStream(self.builder).cogroup(self, aggregator)


def burn_count_name(builder: Any, materialized: Materialized | str | None) -> None:
    """``count(Materialized)`` without a store name spends one counter value more than
    ``count()``: Kafka's KGroupedStreamImpl, TimeWindowedKStreamImpl and
    SessionWindowedKStreamImpl keep a name they "used to burn" there for compatibility, so
    the store (and its changelog topic) gets the next value (checked on Kafka 4.4)."""
    if materialized is not None and Materialized.of(materialized).name is None:
        builder.new_store_name("KSTREAM-AGGREGATE-")
