"""``Topology``: the processor graph, built by the DSL or directly through the Processor API.

The graph is a description only; tasks instantiate it. Sub-topologies are the connected parts
of the graph (edges between nodes, plus processors that share a store); repartition topics cut
the graph because they are a sink in one part and a source in another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..processor.api import ProcessorSupplier
from ..serde import Serde
from ..state.stores import StoreBuilder
from .copartition import CopartitionGroup, align_key_serdes, check_key_serdes

TimestampExtractor = Callable[[Any, int], int]  # (consumer record, partition time) -> ts
TopicNameExtractor = Callable[[Any, Any, Any], str]  # (key, value, record context) -> topic
StreamPartitioner = Callable[[str, Any, Any, int], int | None]  # (topic, key, value, n) -> p


class TopologyError(ValueError):
    """An invalid topology: duplicate names, unknown parents, stores nobody can reach..."""


@dataclass
class SourceDef:
    name: str
    topics: list[str]
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    timestamp_extractor: TimestampExtractor | None = None
    children: list[str] = field(default_factory=list)


@dataclass
class ProcessorDef:
    name: str
    supplier: ProcessorSupplier
    parents: list[str]
    children: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    # the stores it only reads (a join reading a table): they do not keep the store's one
    # writer from caching (the record cache serves their reads)
    read_only_stores: set[str] = field(default_factory=set)


@dataclass
class SinkDef:
    name: str
    topic: str | TopicNameExtractor
    parents: list[str]
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    partitioner: StreamPartitioner | None = None


NodeDef = SourceDef | ProcessorDef | SinkDef


@dataclass
class InternalTopic:
    """A topic the application owns: created by the runtime, named ``<application.id>-<name>``."""

    name: str
    kind: str  # "repartition" | "changelog" | "subscription"
    partitions: int | None = None  # None: derive from the upstream source topics
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class GlobalStoreDef:
    store: StoreBuilder
    source: SourceDef
    processor: ProcessorDef
    position: int = 0  # len(nodes) when added: where Kafka numbers its node group (describe)


@dataclass
class SubTopology:
    id: int
    nodes: list[str]
    source_topics: list[str]
    sink_topics: list[str]
    stores: list[str]


class Topology:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeDef] = {}
        self.stores: dict[str, StoreBuilder] = {}
        self.global_stores: dict[str, GlobalStoreDef] = {}
        self.internal_topics: dict[str, InternalTopic] = {}
        self.copartition_groups: list[CopartitionGroup] = []
        self._topic_sources: dict[str, str] = {}

    # -- building -----------------------------------------------------------------------------

    def _check_new(self, name: str) -> None:
        if not name:
            raise TopologyError("node names must not be empty")
        if name in self.nodes or any(g.source.name == name or g.processor.name == name
                                     for g in self.global_stores.values()):
            raise TopologyError(f"a node named {name!r} already exists")

    def _parents(self, name: str, parent_names: tuple[str, ...]) -> list[str]:
        if not parent_names:
            raise TopologyError(f"node {name!r} needs at least one parent")
        for parent in parent_names:
            node = self.nodes.get(parent)
            if node is None:
                raise TopologyError(f"node {name!r}: unknown parent {parent!r}")
            if isinstance(node, SinkDef):
                raise TopologyError(f"node {name!r}: sink {parent!r} cannot have children")
        return list(parent_names)

    def add_source(
        self,
        name: str,
        topics: str | list[str],
        *,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> Topology:
        self._check_new(name)
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if not topic_list:
            raise TopologyError(f"source {name!r} needs at least one topic")
        for topic in topic_list:
            if topic in self._topic_sources:
                raise TopologyError(
                    f"topic {topic!r} is already read by source {self._topic_sources[topic]!r}"
                )
        for topic in topic_list:
            self._topic_sources[topic] = name
        self.nodes[name] = SourceDef(name, topic_list, key_serde, value_serde, timestamp_extractor)
        return self

    def add_processor(self, name: str, supplier: ProcessorSupplier, *parent_names: str) -> Topology:
        self._check_new(name)
        parents = self._parents(name, parent_names)
        self.nodes[name] = ProcessorDef(name, supplier, parents)
        for parent in parents:
            self.nodes[parent].children.append(name)  # type: ignore[union-attr]
        return self

    def add_sink(
        self,
        name: str,
        topic: str | TopicNameExtractor,
        *parent_names: str,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> Topology:
        self._check_new(name)
        parents = self._parents(name, parent_names)
        self.nodes[name] = SinkDef(name, topic, parents, key_serde, value_serde, partitioner)
        for parent in parents:
            self.nodes[parent].children.append(name)  # type: ignore[union-attr]
        return self

    def add_state_store(self, store: StoreBuilder, *processor_names: str) -> Topology:
        if store.name in self.stores or store.name in self.global_stores:
            raise TopologyError(f"a state store named {store.name!r} already exists")
        self.stores[store.name] = store
        if store.logging:
            self.internal_topics[f"{store.name}-changelog"] = InternalTopic(
                f"{store.name}-changelog", "changelog", configs=_changelog_configs(store)
            )
        for processor in processor_names:
            self.connect_processor_and_state_stores(processor, store.name)
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str,
                                           read_only: bool = False) -> None:
        """Give the processor access to the stores; ``read_only`` (the DSL's joins) says it
        never writes them, so their writer may still use the record cache."""
        node = self.nodes.get(processor_name)
        if not isinstance(node, ProcessorDef):
            raise TopologyError(f"{processor_name!r} is not a processor of this topology")
        for store in store_names:
            if store not in self.stores:
                raise TopologyError(f"processor {processor_name!r}: unknown state store {store!r}")
            if store not in node.stores:
                node.stores.append(store)
                if read_only:
                    node.read_only_stores.add(store)
            elif not read_only:
                node.read_only_stores.discard(store)

    def add_global_store(
        self,
        store: StoreBuilder,
        source_name: str,
        topic: str,
        processor_name: str,
        supplier: ProcessorSupplier,
        *,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> Topology:
        """A store fed from every partition of ``topic`` by ``supplier``'s processor."""
        self._check_new(source_name)
        self._check_new(processor_name)
        if store.name in self.stores or store.name in self.global_stores:
            raise TopologyError(f"a state store named {store.name!r} already exists")
        if topic in self._topic_sources:
            raise TopologyError(f"topic {topic!r} is already read by {self._topic_sources[topic]!r}")
        store.logging = False  # the source topic is its changelog
        source = SourceDef(source_name, [topic], key_serde, value_serde, timestamp_extractor,
                           [processor_name])
        processor = ProcessorDef(processor_name, supplier, [source_name], stores=[store.name])
        self._topic_sources[topic] = source_name
        self.global_stores[store.name] = GlobalStoreDef(store, source, processor,
                                                        len(self.nodes))
        return self

    def add_internal_topic(self, name: str, kind: str, partitions: int | None = None,
                           configs: dict[str, str] | None = None) -> None:
        self.internal_topics[name] = InternalTopic(name, kind, partitions, dict(configs or {}))

    def copartition(self, *topics: str, operator: str | None = None) -> None:
        """Declare that ``operator`` (a join, a cogroup) reads these topics partition by
        partition: they must have the same partition count and the same key bytes."""
        self.copartition_groups.append(CopartitionGroup(topics, operator))

    def align_key_serdes(self) -> None:
        """Give join repartition topics with no key serde their co-partners' (if known)."""
        align_key_serdes(self)

    def check_key_serdes(self, default_key_serde: Serde[Any] | None = None) -> None:
        """Before running: repartition topics of a join write their co-partners' key bytes.

        Raises ``TopologyError`` naming the operator when a key serde is needed and neither
        the operator, its co-partner topics nor ``default.key.serde`` provide one
        (see copartition.py). Called by ``StreamsBuilder.build(config)``, ``KafkaStreams``
        and the ``TopologyTestDriver``.
        """
        check_key_serdes(self, default_key_serde)

    # -- queries ------------------------------------------------------------------------------

    def source_for_topic(self, topic: str) -> str | None:
        return self._topic_sources.get(topic)

    def resolve_topic(self, name: str, application_id: str) -> str:
        """Internal topics are prefixed with the application id; user topics are not."""
        return f"{application_id}-{name}" if name in self.internal_topics else name

    def sub_topologies(self) -> list[SubTopology]:
        order = {name: index for index, name in enumerate(self.nodes)}
        parent: dict[str, str] = {name: name for name in self.nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                if order[ra] > order[rb]:
                    ra, rb = rb, ra
                parent[rb] = ra

        store_users: dict[str, str] = {}
        for name, node in self.nodes.items():
            for child in getattr(node, "children", []):
                union(name, child)
            if isinstance(node, ProcessorDef):
                for store in node.stores:
                    if store in store_users:
                        union(name, store_users[store])
                    store_users[store] = name
        groups: dict[str, list[str]] = {}
        for name in self.nodes:
            groups.setdefault(find(name), []).append(name)
        result = []
        for index, members in enumerate(sorted(groups.values(), key=lambda m: order[m[0]])):
            sources, sinks, stores = [], [], []
            for name in members:
                node = self.nodes[name]
                if isinstance(node, SourceDef):
                    sources.extend(node.topics)
                elif isinstance(node, SinkDef) and isinstance(node.topic, str):
                    sinks.append(node.topic)
                elif isinstance(node, ProcessorDef):
                    stores.extend(s for s in node.stores if s not in stores)
            result.append(SubTopology(index, members, sources, sinks, stores))
        return result

    def describe(self) -> Any:
        from .description import describe

        return describe(self)


def _changelog_configs(store: StoreBuilder) -> dict[str, str]:
    configs = {"cleanup.policy": "compact"}
    if store.kind in ("window", "session"):
        retention = (store.retention_ms or 0) + 86_400_000
        configs = {"cleanup.policy": "compact,delete", "retention.ms": str(retention)}
    configs.update(store.changelog_config)
    return configs
