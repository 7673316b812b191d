"""Key-aware functions chosen by arity (Kafka's ValueMapperWithKey, ValueJoinerWithKey and
4.0's (key, value) FK extractor), ``Branched.with_function`` / ``with_consumer`` and
``TableJoined`` partitioners, on the TopologyTestDriver."""

from __future__ import annotations

from typing import Any

import pytest

from streams import Branched, JoinWindows, Serdes, StreamsBuilder, TableJoined
from streams.dsl.arity import ArityError
from streams.testing import TopologyTestDriver

S = Serdes.string()
CONFIG = {"application.id": "keyed", "default.key.serde": "string",
          "default.value.serde": "string"}


def drive(builder: StreamsBuilder, records: list[tuple[str, str, str | None, int]],
          outputs: list[str]) -> dict[str, list[tuple[Any, Any]]]:
    with TopologyTestDriver(builder.build(), dict(CONFIG), initial_wall_clock_time=0) as driver:
        topics = {r[0] for r in records}
        inputs = {t: driver.create_input_topic(t, S, S) for t in topics}
        for topic, key, value, ts in records:
            inputs[topic].pipe_input(key, value, timestamp=ts)
        return {t: [(r.key, r.value) for r in
                    driver.create_output_topic(t, S, S).read_records_to_list()]
                for t in outputs}


def test_stream_value_mappers_take_the_key_when_they_have_two_parameters() -> None:
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=S)
    s.map_values(lambda k, v: f"{k}={v}").to("mapped", key_serde=S, value_serde=S)
    s.map_values(str.upper).to("plain", key_serde=S, value_serde=S)
    s.flat_map_values(lambda k, v: [k, v]).to("flat", key_serde=S, value_serde=S)
    out = drive(b, [("in", "a", "x", 1), ("in", "b", "y", 2)], ["mapped", "plain", "flat"])
    assert out["mapped"] == [("a", "a=x"), ("b", "b=y")]
    assert out["plain"] == [("a", "X"), ("b", "Y")]
    assert out["flat"] == [("a", "a"), ("a", "x"), ("b", "b"), ("b", "y")]


def test_table_map_values_with_key_and_old_values() -> None:
    b = StreamsBuilder()
    t = b.table("t", key_serde=S, value_serde=S)
    mapped = t.map_values(lambda k, v: f"{k}:{len(v)}")
    mapped.to_stream().to("out", key_serde=S, value_serde=S)
    # a group_by downstream needs old values: the key-aware mapper computes them too
    mapped.group_by(lambda k, v: (v.split(":")[1], v), key_serde=S, value_serde=S).count() \
        .to_stream().to("counts", key_serde=S, value_serde=Serdes.long())
    with TopologyTestDriver(b.build(), dict(CONFIG), initial_wall_clock_time=0) as driver:
        topic = driver.create_input_topic("t", S, S)
        for key, value in (("a", "xx"), ("b", "yy"), ("a", "zzz"), ("b", None)):
            topic.pipe_input(key, value, timestamp=1)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
        counts = driver.create_output_topic("counts", S, Serdes.long()).read_records_to_list()
    assert [(r.key, r.value) for r in out] == [("a", "a:2"), ("b", "b:2"), ("a", "a:3"),
                                               ("b", None)]
    assert [(r.key, r.value) for r in counts][-1] == ("2", 0)


def test_joiners_with_key_in_every_stream_join() -> None:
    b = StreamsBuilder()
    left = b.stream("left", key_serde=S, value_serde=S)
    right = b.stream("right", key_serde=S, value_serde=S)
    table = b.table("table", key_serde=S, value_serde=S)
    glob = b.global_table("global", key_serde=S, value_serde=S)
    window = JoinWindows.of_time_difference_with_no_grace(10)
    left.join(right, lambda k, lv, rv: f"{k}|{lv}|{rv}", window).to("ss", key_serde=S,
                                                                   value_serde=S)
    left.outer_join(right, lambda k, lv, rv: f"{k}|{lv}|{rv}", window).to("outer", key_serde=S,
                                                                         value_serde=S)
    left.left_join(table, lambda k, lv, rv: f"{k}|{lv}|{rv}").to("st", key_serde=S,
                                                                 value_serde=S)
    left.join(glob, lambda k, lv, rv: f"{k}|{lv}|{rv}",
              key_selector=lambda k, v: v).to("gt", key_serde=S, value_serde=S)
    out = drive(b, [("table", "a", "T", 0), ("global", "x", "G", 0), ("right", "a", "r", 1),
                    ("left", "a", "x", 2), ("left", "b", "y", 3), ("left", "c", "z", 100)],
                ["ss", "outer", "st", "gt"])
    assert out["ss"] == [("a", "a|x|r")]
    # "b" never matched: emitted when its window closed, through the outer store
    assert out["outer"] == [("a", "a|x|r"), ("b", "b|y|None")]
    assert out["st"] == [("a", "a|x|T"), ("b", "b|y|None"), ("c", "c|z|None")]
    assert out["gt"] == [("a", "a|x|G")]


@pytest.mark.parametrize(("build", "message"), [
    (lambda s: s.map_values(lambda a, b, c: a), "mapper(value) or as mapper(key, value)"),
    (lambda s: s.flat_map_values(lambda: []), "mapper(value) or as mapper(key, value)"),
    (lambda s: s.join(s.to_table(), lambda: 0),
     "joiner(left_value, right_value) or as joiner(key, left_value, right_value)"),
    (lambda s: s.to_table().join(s.to_table(), lambda a, b: a,
                                 foreign_key_extractor=lambda a, b, c: a),
     "foreign_key_extractor(value) or as foreign_key_extractor(key, value)"),
])
def test_arity_errors_name_both_forms(build: Any, message: str) -> None:
    b = StreamsBuilder()
    with pytest.raises(ArityError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(b.stream("in", key_serde=S, value_serde=S))


def test_foreign_key_extractor_with_key() -> None:
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    customers = b.table("customers", key_serde=S, value_serde=S)
    # the order key is "<customer>-<n>": the FK comes from the key, not the value
    orders.join(customers, lambda order, customer: f"{order}/{customer}",
                foreign_key_extractor=lambda key, value: key.split("-")[0]) \
        .to_stream().to("out", key_serde=S, value_serde=S)
    out = drive(b, [("customers", "c1", "Ann", 1), ("orders", "c1-1", "book", 2),
                    ("orders", "c2-1", "pen", 3), ("customers", "c2", "Bob", 4),
                    ("customers", "c1", "Anne", 5)], ["out"])
    assert out["out"] == [("c1-1", "book/Ann"), ("c2-1", "pen/Bob"), ("c1-1", "book/Anne")]


def test_table_joined_partitioners_route_the_internal_topics() -> None:
    calls: list[tuple[str, Any, Any]] = []

    def left_partitioner(topic: str, key: Any, value: Any, partitions: int) -> int:
        calls.append(("left", key, value))
        return 0

    def right_partitioner(topic: str, key: Any, value: Any, partitions: int) -> int:
        calls.append(("right", key, value))
        return 0

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    customers = b.table("customers", key_serde=S, value_serde=S)
    orders.left_join(customers, lambda o, c: f"{o}/{c}", foreign_key_extractor=lambda v: v,
                     table_joined=TableJoined.with_(left_partitioner, right_partitioner)
                     .with_name("orders-by-customer")) \
        .to_stream().to("out", key_serde=S, value_serde=S)
    topology = b.build()
    assert "orders-by-customer-subscription-registration-topic" in topology.internal_topics
    out = drive(b, [("customers", "c1", "Ann", 1), ("orders", "o1", "c1", 2)], ["out"])
    assert out["out"] == [("o1", "c1/Ann")]
    assert ("right", "c1", None) in calls  # typed foreign key, value None (as Kafka)
    assert ("left", "o1", None) in calls  # typed left key for the response


def test_table_joined_partitioner_needs_the_key_serde() -> None:
    b = StreamsBuilder()
    orders, customers = b.table("orders"), b.table("customers")
    with pytest.raises(ValueError, match="other_partitioner needs the right table's key serde"):
        orders.join(customers, lambda o, c: o, foreign_key_extractor=lambda v: v,
                    table_joined=TableJoined.with_other_partitioner(lambda *a: 0))


def test_branched_with_function_and_consumer() -> None:
    b = StreamsBuilder()
    seen: list[str] = []
    branches = b.stream("in", key_serde=S, value_serde=S).split("s-") \
        .branch(lambda k, v: v.startswith("a"),
                Branched.with_function(lambda ks: ks.map_values(str.upper), "upper")) \
        .branch(lambda k, v: v.startswith("b"),
                Branched.with_consumer(lambda ks: ks.to("bees", key_serde=S, value_serde=S))) \
        .branch(lambda k, v: v.startswith("c"), Branched.with_function(lambda ks: None)) \
        .default_branch(Branched.as_("rest"))
    assert sorted(branches) == ["s-rest", "s-upper"]
    branches["s-upper"].peek(lambda k, v: seen.append(v)).to("upper", key_serde=S,
                                                            value_serde=S)
    branches["s-rest"].to("rest", key_serde=S, value_serde=S)
    out = drive(b, [("in", "k", "apple", 1), ("in", "k", "bean", 2), ("in", "k", "cake", 3),
                    ("in", "k", "dill", 4)], ["upper", "bees", "rest"])
    assert out == {"upper": [("k", "APPLE")], "bees": [("k", "bean")], "rest": [("k", "dill")]}
    assert seen == ["APPLE"]
