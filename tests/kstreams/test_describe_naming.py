"""Naming parity: the DSL generates the node, store and topic names Kafka Streams does.

Expected names come from Kafka Streams (TopologyTest, StreamsBuilderTest, KStreamImpl's and
BranchedKStreamImpl's naming rules): one counter per builder, store names drawing from the same
counter, repartition nodes named after a user-given base or generated when the base is.
"""

from __future__ import annotations

from streams import Materialized, StreamsBuilder


def names(builder: StreamsBuilder) -> list[str]:
    return list(builder.build().nodes)


def test_table_group_by_count_matches_kafka_topology_test() -> None:
    """Kafka's TopologyTest.tableZeroArgCountShouldPreserveTopologyStructure, verbatim."""
    builder = StreamsBuilder()
    builder.table("input-topic").group_by(lambda key, value: (key, value)).count()
    assert str(builder.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n"
        "      --> KTABLE-SELECT-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000005 "
        "(topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)\n"
        "      <-- KTABLE-SELECT-0000000003\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000006 "
        "(topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])\n"
        "      --> KTABLE-AGGREGATE-0000000007\n"
        "    Processor: KTABLE-AGGREGATE-0000000007 "
        "(stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000006\n"
        "\n"
    )


def test_word_count_counter_values() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").flat_map_values(str.split).group_by(lambda k, w: w).count()
     .to_stream().to("out"))
    topology = builder.build()
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-FLATMAPVALUES-0000000001",
        "KSTREAM-KEY-SELECT-0000000002", "KSTREAM-FILTER-0000000006",
        "KSTREAM-SINK-0000000005", "KSTREAM-SOURCE-0000000007",
        "KSTREAM-AGGREGATE-0000000004", "KTABLE-TOSTREAM-0000000008", "KSTREAM-SINK-0000000009",
    ]
    assert list(topology.stores) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000003"]
    assert [s.source_topics for s in topology.sub_topologies()] == [
        ["in"], ["KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"]]


def test_named_store_names_the_repartition_nodes_but_still_spends_the_counter() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").select_key(lambda k, v: v).group_by_key()
     .count(Materialized("counts")).to_stream().to("out"))
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-KEY-SELECT-0000000001",
        "counts-repartition-filter", "counts-repartition-sink", "counts-repartition-source",
        "KSTREAM-AGGREGATE-0000000002", "KTABLE-TOSTREAM-0000000006", "KSTREAM-SINK-0000000007",
    ]


def test_group_by_key_without_key_change_has_no_repartition() -> None:
    builder = StreamsBuilder()
    builder.stream("input-topic").group_by_key().count()
    topology = builder.build()
    assert names(builder) == ["KSTREAM-SOURCE-0000000000", "KSTREAM-AGGREGATE-0000000002"]
    assert list(topology.stores) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000001"]
    assert len(topology.sub_topologies()) == 1


def test_repartition_without_a_name_uses_generated_names() -> None:
    builder = StreamsBuilder()
    builder.stream("in").repartition().to("out")
    topology = builder.build()
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-FILTER-0000000003", "KSTREAM-SINK-0000000002",
        "KSTREAM-SOURCE-0000000004", "KSTREAM-SINK-0000000005",
    ]
    assert "KSTREAM-REPARTITION-0000000001-repartition" in topology.internal_topics


def test_repartition_with_a_name() -> None:
    builder = StreamsBuilder()
    builder.stream("in").repartition(name="by-user").to("out")
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000000", "by-user-repartition-filter", "by-user-repartition-sink",
        "by-user-repartition-source", "KSTREAM-SINK-0000000004",
    ]


def test_to_table_repartition_is_named_after_the_processor() -> None:
    builder = StreamsBuilder()
    builder.stream("in").select_key(lambda k, v: v).to_table(Materialized("t"))
    topology = builder.build()
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-KEY-SELECT-0000000001",
        "KSTREAM-FILTER-0000000004", "KSTREAM-SINK-0000000003", "KSTREAM-SOURCE-0000000005",
        "KSTREAM-TOTABLE-0000000002",
    ]
    assert "KSTREAM-TOTABLE-0000000002-repartition" in topology.internal_topics


def test_table_filter_to_stream_names() -> None:
    builder = StreamsBuilder()
    builder.table("t").filter(lambda k, v: True).to_stream().to("out")
    assert names(builder) == [
        "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "KTABLE-FILTER-0000000003",
        "KTABLE-TOSTREAM-0000000004", "KSTREAM-SINK-0000000005",
    ]


def test_merge_names() -> None:
    builder = StreamsBuilder()
    builder.stream("a").merge(builder.stream("b")).to("out")
    assert names(builder) == ["KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001",
                              "KSTREAM-MERGE-0000000002", "KSTREAM-SINK-0000000003"]


def test_split_names_and_counter() -> None:
    """Children are the splitter name plus the branch name or index, with no separator."""
    builder = StreamsBuilder()
    branches = (builder.stream("in").split().branch(lambda k, v: v > 0)
                .branch(lambda k, v: v < 0).default_branch())
    assert list(branches) == ["KSTREAM-BRANCH-00000000011", "KSTREAM-BRANCH-00000000012",
                              "KSTREAM-BRANCH-00000000010"]
    builder.stream("next").to("out")
    assert names(builder)[-2:] == ["KSTREAM-SOURCE-0000000005", "KSTREAM-SINK-0000000006"]


def test_named_split() -> None:
    builder = StreamsBuilder()
    branches = (builder.stream("in").split("sp-").branch(lambda k, v: v > 0, "pos")
                .default_branch("rest"))
    assert list(branches) == ["sp-pos", "sp-rest"]


def test_count_with_an_unnamed_materialized_spends_one_name_more() -> None:
    """Kafka 4.4 (describe() of the same programs): KGroupedStream, TimeWindowedKStream and
    SessionWindowedKStream count(Materialized.with(...)) burn a store name before their
    own; count() and a sliding-window count do not."""
    from streams import Serdes, SessionWindows, SlidingWindows, TimeWindows

    def count_names(windows: object, materialized: Materialized | None) -> list[str]:
        builder = StreamsBuilder()
        grouped = builder.stream("in").group_by_key()
        windowed = grouped if windows is None else grouped.windowed_by(windows)
        windowed.count(materialized).to_stream().to("out")
        return names(builder) + list(builder.build().stores)

    unnamed = Materialized(key_serde=Serdes.string(), value_serde=Serdes.long())
    burnt = ["KSTREAM-SOURCE-0000000000", "KSTREAM-AGGREGATE-0000000003",
             "KTABLE-TOSTREAM-0000000004", "KSTREAM-SINK-0000000005",
             "KSTREAM-AGGREGATE-STATE-STORE-0000000002"]
    plain = ["KSTREAM-SOURCE-0000000000", "KSTREAM-AGGREGATE-0000000002",
             "KTABLE-TOSTREAM-0000000003", "KSTREAM-SINK-0000000004",
             "KSTREAM-AGGREGATE-STATE-STORE-0000000001"]
    for windows in (None, TimeWindows.of_size_with_no_grace(10),
                    SessionWindows.of_inactivity_gap_with_no_grace(10)):
        assert count_names(windows, unnamed) == burnt
        assert count_names(windows, None) == plain
    assert count_names(SlidingWindows.of_time_difference_with_no_grace(10), unnamed) == plain
