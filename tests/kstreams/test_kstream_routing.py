"""split/branch, repartition, to(topic extractor), to_table and grouping (reference §1.0, §1.2)."""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, StreamsBuilder
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def test_split_routes_to_the_first_matching_branch_and_the_default() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=S, value_serde=L)
    branches = (stream.split("route-")
                .branch(lambda k, v: v > 100, name="big")
                .branch(lambda k, v: v > 10, name="medium")
                .default_branch(name="small"))
    assert list(branches) == ["route-big", "route-medium", "route-small"]
    for name, branch in branches.items():
        branch.to(name, key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        outs = {n: driver.create_output_topic(n, S, L) for n in branches}
        for key, value in [("a", 500), ("b", 50), ("c", 5), ("d", 101)]:
            inp.pipe_input(key, value, 1)
        assert outs["route-big"].read_key_values_to_list() == [("a", 500), ("d", 101)]
        assert outs["route-medium"].read_key_values_to_list() == [("b", 50)]
        assert outs["route-small"].read_key_values_to_list() == [("c", 5)]


def test_split_without_default_drops_unmatched_records_and_uses_kafka_names() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=S, value_serde=L)
    branches = stream.split().branch(lambda k, v: v % 2 == 0).branch(lambda k, v: v > 10) \
        .no_default_branch()
    # Kafka: splitter name + branch index, one counter value per branch
    assert list(branches) == ["KSTREAM-BRANCH-00000000011", "KSTREAM-BRANCH-00000000012"]
    merged = branches["KSTREAM-BRANCH-00000000011"].merge(branches["KSTREAM-BRANCH-00000000012"])
    assert merged.node == "KSTREAM-MERGE-0000000004"
    merged.to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_key_value_list([("a", 2), ("b", 3), ("c", 13), ("d", 14)], 0, 1)
        assert out.read_key_values_to_list() == [("a", 2), ("c", 13), ("d", 14)]


def test_default_branch_without_name_is_index_zero() -> None:
    branches = StreamsBuilder().stream("in").split().branch(lambda k, v: True).default_branch()
    assert list(branches) == ["KSTREAM-BRANCH-00000000011", "KSTREAM-BRANCH-00000000010"]


def test_branches_inherit_the_repartition_flag() -> None:
    stream = StreamsBuilder().stream("in").select_key(lambda k, v: v)
    branches = stream.split().branch(lambda k, v: True).default_branch()
    assert all(b.repartition_required for b in branches.values())


def test_repartition_always_goes_through_an_internal_topic() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=S, value_serde=L)
    stream.repartition(name="shuffle").to("out", key_serde=S, value_serde=L)
    topology = builder.build()
    assert "shuffle-repartition" in topology.internal_topics
    assert len(topology.sub_topologies()) == 2
    with TopologyTestDriver(topology, {"application.id": "app"}) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("k", 1, 42, [("h", b"v")])
        inp.pipe_input(None, 2, 43)  # a null key cannot be routed
        assert out.read_records_to_list() == [TestRecord("k", 1, 42, [("h", b"v")])]
        assert "app-shuffle-repartition" in driver.produced_topic_names()


def test_to_with_a_topic_name_extractor() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=S, value_serde=L)
    stream.to(lambda key, value, ctx: f"out-{key}", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        inp.pipe_input("x", 1, 1)
        inp.pipe_input("y", 2, 2)
        inp.pipe_input("x", 3, 3)
        assert driver.create_output_topic("out-x", S, L).read_values_to_list() == [1, 3]
        assert driver.create_output_topic("out-y", S, L).read_values_to_list() == [2]
        assert driver.produced_topic_names() == {"out-x", "out-y"}


def test_the_extractor_sees_the_record_context() -> None:
    contexts = []

    def extractor(key, value, ctx):
        contexts.append(ctx)
        return "out"

    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).to(extractor, key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        driver.create_input_topic("in", S, L).pipe_input("x", 1, 1)
    assert (contexts[0].topic, contexts[0].partition, contexts[0].offset) == ("in", 0, 0)


def test_to_table_upserts_and_deletes() -> None:
    builder = StreamsBuilder()
    table = builder.stream("in", key_serde=S, value_serde=L).to_table(Materialized("latest"))
    table.to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("a", 1, 1)
        inp.pipe_input("a", 2, 2)
        inp.pipe_input("b", 3, 3)
        inp.pipe_input("a", None, 4)
        inp.pipe_input(None, 9, 5)  # null keys are dropped
        assert out.read_records_to_list() == [
            TestRecord("a", 1, 1), TestRecord("a", 2, 2), TestRecord("b", 3, 3),
            TestRecord("a", None, 4)]
        assert dict(driver.get_key_value_store("latest").all()) == {"b": 3}


def test_to_table_after_a_key_change_repartitions() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).select_key(lambda k, v: k.upper()) \
        .to_table(Materialized("t", key_serde=S, value_serde=L))
    topology = builder.build()
    assert [t.kind for t in topology.internal_topics.values()].count("repartition") == 1
    with TopologyTestDriver(topology) as driver:
        driver.create_input_topic("in", S, L).pipe_input("a", 1, 1)
        assert driver.get_key_value_store("t").get("A") == 1


def test_group_by_drops_null_keys_and_counts_with_max_timestamp() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=S) \
        .group_by(lambda k, v: v or None, key_serde=S, value_serde=S).count() \
        .to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("k1", "x", 10)
        inp.pipe_input("k2", "", 11)  # mapped to a null key: dropped
        inp.pipe_input("k3", "x", 5)  # older: the aggregate keeps the max timestamp
        assert out.read_records_to_list() == [TestRecord("x", 1, 10), TestRecord("x", 2, 10)]


def test_branch_after_finishing_is_an_error() -> None:
    split = StreamsBuilder().stream("in").split()
    split.no_default_branch()
    with pytest.raises(ValueError):
        split.branch(lambda k, v: True)
