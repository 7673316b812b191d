"""KTable-KTable primary-key joins through the driver (reference §2.3, gotchas §7.3-§7.4)."""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, StreamsBuilder
from streams.dsl.joins import table_join
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
NULL = "null"
TOMBSTONE = None


def joiner(left: str | None, right: str | None) -> str:
    return f"[{'null' if left is None else left},{'null' if right is None else right}]"


def topology(kind: str, materialized: str | None = None):
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    method = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
    method(right, joiner, materialized).to_stream().to("out", key_serde=S, value_serde=S)
    return builder.build()


# (ts, left, right, inner, left join, outer); an output is a list of values (TOMBSTONE = None)
ROWS = [
    (1, NULL, None, [], [], []),
    (2, None, NULL, [], [], []),
    (3, "A", None, [], ["[A,null]"], ["[A,null]"]),
    (4, None, "a", ["[A,a]"], ["[A,a]"], ["[A,a]"]),
    (5, "B", None, ["[B,a]"], ["[B,a]"], ["[B,a]"]),
    (6, None, "b", ["[B,b]"], ["[B,b]"], ["[B,b]"]),
    (7, NULL, None, [TOMBSTONE], [TOMBSTONE], ["[null,b]"]),
    (8, None, NULL, [], [], [TOMBSTONE]),
    (9, "C", None, [], ["[C,null]"], ["[C,null]"]),
    (10, None, "c", ["[C,c]"], ["[C,c]"], ["[C,c]"]),
    (11, None, NULL, [TOMBSTONE], ["[C,null]"], ["[C,null]"]),
    (12, NULL, None, [], [TOMBSTONE], [TOMBSTONE]),
    (13, None, NULL, [], [], []),
    (14, None, "d", [], [], ["[null,d]"]),
    (15, "D", None, ["[D,d]"], ["[D,d]"], ["[D,d]"]),
]


@pytest.mark.parametrize("materialized", [None, "joined"])
@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_docs_table_row_by_row(kind: str, materialized: str | None) -> None:
    """Every row's output is timestamped with the row's ts: the other side's value, when
    present, is always older here, so max(this, other) is this record's ts."""
    column = {"inner": 3, "left": 4, "outer": 5}[kind]
    with TopologyTestDriver(topology(kind, materialized)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        for row in ROWS:
            ts, left_value, right_value = row[0], row[1], row[2]
            if left_value is not None:
                left.pipe_input("k", None if left_value == NULL else left_value, ts)
            else:
                right.pipe_input("k", None if right_value == NULL else right_value, ts)
            assert out.read_records_to_list() == [TestRecord("k", v, ts) for v in row[column]], \
                f"{kind} join, row ts={ts}"
        if materialized:
            assert driver.get_key_value_store(materialized).get("k") == "[D,d]"


@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_output_timestamp_is_the_max_while_the_other_side_has_a_value(kind: str) -> None:
    with TopologyTestDriver(topology(kind)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right.pipe_input("k", "r", 50)
        left.pipe_input("k", "L", 10)  # older than the right value: result ts 50
        right.pipe_input("k", "r2", 20)  # older than the left? no: max(20, 10) = 20
        records = out.read_records_to_list()
        expected_outer_first = [TestRecord("k", "[null,r]", 50)] if kind == "outer" else []
        assert records == expected_outer_first + [TestRecord("k", "[L,r]", 50),
                                                  TestRecord("k", "[L,r2]", 20)]
        right.pipe_input("k", None, 5)  # the other side (left@10) has a value: max(5, 10)
        after_delete = {"inner": [TestRecord("k", None, 10)],
                        "left": [TestRecord("k", "[L,null]", 10)],
                        "outer": [TestRecord("k", "[L,null]", 10)]}[kind]
        assert out.read_records_to_list() == after_delete
        if kind != "inner":
            left.pipe_input("k", "L2", 7)  # no right value: the triggering record's ts
            assert out.read_records_to_list() == [TestRecord("k", "[L2,null]", 7)]


def test_null_keys_are_ignored() -> None:
    with TopologyTestDriver(topology("outer")) as driver:
        left = driver.create_input_topic("left", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input(None, "A", 1)
        assert out.is_empty()


def test_join_of_a_non_materialized_table_and_queryable_result() -> None:
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S).map_values(str.upper)
    right = builder.table("right", key_serde=S, value_serde=S)
    joined = table_join(left, right, joiner, "left", Materialized("result"))
    assert joined.queryable_store_name() == "result"
    joined.to_stream().to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build()) as driver:
        left_in = driver.create_input_topic("left", S, S)
        right_in = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right_in.pipe_input("k", "r", 1)
        left_in.pipe_input("k", "l", 2)
        assert out.read_records_to_list() == [TestRecord("k", "[L,r]", 2)]
        assert driver.get_key_value_store("result").get("k") == "[L,r]"


def test_names_stores_and_copartitioning() -> None:
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    joined = left.join(right, joiner, Materialized())
    topo = builder.build()
    # Kafka: the store name is generated first, then MERGE, JOINTHIS, JOINOTHER
    assert joined.store_name == "KTABLE-MERGE-STATE-STORE-0000000006"
    assert joined.node == "KTABLE-MERGE-0000000007"
    assert topo.nodes["KTABLE-JOINTHIS-0000000008"].parents == ["KTABLE-SOURCE-0000000002"]
    assert topo.nodes["KTABLE-JOINOTHER-0000000009"].parents == ["KTABLE-SOURCE-0000000005"]
    assert topo.nodes[joined.node].parents == ["KTABLE-JOINTHIS-0000000008",
                                               "KTABLE-JOINOTHER-0000000009"]
    assert {"left", "right"} in topo.copartition_groups
    assert not [t for t in topo.internal_topics.values() if t.kind == "repartition"]
    assert len(topo.sub_topologies()) == 1


def test_old_values_flow_to_a_downstream_regrouping() -> None:
    """A re-grouped aggregation over a join result needs Change.old to subtract."""
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    joined = left.join(right, lambda region, amount: int(amount))
    totals = joined.group_by(lambda key, value: ("total", value),
                             key_serde=S, value_serde=Serdes.long()).reduce(
        lambda agg, v: agg + v, lambda agg, v: agg - v)
    totals.to_stream().to("out", key_serde=S, value_serde=Serdes.long())
    with TopologyTestDriver(builder.build()) as driver:
        left_in = driver.create_input_topic("left", S, S)
        right_in = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        left_in.pipe_input("a", "x", 1)
        right_in.pipe_input("a", "5", 2)
        right_in.pipe_input("a", "7", 3)
        right_in.pipe_input("a", None, 4)
        assert out.read_records_to_list() == [
            TestRecord("total", 5, 2), TestRecord("total", 7, 3), TestRecord("total", 0, 4)]
