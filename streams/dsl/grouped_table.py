"""``KGroupedTable``: a re-keyed table aggregated with adder and subtractor.

``KTable.group_by`` always repartitions: the re-keying node writes each update's subtract and
add to ``<store>-repartition`` as a ``Change`` (see ``ChangeSerde``), and the aggregate reads
it back in the next sub-topology. Names follow Kafka's KGroupedTableImpl: store first, then
``KSTREAM-SINK``, ``KSTREAM-SOURCE`` and ``KTABLE-AGGREGATE`` / ``KTABLE-REDUCE``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.table import ChangeSerde, TableAggregateProcessor
from ..serde import InternalSerde, Serde, Serdes
from .arity import check
from .materialized import Materialized

if TYPE_CHECKING:
    from .builder import StreamsBuilder
    from .ktable import KTable


class KGroupedTable:
    def __init__(self, builder: StreamsBuilder, node: str, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None) -> None:
        self.builder = builder
        self.node = node  # the re-keying (KTABLE-SELECT) processor
        self.key_serde = key_serde
        self.value_serde = value_serde

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   adder: Callable[[Any, Any, Any], Any],
                   subtractor: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | str | None,
                   default_value_serde: Serde[Any] | None) -> KTable:
        from .ktable import KTable

        builder = self.builder
        topology = builder.topology
        mat = Materialized.of(materialized)
        store_name = mat.name or builder.new_store_name(f"{prefix}-")
        sink_name = builder.new_name("KSTREAM-SINK")
        source_name = builder.new_name("KSTREAM-SOURCE")
        name = builder.new_name(prefix)
        topic = f"{store_name}-repartition"
        change_serde = ChangeSerde(self.value_serde or InternalSerde())
        topology.add_internal_topic(topic, "repartition", None,
                                    {"cleanup.policy": "delete", "retention.ms": "-1",
                                     "segment.bytes": "52428800"})
        topology.add_sink(sink_name, topic, self.node, key_serde=self.key_serde,
                          value_serde=change_serde)
        topology.add_source(source_name, topic, key_serde=self.key_serde,
                            value_serde=change_serde)
        topology.add_processor(
            name, lambda: TableAggregateProcessor(store_name, initializer, adder, subtractor),
            source_name)
        key_serde = mat.key_serde or self.key_serde
        value_serde = mat.value_serde or default_value_serde
        topology.add_state_store(builder.store_builder(store_name, mat, key_serde, value_serde),
                                 name)
        return KTable(builder, name, store_name, key_serde, value_serde)

    def count(self, materialized: Materialized | str | None = None) -> KTable:
        """Count per new key; a key whose count falls to 0 stays at 0 (it is not deleted)."""
        return self._aggregate("KTABLE-AGGREGATE", lambda: 0,
                               lambda key, value, agg: agg + 1,
                               lambda key, value, agg: agg - 1, materialized, Serdes.long())

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any],
               materialized: Materialized | str | None = None) -> KTable:
        """``adder(agg, value)`` / ``subtractor(agg, value)``; the first value is the aggregate."""
        check(adder, "KGroupedTable.reduce", "adder(aggregate, value)")
        check(subtractor, "KGroupedTable.reduce", "subtractor(aggregate, value)")
        return self._aggregate("KTABLE-REDUCE", None,
                               lambda key, value, agg: adder(agg, value),
                               lambda key, value, agg: subtractor(agg, value), materialized,
                               self.value_serde)

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | str | None = None) -> KTable:
        """``adder(key, value, agg)`` / ``subtractor(key, value, agg)``; None deletes the key."""
        check(initializer, "KGroupedTable.aggregate", "initializer()")
        check(adder, "KGroupedTable.aggregate", "adder(key, value, aggregate)")
        check(subtractor, "KGroupedTable.aggregate", "subtractor(key, value, aggregate)")
        return self._aggregate("KTABLE-AGGREGATE", initializer, adder, subtractor, materialized,
                               None)
