"""``KStream``: a record stream and its operators.

Key-changing operators (``map``, ``flat_map``, ``select_key``, ``process``) only *mark* the
stream; the operators that need co-located keys (``group_by_key``, ``to_table``, joins) insert a
repartition topic when the mark is set (reference §1.0).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.api import ProcessorSupplier
from ..processor.keyed import FlatMapValuesWithKeyProcessor, MapValuesWithKeyProcessor
from ..processor.stateless import (
    BranchProcessor,
    DropNullKeyProcessor,
    FilterProcessor,
    FlatMapProcessor,
    FlatMapValuesProcessor,
    MapProcessor,
    MapValuesProcessor,
    PassThroughProcessor,
    PeekProcessor,
    SelectKeyProcessor,
)
from ..serde import InternalSerde, Serde
from ..topology.topology import StreamPartitioner, TopicNameExtractor
from .arity import check, takes_key
from .branched import Branched
from .materialized import Materialized

if TYPE_CHECKING:
    from .builder import StreamsBuilder
    from .grouped import KGroupedStream
    from .ktable import KTable


class KStream:
    def __init__(self, builder: StreamsBuilder, node: str, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None, repartition_required: bool = False) -> None:
        self.builder = builder
        self.node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.repartition_required = repartition_required
        # the repartition this stream's joins read (Kafka's KStreamImpl.repartitionNode)
        self._join_repartition: KStream | None = None

    # -- plumbing -----------------------------------------------------------------------------

    def _add(self, prefix: str, supplier: ProcessorSupplier, *, key_changed: bool = False,
             keep_value_serde: bool = True) -> KStream:
        name = self.builder.new_name(prefix)
        self.builder.topology.add_processor(name, supplier, self.node)
        if key_changed:  # what topology.optimization may merge repartitions after (optimize.py)
            self.builder.key_changing.add(name)
        elif prefix in ("KSTREAM-FILTER", "KSTREAM-PEEK"):
            self.builder.transparent.add(name)
        return KStream(
            self.builder, name,
            None if key_changed else self.key_serde,
            self.value_serde if keep_value_serde else None,
            self.repartition_required or key_changed,
        )

    def repartition_for(self, base: str, key_serde: Serde[Any] | None = None,
                        value_serde: Serde[Any] | None = None,
                        partitions: int | None = None, optimizable: bool = True,
                        keep_null_keys: bool = False) -> KStream:
        """Route through ``<application.id>-<base>-repartition`` (filter, sink, source);
        ``optimizable``: topology.optimization may merge it with others (optimize.py).
        ``keep_null_keys``: a join's repartition passes null keys on (KIP-962: a left or outer
        join keeps them), others drop them, as Kafka's do."""
        builder = self.builder
        topology = builder.topology
        topic = base if base.endswith("-repartition") else f"{base}-repartition"
        key_serde = key_serde or self.key_serde
        value_serde = value_serde or self.value_serde
        # Kafka always spends three counter values (sink, filter, source) but uses the
        # generated names only when the base is itself generated (e.g. a generated store name).
        generated = (builder.new_name("KSTREAM-SINK"), builder.new_name("KSTREAM-FILTER"),
                     builder.new_name("KSTREAM-SOURCE"))
        if re.fullmatch(r"KSTREAM.*-[0-9]{10}", base):
            sink_name, filter_name, source_name = generated
        else:
            filter_name, sink_name, source_name = (f"{topic}-filter", f"{topic}-sink",
                                                   f"{topic}-source")
        topology.add_internal_topic(topic, "repartition", partitions,
                                    {"cleanup.policy": "delete", "retention.ms": "-1",
                                     "segment.bytes": "52428800"})
        topology.add_processor(filter_name,
                               PassThroughProcessor if keep_null_keys else DropNullKeyProcessor,
                               self.node)
        topology.add_sink(sink_name, topic, filter_name, key_serde=key_serde,
                          value_serde=value_serde)
        topology.add_source(source_name, topic, key_serde=key_serde, value_serde=value_serde)
        if optimizable:
            from .optimize import RepartitionRecord
            builder.repartitions.append(RepartitionRecord(
                topic, self.node, filter_name, sink_name, source_name, key_serde, value_serde,
                partitions, keep_null_keys))
        return KStream(builder, source_name, key_serde, value_serde, False)

    def repartition_for_join(self, base: str, key_serde: Serde[Any] | None = None,
                             value_serde: Serde[Any] | None = None) -> KStream:
        """The repartition a join reads. As Kafka's ``KStreamImpl.repartitionForJoin``, the
        first unnamed join of this stream makes it and later unnamed joins of the same stream
        (a second join, the other side of a self-join) read it again; each still spends the
        three counter values a repartition spends, so later generated names match Kafka's."""
        cached = self._join_repartition
        if cached is not None and base == self.node:
            for prefix in ("KSTREAM-SINK", "KSTREAM-FILTER", "KSTREAM-SOURCE"):
                self.builder.new_name(prefix)
            return KStream(self.builder, cached.node, key_serde or self.key_serde,
                           value_serde or self.value_serde, False)
        stream = self.repartition_for(base, key_serde, value_serde, keep_null_keys=True)
        self._join_repartition = stream
        return stream

    # -- stateless ----------------------------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool]) -> KStream:
        check(predicate, "KStream.filter", "predicate(key, value)")
        return self._add("KSTREAM-FILTER", lambda: FilterProcessor(predicate))

    def filter_not(self, predicate: Callable[[Any, Any], bool]) -> KStream:
        check(predicate, "KStream.filter_not", "predicate(key, value)")
        return self._add("KSTREAM-FILTER", lambda: FilterProcessor(predicate, negate=True))

    def map(self, fn: Callable[[Any, Any], tuple[Any, Any]]) -> KStream:
        check(fn, "KStream.map", "mapper(key, value)")
        return self._add("KSTREAM-MAP", lambda: MapProcessor(fn), key_changed=True,
                         keep_value_serde=False)

    def map_values(self, fn: Callable[..., Any]) -> KStream:
        """``fn(value)``, or ``fn(key, value)`` (Kafka's ValueMapperWithKey), by arity."""
        if takes_key(fn, "KStream.map_values", "mapper(value)", "mapper(key, value)"):
            return self._add("KSTREAM-MAPVALUES", lambda: MapValuesWithKeyProcessor(fn),
                             keep_value_serde=False)
        return self._add("KSTREAM-MAPVALUES", lambda: MapValuesProcessor(fn),
                         keep_value_serde=False)

    def flat_map(self, fn: Callable[[Any, Any], Any]) -> KStream:
        check(fn, "KStream.flat_map", "mapper(key, value)")
        return self._add("KSTREAM-FLATMAP", lambda: FlatMapProcessor(fn), key_changed=True,
                         keep_value_serde=False)

    def flat_map_values(self, fn: Callable[..., Any]) -> KStream:
        """``fn(value)`` or ``fn(key, value)`` returning an iterable of values, by arity."""
        if takes_key(fn, "KStream.flat_map_values", "mapper(value)", "mapper(key, value)"):
            return self._add("KSTREAM-FLATMAPVALUES",
                             lambda: FlatMapValuesWithKeyProcessor(fn), keep_value_serde=False)
        return self._add("KSTREAM-FLATMAPVALUES", lambda: FlatMapValuesProcessor(fn),
                         keep_value_serde=False)

    def select_key(self, fn: Callable[[Any, Any], Any]) -> KStream:
        check(fn, "KStream.select_key", "mapper(key, value)")
        return self._add("KSTREAM-KEY-SELECT", lambda: SelectKeyProcessor(fn), key_changed=True)

    def peek(self, fn: Callable[[Any, Any], Any]) -> KStream:
        check(fn, "KStream.peek", "action(key, value)")
        return self._add("KSTREAM-PEEK", lambda: PeekProcessor(fn))

    def foreach(self, fn: Callable[[Any, Any], Any]) -> None:
        check(fn, "KStream.foreach", "action(key, value)")
        self._add("KSTREAM-FOREACH", lambda: PeekProcessor(fn, forward=False))

    def merge(self, other: KStream) -> KStream:
        name = self.builder.new_name("KSTREAM-MERGE")
        # a stream merged with itself has one parent edge, as in Kafka (each record once)
        parents = [self.node] if other.node == self.node else [self.node, other.node]
        self.builder.topology.add_processor(name, PassThroughProcessor, *parents)
        same_key = self.key_serde if self.key_serde is other.key_serde else None
        same_value = self.value_serde if self.value_serde is other.value_serde else None
        return KStream(self.builder, name, same_key, same_value,
                       self.repartition_required or other.repartition_required)

    def split(self, name: str | None = None) -> BranchedKStream:
        return BranchedKStream(self, name)

    def process(self, processor_supplier: ProcessorSupplier, *store_names: str) -> KStream:
        """A Processor API processor inside the DSL; it may change keys (marks the stream)."""
        stream = self._add("KSTREAM-PROCESSOR", processor_supplier, key_changed=True,
                           keep_value_serde=False)
        if store_names:
            self.builder.topology.connect_processor_and_state_stores(stream.node, *store_names)
        return stream

    # -- repartitioning and sinks -------------------------------------------------------------

    def repartition(self, *, key_serde: Serde[Any] | None = None,
                    value_serde: Serde[Any] | None = None, name: str | None = None,
                    partitions: int | None = None) -> KStream:
        base = name or self.builder.new_name("KSTREAM-REPARTITION")
        return self.repartition_for(base, key_serde, value_serde, partitions, optimizable=False)

    def to(self, topic_or_extractor: str | TopicNameExtractor, *,
           key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
           partitioner: StreamPartitioner | None = None) -> None:
        name = self.builder.new_name("KSTREAM-SINK")
        self.builder.topology.add_sink(name, topic_or_extractor, self.node,
                                       key_serde=key_serde or self.key_serde,
                                       value_serde=value_serde or self.value_serde,
                                       partitioner=partitioner)

    def to_table(self, materialized: Materialized | str | None = None) -> KTable:
        from ..processor.aggregate import TableSourceProcessor
        from .ktable import KTable

        mat = Materialized.of(materialized)
        name = self.builder.new_name("KSTREAM-TOTABLE")
        store_name = mat.name or self.builder.new_store_name("KSTREAM-TOTABLE-")
        # Kafka names toTable's repartition topic after the processor, not the store
        # ... with the Materialized serdes when it has them (Kafka's toTable)
        stream = (self.repartition_for(name, mat.key_serde, mat.value_serde, optimizable=False)
                  if self.repartition_required else self)
        key_serde = mat.key_serde or stream.key_serde
        value_serde = mat.value_serde or stream.value_serde
        # the store: to_table() is Kafka's toTable(Materialized.with(keySerde, valueSerde)), the
        # stream's serdes; a Materialized given has its own, else the defaults (its
        # StreamToTableNode materializes the MaterializedInternal as it is). Kafka materializes
        # an unnamed one only when a join or old values need it (materialize below): until
        # then it writes nothing, and ours stores with serdes that write anything
        kafka_serdes = (key_serde, value_serde) if materialized is None \
            else (mat.key_serde, mat.value_serde)
        store_serdes = kafka_serdes if mat.name is not None \
            else (key_serde or InternalSerde(), value_serde or InternalSerde())
        topology = self.builder.topology
        from .versioned import table_source_supplier  # KIP-914: a versioned table

        table: KTable | None = None

        def queryable() -> bool:  # Kafka's queryableName: named, or materialized since
            return table is not None and (table.offers_old_values or table.send_old_values)

        topology.add_processor(name, table_source_supplier(store_name, mat.versioned)
                               or (lambda: TableSourceProcessor(store_name, queryable)),
                               stream.node)
        topology.add_state_store(
            self.builder.store_builder(store_name, mat, *store_serdes, versioned_ok=True),
            name)
        table = KTable(self.builder, name, store_name, key_serde, value_serde)
        table.offers_old_values = mat.name is not None  # Kafka materializes only named ones
        if mat.name is None:
            store = topology.stores[store_name]

            def materialize() -> None:  # Kafka's KTableSource.materialize(): now it stores
                store.key_serde, store.value_serde = kafka_serdes
            table.materialize_hook = materialize
        return table

    # -- grouping -----------------------------------------------------------------------------

    def group_by_key(self, *, key_serde: Serde[Any] | None = None,
                     value_serde: Serde[Any] | None = None) -> KGroupedStream:
        from .grouped import KGroupedStream

        return KGroupedStream(self, key_serde or self.key_serde, value_serde or self.value_serde)

    def group_by(self, fn: Callable[[Any, Any], Any], *, key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None) -> KGroupedStream:
        check(fn, "KStream.group_by", "key_selector(key, value)")
        return self.select_key(fn).group_by_key(key_serde=key_serde,
                                                value_serde=value_serde or self.value_serde)

    # -- joins (streams/dsl/joins.py) ---------------------------------------------------------

    def join(self, other: Any, joiner: Callable[[Any, Any], Any], windows: Any = None,
             **kwargs: Any) -> KStream:
        from .joins import stream_join

        return stream_join(self, other, joiner, windows, "inner", **kwargs)

    def left_join(self, other: Any, joiner: Callable[[Any, Any], Any], windows: Any = None,
                  **kwargs: Any) -> KStream:
        from .joins import stream_join

        return stream_join(self, other, joiner, windows, "left", **kwargs)

    def outer_join(self, other: Any, joiner: Callable[[Any, Any], Any], windows: Any = None,
                   **kwargs: Any) -> KStream:
        from .joins import stream_join

        return stream_join(self, other, joiner, windows, "outer", **kwargs)


class BranchedKStream:
    """``split()``: records go to the first branch whose predicate matches.

    As in Kafka, the splitter node is added at ``split()`` and each branch's node when the
    branch is declared, so a ``Branched.with_function`` chain is built in declaration order.
    """

    def __init__(self, stream: KStream, name: str | None) -> None:
        self.stream = stream
        self.splitter = stream.builder.new_name("KSTREAM-BRANCH") if name is None else name
        self.prefix = self.splitter  # Kafka: splitter name + branch name or index, no dash
        self.predicates: list[Callable[[Any, Any], bool]] = []
        self.names: list[str] = []
        self.default: str | None = None
        self.result: dict[str, KStream] = {}
        self._done = False
        # the processor reads the lists when a task builds it, after the DSL is done
        stream.builder.topology.add_processor(
            self.splitter, lambda: BranchProcessor(self.predicates, self.names, self.default),
            stream.node)

    def branch(self, predicate: Callable[[Any, Any], bool],
               branched: Branched | str | None = None, *, name: str | None = None
               ) -> BranchedKStream:
        check(predicate, "BranchedKStream.branch", "predicate(key, value)")
        if self._done:
            raise ValueError("branch() after default_branch()/no_default_branch()")
        spec = Branched.of(branched if name is None else name)
        self.predicates.append(predicate)
        child = self.prefix + (spec.name or str(len(self.names) + 1))
        self.names.append(child)
        self.stream.builder.next_index()  # Kafka spends a counter value on each branch
        self._create(child, spec)
        return self

    def default_branch(self, branched: Branched | str | None = None, *,
                       name: str | None = None) -> dict[str, KStream]:
        self._finish()
        spec = Branched.of(branched if name is None else name)
        self.default = self.prefix + (spec.name or "0")
        self.stream.builder.next_index()
        self._create(self.default, spec)
        return self.result

    def no_default_branch(self) -> dict[str, KStream]:
        self._finish()
        return self.result

    def _finish(self) -> None:
        if self._done:
            raise ValueError("default_branch()/no_default_branch() called twice")
        self._done = True

    def _create(self, child: str, spec: Branched) -> None:
        stream = self.stream
        stream.builder.topology.add_processor(child, PassThroughProcessor, self.splitter)
        branch = KStream(stream.builder, child, stream.key_serde, stream.value_serde,
                         stream.repartition_required)
        if spec.function is not None:
            chained = spec.function(branch)
            if chained is not None:
                self.result[child] = chained
        elif spec.consumer is not None:
            spec.consumer(branch)
        else:
            self.result[child] = branch
