"""``topology.optimization``: Kafka Streams' topology rewrites (StreamsConfig, KIP-295).

Implemented: ``merge.repartition.topics``. When a key-changing operation (``map``, ``flat_map``,
``select_key``, the key selector of ``group_by``) feeds several operations that repartition
(aggregations and joins), Kafka writes the re-keyed records once: one repartition topic right
after the key-changing node, named after the first of them (its nodes ``<topic>-filter``,
``-sink`` and ``-source``), and every consumer reads it. Filters and peeks between the key
change and a repartition move behind the shared topic, as in Kafka; a repartition behind a
value-changing operation (``map_values``...) keeps its own topic, because the shared one would
carry the values before that change. Explicit ``repartition()`` calls are never merged.

Where Kafka's rules were not checked against Kafka Streams (a path through ``split`` or
``merge``, repartitions with different explicit serdes or partition counts), the repartition
is left as it is.

And ``reuse.ktable.source.topics``: a table read with ``builder.table(topic)`` keeps its
store without a changelog topic; its input topic is the changelog. The store is restored from
the input topic up to the group's committed offset (what follows is processed again, and must
find the store as it stood before it), and its checkpoint is the consumed offset, as Kafka
Streams does for source tables. Standby tasks do not follow such a topic (they would run
ahead of the committed offset): a promoted task restores the table from the input topic. The
input topic must be kept (not deleted by retention) for as long as the table needs it, and the
table's serdes must read it as written.

``single.store.self.join`` (KIP-862) is not implemented as a rewrite: a stream joined with
itself keeps its two window stores (refused when named). What it changes in the records is
honoured under ``all``: the join's left side runs Kafka's self-join processor over its own
window store (an inner join whatever the join's kind: a left or outer self-join drops null
keys, which KIP-962 keeps for two streams, emits nothing unjoined, and reads the store before
the record is added, so a partner the store would expire with the record's own time is still
found); checked on Kafka's driver. The right side's store and the outer-join store stay
declared, unused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..processor.stateless import DropNullKeyProcessor, PassThroughProcessor
from ..serde import Serde
from ..topology.copartition import CopartitionGroup
from ..topology.topology import ProcessorDef, SinkDef, SourceDef, TopologyError

if TYPE_CHECKING:
    from .builder import StreamsBuilder

log = logging.getLogger(__name__)

NONE = "none"
ALL = "all"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"
KNOWN = (MERGE_REPARTITION_TOPICS, REUSE_KTABLE_SOURCE_TOPICS, SINGLE_STORE_SELF_JOIN)


@dataclass
class RepartitionRecord:
    """A repartition the DSL added on its own (for an aggregation or a join)."""

    topic: str
    parent: str
    filter: str
    sink: str
    source: str
    key_serde: Serde[Any] | None
    value_serde: Serde[Any] | None
    partitions: int | None
    keeps_null_keys: bool = False  # a join's (KIP-962): its filter passes null keys on


def parse_optimizations(value: Any) -> set[str]:
    """``none`` | ``all`` | a comma-separated list of Kafka's rewrite names."""
    if value is None:
        return set()
    text = str(value).strip().lower()
    if text in ("", NONE):
        return set()
    if text == ALL:
        return {MERGE_REPARTITION_TOPICS, REUSE_KTABLE_SOURCE_TOPICS}
    wanted = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(wanted - set(KNOWN))
    if unknown:
        raise ValueError(f"unknown optimization(s) {', '.join(unknown)}; expected 'none', "
                         f"'all' or a list of {', '.join(KNOWN)}")
    unsupported = sorted(wanted - {MERGE_REPARTITION_TOPICS, REUSE_KTABLE_SOURCE_TOPICS})
    if unsupported:
        raise ValueError(f"{', '.join(unsupported)} is not supported yet; "
                         f"{MERGE_REPARTITION_TOPICS} and {REUSE_KTABLE_SOURCE_TOPICS} are")
    return wanted


def optimization_setting_is_all(config: Mapping[str, Any] | Any) -> bool:
    return str(optimization_setting(config) or "").strip().lower() == ALL


def optimization_setting(config: Mapping[str, Any] | Any) -> Any:
    if isinstance(config, Mapping):
        return config.get("topology.optimization", config.get("topology_optimization"))
    return getattr(config, "topology_optimization", None)


def optimize(builder: StreamsBuilder, config: Mapping[str, Any] | Any) -> None:
    """Apply what ``topology.optimization`` asks for (once per builder)."""
    try:
        wanted = parse_optimizations(optimization_setting(config))
    except ValueError as exc:
        raise TopologyError(f"topology.optimization: {exc}") from None
    if MERGE_REPARTITION_TOPICS in wanted and MERGE_REPARTITION_TOPICS not in builder.optimized:
        merged = merge_repartition_topics(builder)
        builder.optimized.add(MERGE_REPARTITION_TOPICS)
        if merged:
            log.info("topology.optimization: merged repartition topics %s", merged)
    if REUSE_KTABLE_SOURCE_TOPICS in wanted and \
            REUSE_KTABLE_SOURCE_TOPICS not in builder.optimized:
        reused = reuse_source_topics(builder)
        builder.optimized.add(REUSE_KTABLE_SOURCE_TOPICS)
        if reused:
            log.info("topology.optimization: source tables restore from their input topics "
                     "%s (no changelog topic)", reused)
    if optimization_setting_is_all(config) and "self-joins" not in builder.optimized:
        builder.optimized.add("self-joins")
        for flag, processor, store in builder.self_joins:
            flag[0] = True
            builder.topology.connect_processor_and_state_stores(processor, store,
                                                                read_only=True)


def reuse_source_topics(builder: StreamsBuilder) -> list[str]:
    """Source tables' stores: no changelog topic, the input topic restores them."""
    topology = builder.topology
    reused = []
    for store_name, topic in builder.source_tables:
        store = topology.stores.get(store_name)
        if store is None or not store.logging:
            continue  # a table with logging disabled has nothing to restore
        store.logging = False
        store.source_changelog = topic
        topology.internal_topics.pop(f"{store_name}-changelog", None)
        reused.append(topic)
    return reused


def _compatible(first: RepartitionRecord, other: RepartitionRecord) -> bool:
    """Serdes that can share one topic: the same, or unset on one side (the shared topic
    takes the one that is set). Different explicit serdes keep separate topics."""
    def same(a: Serde[Any] | None, b: Serde[Any] | None) -> bool:
        return a is None or b is None or a is b or repr(a) == repr(b)
    return (same(first.key_serde, other.key_serde) and same(first.value_serde, other.value_serde)
            and first.partitions == other.partitions)


def _path_to_key_change(builder: StreamsBuilder, record: RepartitionRecord
                        ) -> tuple[str, list[str]] | None:
    """(key-changing node, filters/peeks from it down to the repartition) or None."""
    nodes = builder.topology.nodes
    path: list[str] = []
    node = record.parent
    while node not in builder.key_changing:
        definition = nodes.get(node)
        if (node not in builder.transparent or not isinstance(definition, ProcessorDef)
                or len(definition.parents) != 1 or len(definition.children) != 1):
            return None
        path.append(node)
        node = definition.parents[0]
    return node, path[::-1]


def merge_repartition_topics(builder: StreamsBuilder) -> list[str]:
    """The rewrite itself; returns the names of the shared repartition topics."""
    topology = builder.topology
    nodes = topology.nodes
    groups: dict[str, list[tuple[RepartitionRecord, list[str]]]] = {}
    for record in builder.repartitions:
        found = _path_to_key_change(builder, record)
        if found is not None:
            groups.setdefault(found[0], []).append((record, found[1]))
    merged = []
    for key_node, members in groups.items():
        first = members[0][0]
        members = [(r, p) for r, p in members if _compatible(first, r)]
        key_serde = next((r.key_serde for r, _ in members if r.key_serde is not None), None)
        value_serde = next((r.value_serde for r, _ in members if r.value_serde is not None),
                           None)
        topic = first.topic
        filter_name, sink_name, source_name = (f"{topic}-filter", f"{topic}-sink",
                                               f"{topic}-source")
        configs = topology.internal_topics[topic].configs
        below: list[str] = []  # children of the shared source
        for record, path in members:
            consumers = list(nodes[record.source].children)  # type: ignore[union-attr]
            nodes[record.parent].children.remove(record.filter)  # type: ignore[union-attr]
            for name in (record.filter, record.sink, record.source):
                del nodes[name]
            del topology.internal_topics[record.topic]
            topology._topic_sources.pop(record.topic, None)  # noqa: SLF001 - same package family
            attach_to = path[-1] if path else source_name
            for consumer in consumers:
                consumer_def = nodes[consumer]
                if isinstance(consumer_def, ProcessorDef | SinkDef):
                    consumer_def.parents = [attach_to if p == record.source else p
                                            for p in consumer_def.parents]
            if path:
                nodes[path[-1]].children.extend(consumers)  # type: ignore[union-attr]
                top = path[0]
                key_children = nodes[key_node].children  # type: ignore[union-attr]
                if top in key_children:  # a shared path moves once
                    key_children.remove(top)
                    nodes[top].parents = [source_name]  # type: ignore[union-attr]
                    below.append(top)
            else:
                below.extend(consumers)
            _rename_topic(topology.copartition_groups, record.topic, topic)
        # the shared repartition, right after the key-changing node (in node order too); it
        # passes null keys on when a join reads it (KIP-962, as Kafka's merged repartition:
        # checked on its driver), the aggregations reading it drop them themselves
        keep_nulls = any(r.keeps_null_keys for r, _ in members)
        new_nodes = {
            filter_name: ProcessorDef(filter_name,
                                      PassThroughProcessor if keep_nulls else DropNullKeyProcessor,
                                      [key_node], [sink_name]),
            sink_name: SinkDef(sink_name, topic, [filter_name], key_serde, value_serde),
            source_name: SourceDef(source_name, [topic], key_serde, value_serde, None, below),
        }
        nodes[key_node].children.append(filter_name)  # type: ignore[union-attr]
        reordered: dict[str, Any] = {}
        for name, definition in nodes.items():
            reordered[name] = definition
            if name == key_node:
                reordered.update(new_nodes)
        nodes.clear()
        nodes.update(reordered)
        topology.add_internal_topic(topic, "repartition", first.partitions, configs)
        topology._topic_sources[topic] = source_name  # noqa: SLF001
        merged.append(topic)
    builder.repartitions = [r for r in builder.repartitions if r.filter in nodes]
    return merged


def _rename_topic(groups: list[CopartitionGroup], old: str, new: str) -> None:
    for index, group in enumerate(groups):
        if old in group:
            order = [new if t == old else t for t in group.order]
            groups[index] = CopartitionGroup(order, group.operator)
