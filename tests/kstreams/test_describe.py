"""Topology.describe(): Kafka Streams' TopologyDescription text, byte for byte, and its model.

Expected strings are Kafka Streams' own output for the same graphs (Kafka's TopologyTest, the
WordCount example, and describe() output published by Kafka users).
"""

from __future__ import annotations

import re

from streams import Materialized, Serdes, StreamsBuilder, Topology
from streams.processor.stateless import PassThroughProcessor
from streams.state.stores import StoreBuilder
from streams.topology.description import (
    Processor,
    Sink,
    Source,
    TopologyDescription,
    _describe_group,
    _hash_order,
    _java_string_hash,
)


def _chain(topology: Topology, source: str, topic: str, *names: str) -> None:
    topology.add_source(source, topic)
    parent = source
    for name in names:
        topology.add_processor(name, PassThroughProcessor, parent)
        parent = name


def word_count(materialized: bool) -> Topology:
    builder = StreamsBuilder()
    lines = builder.stream("streams-plaintext-input", key_serde=Serdes.string(),
                           value_serde=Serdes.string())
    grouped = lines.flat_map_values(lambda line: line.lower().split()).group_by(
        lambda key, word: word)
    counts = grouped.count(Materialized("counts-store") if materialized else None)
    counts.to_stream().to("streams-wordcount-output", key_serde=Serdes.string(),
                          value_serde=Serdes.long())
    return builder.build()


def test_word_count_with_a_store_name() -> None:
    # Kafka >= 2.1 names the repartition nodes after the store; the counter still skips 4-6.
    assert str(word_count(True).describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-plaintext-input])\n"
        "      --> KSTREAM-FLATMAPVALUES-0000000001\n"
        "    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])\n"
        "      --> KSTREAM-KEY-SELECT-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])\n"
        "      --> counts-store-repartition-filter\n"
        "      <-- KSTREAM-FLATMAPVALUES-0000000001\n"
        "    Processor: counts-store-repartition-filter (stores: [])\n"
        "      --> counts-store-repartition-sink\n"
        "      <-- KSTREAM-KEY-SELECT-0000000002\n"
        "    Sink: counts-store-repartition-sink (topic: counts-store-repartition)\n"
        "      <-- counts-store-repartition-filter\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: counts-store-repartition-source (topics: [counts-store-repartition])\n"
        "      --> KSTREAM-AGGREGATE-0000000003\n"
        "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts-store])\n"
        "      --> KTABLE-TOSTREAM-0000000007\n"
        "      <-- counts-store-repartition-source\n"
        "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000008\n"
        "      <-- KSTREAM-AGGREGATE-0000000003\n"
        "    Sink: KSTREAM-SINK-0000000008 (topic: streams-wordcount-output)\n"
        "      <-- KTABLE-TOSTREAM-0000000007\n"
        "\n"
    )


def test_word_count_with_generated_store_name_uses_generated_repartition_nodes() -> None:
    text = str(word_count(False).describe())
    assert text == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-plaintext-input])\n"
        "      --> KSTREAM-FLATMAPVALUES-0000000001\n"
        "    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])\n"
        "      --> KSTREAM-KEY-SELECT-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000006\n"
        "      <-- KSTREAM-FLATMAPVALUES-0000000001\n"
        "    Processor: KSTREAM-FILTER-0000000006 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- KSTREAM-KEY-SELECT-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000005 "
        "(topic: KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition)\n"
        "      <-- KSTREAM-FILTER-0000000006\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000007 "
        "(topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition])\n"
        "      --> KSTREAM-AGGREGATE-0000000004\n"
        "    Processor: KSTREAM-AGGREGATE-0000000004 "
        "(stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])\n"
        "      --> KTABLE-TOSTREAM-0000000008\n"
        "      <-- KSTREAM-SOURCE-0000000007\n"
        "    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000009\n"
        "      <-- KSTREAM-AGGREGATE-0000000004\n"
        "    Sink: KSTREAM-SINK-0000000009 (topic: streams-wordcount-output)\n"
        "      <-- KTABLE-TOSTREAM-0000000008\n"
        "\n"
    )


def test_nodes_are_ordered_by_subtree_size_then_name() -> None:
    """A ksqlDB topology as Kafka printed it: two chains sharing a store, interleaved."""
    topology = Topology()
    _chain(topology, "KSTREAM-SOURCE-0000000001", "users", "KTABLE-SOURCE-0000000002",
           "KTABLE-MAPVALUES-0000000003", "KTABLE-TRANSFORMVALUES-0000000004",
           "PrependAliasRight")
    _chain(topology, "KSTREAM-SOURCE-0000000006", "assigned_tasks",
           "KSTREAM-TRANSFORMVALUES-0000000007", "LeftSourceKeyed-SelectKey",
           "PrependAliasLeft", "Join-repartition-filter")
    topology.add_sink("Join-repartition-sink", "Join-repartition", "Join-repartition-filter")
    _chain(topology, "Join-repartition-source", "Join-repartition", "Join",
           "Aggregate-Prepare", "KSTREAM-AGGREGATE-0000000015",
           "Aggregate-Aggregate-ToOutputSchema", "Aggregate-Aggregate-WindowSelect",
           "Aggregate-Project", "KTABLE-TOSTREAM-0000000019")
    topology.add_sink("KSTREAM-SINK-0000000020", "task_count_topic",
                      "KTABLE-TOSTREAM-0000000019")
    topology.add_state_store(StoreBuilder("KafkaTopic_Right-Reduce"),
                             "KTABLE-MAPVALUES-0000000003", "Join")
    topology.add_state_store(StoreBuilder("Aggregate-Aggregate-Materialize"),
                             "KSTREAM-AGGREGATE-0000000015")
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: Join-repartition-source (topics: [Join-repartition])\n"
        "      --> Join\n"
        "    Processor: Join (stores: [KafkaTopic_Right-Reduce])\n"
        "      --> Aggregate-Prepare\n"
        "      <-- Join-repartition-source\n"
        "    Processor: Aggregate-Prepare (stores: [])\n"
        "      --> KSTREAM-AGGREGATE-0000000015\n"
        "      <-- Join\n"
        "    Processor: KSTREAM-AGGREGATE-0000000015 (stores: [Aggregate-Aggregate-Materialize])\n"
        "      --> Aggregate-Aggregate-ToOutputSchema\n"
        "      <-- Aggregate-Prepare\n"
        "    Processor: Aggregate-Aggregate-ToOutputSchema (stores: [])\n"
        "      --> Aggregate-Aggregate-WindowSelect\n"
        "      <-- KSTREAM-AGGREGATE-0000000015\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [users])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: Aggregate-Aggregate-WindowSelect (stores: [])\n"
        "      --> Aggregate-Project\n"
        "      <-- Aggregate-Aggregate-ToOutputSchema\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-MAPVALUES-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: Aggregate-Project (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000019\n"
        "      <-- Aggregate-Aggregate-WindowSelect\n"
        "    Processor: KTABLE-MAPVALUES-0000000003 (stores: [KafkaTopic_Right-Reduce])\n"
        "      --> KTABLE-TRANSFORMVALUES-0000000004\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-TOSTREAM-0000000019 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000020\n"
        "      <-- Aggregate-Project\n"
        "    Processor: KTABLE-TRANSFORMVALUES-0000000004 (stores: [])\n"
        "      --> PrependAliasRight\n"
        "      <-- KTABLE-MAPVALUES-0000000003\n"
        "    Sink: KSTREAM-SINK-0000000020 (topic: task_count_topic)\n"
        "      <-- KTABLE-TOSTREAM-0000000019\n"
        "    Processor: PrependAliasRight (stores: [])\n"
        "      --> none\n"
        "      <-- KTABLE-TRANSFORMVALUES-0000000004\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000006 (topics: [assigned_tasks])\n"
        "      --> KSTREAM-TRANSFORMVALUES-0000000007\n"
        "    Processor: KSTREAM-TRANSFORMVALUES-0000000007 (stores: [])\n"
        "      --> LeftSourceKeyed-SelectKey\n"
        "      <-- KSTREAM-SOURCE-0000000006\n"
        "    Processor: LeftSourceKeyed-SelectKey (stores: [])\n"
        "      --> PrependAliasLeft\n"
        "      <-- KSTREAM-TRANSFORMVALUES-0000000007\n"
        "    Processor: PrependAliasLeft (stores: [])\n"
        "      --> Join-repartition-filter\n"
        "      <-- LeftSourceKeyed-SelectKey\n"
        "    Processor: Join-repartition-filter (stores: [])\n"
        "      --> Join-repartition-sink\n"
        "      <-- PrependAliasLeft\n"
        "    Sink: Join-repartition-sink (topic: Join-repartition)\n"
        "      <-- Join-repartition-filter\n"
        "\n"
    )


def _global_users(topology: Topology) -> None:
    topology.add_global_store(
        StoreBuilder("my-global-users-store"), "KSTREAM-SOURCE-0000000001", "my-global-users",
        "KTABLE-SOURCE-0000000002", PassThroughProcessor)


def test_global_store_after_the_stream_gets_the_next_id() -> None:
    topology = Topology()
    topology.add_source("KSTREAM-SOURCE-0000000000", "my-order")
    _global_users(topology)
    topology.add_processor("KSTREAM-LEFTJOIN-0000000003", PassThroughProcessor,
                           "KSTREAM-SOURCE-0000000000")
    topology.add_processor("KSTREAM-PRINTER-0000000004", PassThroughProcessor,
                           "KSTREAM-LEFTJOIN-0000000003")
    topology.add_sink("KSTREAM-SINK-0000000005", "my-user-order", "KSTREAM-LEFTJOIN-0000000003")
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [my-order])\n"
        "      --> KSTREAM-LEFTJOIN-0000000003\n"
        "    Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])\n"
        "      --> KSTREAM-PRINTER-0000000004, KSTREAM-SINK-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-PRINTER-0000000004 (stores: [])\n"
        "      --> none\n"
        "      <-- KSTREAM-LEFTJOIN-0000000003\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: my-user-order)\n"
        "      <-- KSTREAM-LEFTJOIN-0000000003\n"
        "\n"
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [my-global-users])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [my-global-users-store])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
    )


def test_global_table_first_takes_id_zero() -> None:
    builder = StreamsBuilder()
    builder.global_table("test")
    builder.stream("test2").to("output-join")
    description = builder.build().describe()
    assert str(description) == (
        "Topologies:\n"
        "   Sub-topology: 0 for global store (will not generate tasks)\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [test])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [test-STATE-STORE-0000000000])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000003 (topics: [test2])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: output-join)\n"
        "      <-- KSTREAM-SOURCE-0000000003\n"
        "\n"
    )
    store = description.global_stores[0]
    assert (store.id, store.store, store.source.topics) == (0, "test-STATE-STORE-0000000000",
                                                           ["test"])
    assert store.processor.predecessors == [store.source]
    assert description.subtopologies[0].id == 1


def test_empty_topology() -> None:
    assert str(Topology().describe()) == "Topologies:\n "


def test_topics_and_stores_print_in_java_hash_set_order() -> None:
    assert _java_string_hash("hello") == 99162322
    assert _java_string_hash("Aa") == _java_string_hash("BB") == 2112
    assert _java_string_hash("\u00e9t\u00e9") == 227742  # UTF-16 code units, like Java
    assert _java_string_hash("x" * 40) < 2**32
    # HashSet<String>: by bucket, colliding keys in insertion order
    assert _hash_order(["b", "a"]) == ["a", "b"]
    assert _hash_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert _hash_order(["Aa", "BB"]) == ["Aa", "BB"]

    topology = Topology()
    topology.add_source("source", ["topic-b", "topic-a", "BB", "Aa"])
    topology.add_processor("p", PassThroughProcessor, "source")
    topology.add_state_store(StoreBuilder("zeta"), "p")
    topology.add_state_store(StoreBuilder("alpha"), "p")
    text = str(topology.describe())
    assert "Source: source (topics: [BB, Aa, topic-a, topic-b])\n" in text
    assert "Processor: p (stores: [zeta, alpha])\n" in text  # buckets 6 and 9


def test_merge_parents_keep_the_order_seen_while_linking() -> None:
    """Kafka sorts ``<--``/``-->`` lists while subtree sizes are still growing.

    ``b-source`` is linked first and has already grown to size 2 when ``a-source`` (size 1)
    joins the set, so it stays first although both end at size 2 and ``a`` < ``b``.
    """
    topology = Topology()
    topology.add_source("b-source", "b").add_source("a-source", "a")
    topology.add_processor("merge", PassThroughProcessor, "b-source", "a-source")
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: a-source (topics: [a])\n"
        "      --> merge\n"
        "    Source: b-source (topics: [b])\n"
        "      --> merge\n"
        "    Processor: merge (stores: [])\n"
        "      --> none\n"
        "      <-- b-source, a-source\n"
        "\n"
    )


def _stream_stream_join(topology: Topology, left: str, right: str) -> None:
    """The nodes Kafka's DSL writes for ``left.join(right, joiner, JoinWindows...)``."""
    add = topology.add_processor
    topology.add_source("KSTREAM-SOURCE-0000000000", left)
    topology.add_source("KSTREAM-SOURCE-0000000001", right)
    add("KSTREAM-WINDOWED-0000000002", PassThroughProcessor, "KSTREAM-SOURCE-0000000000")
    add("KSTREAM-WINDOWED-0000000003", PassThroughProcessor, "KSTREAM-SOURCE-0000000001")
    add("KSTREAM-JOINTHIS-0000000004", PassThroughProcessor, "KSTREAM-WINDOWED-0000000002")
    add("KSTREAM-JOINOTHER-0000000005", PassThroughProcessor, "KSTREAM-WINDOWED-0000000003")
    add("KSTREAM-MERGE-0000000006", PassThroughProcessor, "KSTREAM-JOINTHIS-0000000004",
        "KSTREAM-JOINOTHER-0000000005")
    topology.add_state_store(StoreBuilder("KSTREAM-JOINTHIS-0000000004-store"),
                             "KSTREAM-WINDOWED-0000000002", "KSTREAM-JOINOTHER-0000000005")
    topology.add_state_store(StoreBuilder("KSTREAM-JOINOTHER-0000000005-store"),
                             "KSTREAM-WINDOWED-0000000003", "KSTREAM-JOINTHIS-0000000004")


JOIN_HEAD = (
    "    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n"
    "      --> KSTREAM-JOINTHIS-0000000004\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-WINDOWED-0000000003 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n"
    "      --> KSTREAM-JOINOTHER-0000000005\n"
    "      <-- KSTREAM-SOURCE-0000000001\n"
    "    Processor: KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n"
    "      --> KSTREAM-MERGE-0000000006\n"
    "      <-- KSTREAM-WINDOWED-0000000003\n"
    "    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n"
    "      --> KSTREAM-MERGE-0000000006\n"
    "      <-- KSTREAM-WINDOWED-0000000002\n"
)


def test_stream_stream_join_as_kafka_prints_it() -> None:
    topology = Topology()
    _stream_stream_join(topology, "demo-left", "demo-right")
    topology.add_processor("KSTREAM-PRINTER-0000000007", PassThroughProcessor,
                           "KSTREAM-MERGE-0000000006")
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [demo-left])\n"
        "      --> KSTREAM-WINDOWED-0000000002\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [demo-right])\n"
        "      --> KSTREAM-WINDOWED-0000000003\n"
        + JOIN_HEAD +
        "    Processor: KSTREAM-MERGE-0000000006 (stores: [])\n"
        "      --> KSTREAM-PRINTER-0000000007\n"
        "      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005\n"
        "    Processor: KSTREAM-PRINTER-0000000007 (stores: [])\n"
        "      --> none\n"
        "      <-- KSTREAM-MERGE-0000000006\n"
        "\n"
    )


def test_join_then_outer_join_as_kafka_2_printed_it() -> None:
    """Fan-out lists ordered by subtree size, with sizes still growing while linked.

    This output was published from a Kafka 2.x application, whose node groups listed source
    nodes first, then the others, each sorted by name (current Kafka keeps the order nodes
    were added, which ``describe()`` follows). That order decides which edges are linked
    first and so the order of ``KSTREAM-SOURCE-0000000000``'s successors.
    """
    topology = Topology()
    _stream_stream_join(topology, "nt-requests-v1", "nt-confirmations-v1")
    add = topology.add_processor
    add("KSTREAM-WINDOWED-0000000007", PassThroughProcessor, "KSTREAM-SOURCE-0000000000")
    add("KSTREAM-WINDOWED-0000000008", PassThroughProcessor, "KSTREAM-MERGE-0000000006")
    add("KSTREAM-OUTERTHIS-0000000009", PassThroughProcessor, "KSTREAM-WINDOWED-0000000007")
    add("KSTREAM-OUTEROTHER-0000000010", PassThroughProcessor, "KSTREAM-WINDOWED-0000000008")
    add("KSTREAM-MERGE-0000000011", PassThroughProcessor, "KSTREAM-OUTERTHIS-0000000009",
        "KSTREAM-OUTEROTHER-0000000010")
    topology.add_state_store(StoreBuilder("KSTREAM-OUTERTHIS-0000000009-store"),
                             "KSTREAM-WINDOWED-0000000007", "KSTREAM-OUTEROTHER-0000000010")
    topology.add_state_store(StoreBuilder("KSTREAM-OUTEROTHER-0000000010-store"),
                             "KSTREAM-WINDOWED-0000000008", "KSTREAM-OUTERTHIS-0000000009")
    add("KSTREAM-PEEK-0000000012", PassThroughProcessor, "KSTREAM-MERGE-0000000006")
    topology.add_sink("KSTREAM-SINK-0000000013", "nt-consolidations-v1",
                      "KSTREAM-PEEK-0000000012")
    add("KSTREAM-PEEK-0000000014", PassThroughProcessor, "KSTREAM-MERGE-0000000011")
    topology.add_sink("KSTREAM-SINK-0000000015", "nt-status-v1", "KSTREAM-PEEK-0000000014")
    sources = sorted(n for n in topology.nodes if n.startswith("KSTREAM-SOURCE"))
    kafka2_order = sources + sorted(n for n in topology.nodes if n not in sources)
    assert "Topologies:\n " + "  " + str(_describe_group(topology, 0, kafka2_order)) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [nt-requests-v1])\n"
        "      --> KSTREAM-WINDOWED-0000000002, KSTREAM-WINDOWED-0000000007\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [nt-confirmations-v1])\n"
        "      --> KSTREAM-WINDOWED-0000000003\n"
        + JOIN_HEAD +
        "    Processor: KSTREAM-MERGE-0000000006 (stores: [])\n"
        "      --> KSTREAM-WINDOWED-0000000008, KSTREAM-PEEK-0000000012\n"
        "      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005\n"
        "    Processor: KSTREAM-WINDOWED-0000000007 (stores: [KSTREAM-OUTERTHIS-0000000009-store])\n"
        "      --> KSTREAM-OUTERTHIS-0000000009\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-WINDOWED-0000000008 "
        "(stores: [KSTREAM-OUTEROTHER-0000000010-store])\n"
        "      --> KSTREAM-OUTEROTHER-0000000010\n"
        "      <-- KSTREAM-MERGE-0000000006\n"
        "    Processor: KSTREAM-OUTEROTHER-0000000010 "
        "(stores: [KSTREAM-OUTERTHIS-0000000009-store])\n"
        "      --> KSTREAM-MERGE-0000000011\n"
        "      <-- KSTREAM-WINDOWED-0000000008\n"
        "    Processor: KSTREAM-OUTERTHIS-0000000009 "
        "(stores: [KSTREAM-OUTEROTHER-0000000010-store])\n"
        "      --> KSTREAM-MERGE-0000000011\n"
        "      <-- KSTREAM-WINDOWED-0000000007\n"
        "    Processor: KSTREAM-MERGE-0000000011 (stores: [])\n"
        "      --> KSTREAM-PEEK-0000000014\n"
        "      <-- KSTREAM-OUTERTHIS-0000000009, KSTREAM-OUTEROTHER-0000000010\n"
        "    Processor: KSTREAM-PEEK-0000000012 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000013\n"
        "      <-- KSTREAM-MERGE-0000000006\n"
        "    Processor: KSTREAM-PEEK-0000000014 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000015\n"
        "      <-- KSTREAM-MERGE-0000000011\n"
        "    Sink: KSTREAM-SINK-0000000013 (topic: nt-consolidations-v1)\n"
        "      <-- KSTREAM-PEEK-0000000012\n"
        "    Sink: KSTREAM-SINK-0000000015 (topic: nt-status-v1)\n"
        "      <-- KSTREAM-PEEK-0000000014\n"
        "\n"
    )


def test_sink_with_topic_name_extractor() -> None:
    def route(key: object, value: object, context: object) -> str:
        return "out"

    topology = Topology()
    topology.add_source("source", "in")
    topology.add_sink("sink", route, "source")
    text = str(topology.describe())
    assert (f"    Sink: sink (extractor class: {route.__module__}."
            "test_sink_with_topic_name_extractor.<locals>.route)\n"
            "      <-- source\n") in text
    sink = topology.describe().node("sink")
    assert isinstance(sink, Sink) and sink.topic is None and sink.topic_name_extractor is route


def test_structured_access() -> None:
    description = word_count(True).describe()
    assert isinstance(description, TopologyDescription)
    assert [s.id for s in description.subtopologies] == [0, 1]
    assert description.global_stores == []
    first, second = description.subtopologies
    source = first.nodes[0]
    assert isinstance(source, Source)
    assert source.topics == ["streams-plaintext-input"]
    assert source.topic_set() == {"streams-plaintext-input"}
    assert source.predecessors == []
    assert [n.name for n in source.successors] == ["KSTREAM-FLATMAPVALUES-0000000001"]
    aggregate = description.node("KSTREAM-AGGREGATE-0000000003")
    assert isinstance(aggregate, Processor) and aggregate.stores == ["counts-store"]
    assert aggregate in second.nodes
    assert [n.name for n in aggregate.predecessors] == ["counts-store-repartition-source"]
    sink = first.nodes[-1]
    assert isinstance(sink, Sink) and sink.topic == "counts-store-repartition"
    assert sink.successors == []
    # every edge is recorded on both ends
    for sub in description.subtopologies:
        for node in sub.nodes:
            for child in node.successors:
                assert node in child.predecessors and child in sub.nodes


def test_description_ids_match_sub_topologies_without_global_stores() -> None:
    topology = word_count(True)
    description = topology.describe()
    for sub, described in zip(topology.sub_topologies(), description.subtopologies, strict=True):
        assert sub.id == described.id
        assert set(sub.nodes) == {n.name for n in described.nodes}


# -- Mermaid ---------------------------------------------------------------------------------

_DECL = re.compile(r"^\s+(\w+)(\(\[|\[\[|\[\(|\[/|\[)(\".*\")(\]\)|\]\]|\)\]|/\]|\])$")
_EDGE = re.compile(r"^\s+(\w+) (-->|-\.-|-\.->) (\w+)$")


def _parse_mermaid(text: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str, str]],
                                        list[str]]:
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    decls: dict[str, tuple[str, str]] = {}
    edges: list[tuple[str, str, str]] = []
    subgraphs: list[str] = []
    depth = 0
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("subgraph "):
            depth += 1
            subgraphs.append(stripped)
        elif stripped == "end":
            depth -= 1
        elif (m := _DECL.match(line)) is not None:
            assert m.group(1) not in decls
            decls[m.group(1)] = (m.group(2), m.group(3))
        elif (m := _EDGE.match(line)) is not None:
            edges.append((m.group(1), m.group(2), m.group(3)))
        else:
            raise AssertionError(f"unexpected mermaid line {line!r}")
        assert depth in (0, 1)
    assert depth == 0
    return decls, edges, subgraphs


def test_mermaid_structure() -> None:
    text = word_count(True).describe().to_mermaid()
    decls, edges, subgraphs = _parse_mermaid(text)
    assert subgraphs == ['subgraph sub_0["Sub-topology: 0"]', 'subgraph sub_1["Sub-topology: 1"]']
    by_label = {label.strip('"'): (nid, shape) for nid, (shape, label) in decls.items()}
    # topics are parallelograms, stores cylinders, sources stadiums, sinks subroutines
    assert by_label["streams-plaintext-input"][1] == "[/"
    assert by_label["counts-store"][1] == "[("
    assert by_label["KSTREAM-SOURCE-0000000000"][1] == "(["
    assert by_label["KSTREAM-SINK-0000000008"][1] == "[["
    assert by_label["KSTREAM-AGGREGATE-0000000003"][1] == "["
    for src, _, dst in edges:
        assert src in decls and dst in decls
    ids = {label: nid for label, (nid, _) in by_label.items()}
    # the repartition topic joins the two sub-topologies
    repartition = ids["counts-store-repartition"]
    assert (ids["counts-store-repartition-sink"], "-->", repartition) in edges
    assert (repartition, "-->", ids["counts-store-repartition-source"]) in edges
    assert (ids["KSTREAM-AGGREGATE-0000000003"], "-.-", ids["counts-store"]) in edges
    assert (ids["streams-plaintext-input"], "-->", ids["KSTREAM-SOURCE-0000000000"]) in edges
    # the store is drawn inside the sub-topology that owns it
    body = text.split('subgraph sub_1["Sub-topology: 1"]')[1].split("    end")[0]
    assert f"{ids['counts-store']}[(" in body


def test_mermaid_global_store_extractor_and_escaping() -> None:
    topology = Topology()
    topology.add_source('we"ird<src>', "in")
    topology.add_sink("sink", lambda k, v, c: "x", 'we"ird<src>')
    _global_users(topology)
    text = topology.describe().to_mermaid()
    decls, edges, subgraphs = _parse_mermaid(text)
    assert subgraphs[1] == 'subgraph sub_1["Sub-topology: 1 for global store"]'
    labels = {label for _, label in decls.values()}
    assert '"we#quot;ird#lt;src#gt;"' in labels
    assert '"my-global-users-store"' in labels
    assert any(kind == "-.->" for _, kind, _ in edges)  # dynamic topic choice is dashed
    assert "extractor: " in text
