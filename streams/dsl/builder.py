"""``StreamsBuilder``: the entry point of the DSL.

DSL calls add nodes to a ``Topology`` as they are made. Generated names follow Kafka's
``<PREFIX>-<10-digit counter>`` scheme with one counter per builder, so ``describe()`` output
lines up with Kafka Streams' for the same program.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..processor.aggregate import TableSourceProcessor
from ..serde import Serde, resolve_serde
from ..state.stores import StoreBuilder
from ..topology.topology import TimestampExtractor, Topology
from .materialized import Materialized

if TYPE_CHECKING:
    from .kstream import KStream
    from .ktable import GlobalKTable, KTable


class StreamsBuilder:
    def __init__(self) -> None:
        self.topology = Topology()
        self._index = 0
        # for topology.optimization (optimize.py): repartitions the DSL added, key-changing
        # nodes, and the nodes a repartition may move behind (filters, peeks)
        self.repartitions: list[Any] = []
        self.key_changing: set[str] = set()
        self.transparent: set[str] = set()
        self.source_tables: list[tuple[str, str]] = []  # (store, input topic) of table()
        self.optimized: set[str] = set()  # the rewrites applied
        # per join of a stream with itself: (flag set when optimized, its left join
        # processor, that side's window store) - optimize.py
        self.self_joins: list[tuple[list[bool], str, str]] = []

    # -- naming -------------------------------------------------------------------------------

    def next_index(self) -> int:
        index = self._index
        self._index += 1
        return index

    def new_name(self, prefix: str) -> str:
        return f"{prefix}-{self.next_index():010d}"

    def new_store_name(self, prefix: str) -> str:
        return f"{prefix}STATE-STORE-{self.next_index():010d}"

    # -- sources ------------------------------------------------------------------------------

    def stream(self, topic_or_topics: str | list[str], *, key_serde: Serde[Any] | None = None,
               value_serde: Serde[Any] | None = None,
               timestamp_extractor: TimestampExtractor | None = None) -> KStream:
        from .kstream import KStream

        name = self.new_name("KSTREAM-SOURCE")
        self.topology.add_source(name, topic_or_topics, key_serde=key_serde,
                                 value_serde=value_serde,
                                 timestamp_extractor=timestamp_extractor)
        return KStream(self, name, key_serde, value_serde)

    def table(self, topic: str, *, key_serde: Serde[Any] | None = None,
              value_serde: Serde[Any] | None = None,
              materialized: Materialized | str | None = None) -> KTable:
        from .ktable import KTable

        mat = _consumed_serdes(Materialized.of(materialized), key_serde, value_serde)
        store_name = mat.name or self.new_store_name(f"{topic}-")
        source = self.new_name("KSTREAM-SOURCE")
        table_source = self.new_name("KTABLE-SOURCE")
        key_serde, value_serde = mat.key_serde, mat.value_serde
        self.topology.add_source(source, topic, key_serde=key_serde, value_serde=value_serde)
        from .versioned import table_source_supplier  # KIP-914: a versioned source table

        table: KTable | None = None

        def queryable() -> bool:  # Kafka's queryableName: named, or materialized since
            return table is not None and (table.offers_old_values or table.send_old_values)

        self.topology.add_processor(
            table_source, table_source_supplier(store_name, mat.versioned)
            or (lambda: TableSourceProcessor(store_name, queryable)), source)
        self.topology.add_state_store(
            self.store_builder(store_name, mat, key_serde, value_serde, versioned_ok=True),
            table_source)
        self.source_tables.append((store_name, topic))
        table = KTable(self, table_source, store_name, key_serde, value_serde)
        table.offers_old_values = mat.name is not None  # Kafka materializes only named sources
        return table

    def global_table(self, topic: str, *, key_serde: Serde[Any] | None = None,
                     value_serde: Serde[Any] | None = None,
                     materialized: Materialized | str | None = None) -> GlobalKTable:
        from .ktable import GlobalKTable

        mat = _consumed_serdes(Materialized.of(materialized), key_serde, value_serde)
        store_name = mat.name or self.new_store_name(f"{topic}-")
        source = self.new_name("KSTREAM-SOURCE")
        processor = self.new_name("KTABLE-SOURCE")
        key_serde, value_serde = mat.key_serde, mat.value_serde
        self.topology.add_global_store(
            self.store_builder(store_name, mat, key_serde, value_serde), source, topic,
            processor, lambda: TableSourceProcessor(store_name),
            key_serde=key_serde, value_serde=value_serde,
        )
        return GlobalKTable(self, store_name, key_serde, value_serde)

    def add_state_store(self, store_builder: StoreBuilder) -> StreamsBuilder:
        self.topology.add_state_store(store_builder)
        return self

    def build(self, config: Mapping[str, Any] | Any | None = None) -> Topology:
        """The topology, with each join's repartition topics writing their co-partners' key
        bytes (topology/copartition.py).

        Like Kafka's ``StreamsBuilder.build(Properties)``, ``config`` (a mapping or a
        ``StreamsConfig``) is optional: given, a join whose key serde is still unknown fails
        here unless it sets ``default.key.serde``; without it that check happens when
        ``KafkaStreams`` or the ``TopologyTestDriver`` gets the topology and its config.
        ``topology.optimization`` in ``config`` is applied here, and only here, as in Kafka
        (optimize.py).
        """
        if config is None:
            self.topology.align_key_serdes()
        else:
            from .optimize import optimize  # topology.optimization (Kafka: build(props) only)
            optimize(self, config)
            self.topology.check_key_serdes(default_key_serde(config))
        return self.topology

    # -- helpers for DSL classes --------------------------------------------------------------

    @staticmethod
    def store_builder(name: str, mat: Materialized, key_serde: Serde[Any] | None,
                      value_serde: Serde[Any] | None, kind: str = "kv", *,
                      versioned_ok: bool = False, **extra: Any) -> StoreBuilder:
        """``versioned_ok``: the caller honours a versioned ``Materialized`` (KIP-889: source
        tables and ``to_table``); elsewhere one is refused rather than ignored."""
        if mat.versioned:
            if not versioned_ok or kind != "kv":
                raise ValueError(
                    f"store {name!r}: a versioned store materializes only a source table "
                    "(StreamsBuilder.table) or KStream.to_table here")
            from ..state.versioned import changelog_config

            assert mat.supplier is not None
            history = mat.supplier.retention_ms or 0
            return StoreBuilder(name, "versioned", mat.key_serde or key_serde,
                                mat.value_serde or value_serde, mat.store_type,
                                logging=mat.logging, retention_ms=history,
                                changelog_config=changelog_config(history))
        return StoreBuilder(name, kind, mat.key_serde or key_serde,
                            mat.value_serde or value_serde, mat.store_type,
                            logging=mat.logging, **extra)


def _consumed_serdes(mat: Materialized, key_serde: Serde[Any] | None,
                     value_serde: Serde[Any] | None) -> Materialized:
    """A source table's Materialized with the serdes it reads its topic with: the ones given
    beside it (Kafka's Consumed, which always wins over the Materialized's in
    ``StreamsBuilder.table(topic, consumed, materialized)``), else its own."""
    if key_serde is None and value_serde is None:
        return mat
    mat = copy.copy(mat)  # the caller's Materialized stays as it was
    mat.key_serde = key_serde or mat.key_serde
    mat.value_serde = value_serde or mat.value_serde
    return mat


def default_key_serde(config: Mapping[str, Any] | Any) -> Serde[Any] | None:
    """``default.key.serde`` of a mapping (dotted or snake_case key) or a ``StreamsConfig``."""
    if not isinstance(config, Mapping):
        return resolve_serde(getattr(config, "default_key_serde", None))
    return resolve_serde(config.get("default.key.serde") or config.get("default_key_serde"))
