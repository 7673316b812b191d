"""KStream-KTable and KStream-GlobalKTable joins through the driver (reference §2.2, §2.5)."""

from __future__ import annotations

import pytest

from streams import Serdes, StreamsBuilder
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
NULL = "null"


def joiner(left: str | None, right: str | None) -> str:
    return f"[{'null' if left is None else left},{'null' if right is None else right}]"


def stream_table_topology(kind: str):
    builder = StreamsBuilder()
    stream = builder.stream("stream", key_serde=S, value_serde=S)
    table = builder.table("table", key_serde=S, value_serde=S)
    joined = stream.join(table, joiner) if kind == "inner" else stream.left_join(table, joiner)
    joined.to("out", key_serde=S, value_serde=S)
    return builder.build()


# (ts, stream value, table value, inner, left): outputs are joiner results, all at the stream
# record's ts; key "k" everywhere; "null" inputs are None values (table tombstones).
ROWS = [
    (1, NULL, None, [], []),
    (2, None, NULL, [], []),
    (3, "A", None, [], ["[A,null]"]),
    (4, None, "a", [], []),
    (5, "B", None, ["[B,a]"], ["[B,a]"]),
    (6, None, "b", [], []),
    (7, NULL, None, [], []),
    (8, None, NULL, [], []),
    (9, "C", None, [], ["[C,null]"]),
    (10, None, "c", [], []),
    (11, None, NULL, [], []),
    (12, NULL, None, [], []),
    (13, None, NULL, [], []),
    (14, None, "d", [], []),
    (15, "D", None, ["[D,d]"], ["[D,d]"]),
]


@pytest.mark.parametrize("kind", ["inner", "left"])
def test_docs_table_row_by_row(kind: str) -> None:
    column = 3 if kind == "inner" else 4
    with TopologyTestDriver(stream_table_topology(kind)) as driver:
        stream = driver.create_input_topic("stream", S, S)
        table = driver.create_input_topic("table", S, S)
        out = driver.create_output_topic("out", S, S)
        for row in ROWS:
            ts, stream_value, table_value = row[0], row[1], row[2]
            if stream_value is not None:
                stream.pipe_input("k", None if stream_value == NULL else stream_value, ts)
            else:
                table.pipe_input("k", None if table_value == NULL else table_value, ts)
            assert out.read_records_to_list() == [TestRecord("k", v, ts) for v in row[column]], \
                f"{kind} join, row ts={ts}"


def test_output_timestamp_is_the_stream_records_even_if_the_table_is_newer() -> None:
    with TopologyTestDriver(stream_table_topology("inner")) as driver:
        stream = driver.create_input_topic("stream", S, S)
        table = driver.create_input_topic("table", S, S)
        out = driver.create_output_topic("out", S, S)
        table.pipe_input("k", "t", 100)
        stream.pipe_input("k", "s", 50, headers=[("h", b"1")])
        assert out.read_records_to_list() == [TestRecord("k", "[s,t]", 50, [("h", b"1")])]


@pytest.mark.parametrize("kind,expected", [
    ("inner", []),
    ("left", [TestRecord(None, "[v,null]", 5)]),
])
def test_null_stream_key(kind: str, expected: list[TestRecord]) -> None:
    """KIP-962: a left join passes a null-key record through with a null table side."""
    with TopologyTestDriver(stream_table_topology(kind)) as driver:
        stream = driver.create_input_topic("stream", S, S)
        out = driver.create_output_topic("out", S, S)
        stream.pipe_input(None, "v", 5)
        stream.pipe_input(None, None, 6)
        assert out.read_records_to_list() == expected


def test_changed_key_is_repartitioned_and_copartitioned_with_the_table() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("stream", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    table = builder.table("table", key_serde=S, value_serde=S)
    stream.join(table, joiner).to("out", key_serde=S, value_serde=S)
    topo = builder.build()
    assert "KSTREAM-KEY-SELECT-0000000001-repartition" in topo.internal_topics
    assert {"KSTREAM-KEY-SELECT-0000000001-repartition", "table"} in topo.copartition_groups
    subs = topo.sub_topologies()
    assert [s.source_topics for s in subs] == [
        ["stream"], ["table", "KSTREAM-KEY-SELECT-0000000001-repartition"]]
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        stream_in = driver.create_input_topic("stream", S, S)
        table_in = driver.create_input_topic("table", S, S)
        out = driver.create_output_topic("out", S, S)
        table_in.pipe_input("blue", "B", 1)
        stream_in.pipe_input("x", "blue", 2)
        assert out.read_records_to_list() == [TestRecord("blue", "[blue,B]", 2)]
        assert "app-KSTREAM-KEY-SELECT-0000000001-repartition" in driver.produced_topic_names()


def test_unchanged_key_is_not_repartitioned() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("stream", key_serde=S, value_serde=S).map_values(str.upper)
    table = builder.table("table", key_serde=S, value_serde=S)
    stream.left_join(table, joiner, name="enrich").to("out", key_serde=S, value_serde=S)
    topo = builder.build()
    assert not [t for t in topo.internal_topics.values() if t.kind == "repartition"]
    assert "enrich" in topo.nodes
    assert {"stream", "table"} in topo.copartition_groups


def test_a_table_without_store_is_materialized_for_the_join() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("stream", key_serde=S, value_serde=S)
    table = builder.table("table", key_serde=S, value_serde=S).filter(lambda k, v: v != "no")
    assert table.store_name is None
    stream.join(table, joiner).to("out", key_serde=S, value_serde=S)
    topo = builder.build()
    with TopologyTestDriver(topo) as driver:
        stream_in = driver.create_input_topic("stream", S, S)
        table_in = driver.create_input_topic("table", S, S)
        out = driver.create_output_topic("out", S, S)
        table_in.pipe_input("k", "yes", 1)
        stream_in.pipe_input("k", "s1", 2)
        table_in.pipe_input("k", "no", 3)  # filtered out: a tombstone in the filtered table
        stream_in.pipe_input("k", "s2", 4)
        assert out.read_records_to_list() == [TestRecord("k", "[s1,yes]", 2)]


def test_stream_table_outer_join_is_rejected() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("stream")
    with pytest.raises(TypeError, match="outer"):
        stream.outer_join(builder.table("table"), joiner)


# -- KStream-GlobalKTable (§2.5) ----------------------------------------------------------------


def global_topology(kind: str):
    builder = StreamsBuilder()
    stream = builder.stream("orders", key_serde=S, value_serde=S)
    customers = builder.global_table("customers", key_serde=S, value_serde=S)

    def customer_of(key: str | None, value: str) -> str | None:
        _, _, customer = value.partition("@")
        return customer or None

    join = stream.join if kind == "inner" else stream.left_join
    join(customers, joiner, key_selector=customer_of).to("out", key_serde=S, value_serde=S)
    return builder.build()


@pytest.mark.parametrize("kind", ["inner", "left"])
def test_global_table_lookup_by_key_selector(kind: str) -> None:
    with TopologyTestDriver(global_topology(kind)) as driver:
        orders = driver.create_input_topic("orders", S, S)
        customers = driver.create_input_topic("customers", S, S)
        out = driver.create_output_topic("out", S, S)
        customers.pipe_input("alice", "Alice", 100)  # no time synchronisation: ts irrelevant
        orders.pipe_input("o1", "book@alice", 1)
        orders.pipe_input("o2", "pen@bob", 2)
        orders.pipe_input("o3", None, 3)  # null values are ignored
        customers.pipe_input("alice", None, 4)  # table updates never trigger
        orders.pipe_input("o4", "ink@alice", 5)
        expected = [TestRecord("o1", "[book@alice,Alice]", 1)]
        if kind == "left":
            expected += [TestRecord("o2", "[pen@bob,null]", 2),
                         TestRecord("o4", "[ink@alice,null]", 5)]
        assert out.read_records_to_list() == expected


@pytest.mark.parametrize("kind,expected", [
    ("inner", []),
    ("left", [TestRecord("o1", "[nobody,null]", 1), TestRecord(None, "[x@alice,Alice]", 2)]),
])
def test_global_table_null_selector_result_and_null_key(kind: str,
                                                        expected: list[TestRecord]) -> None:
    """Inner: null keys and null selector results are ignored; left: the selector decides and
    a null result joins with None (reference §2.5)."""
    with TopologyTestDriver(global_topology(kind)) as driver:
        orders = driver.create_input_topic("orders", S, S)
        customers = driver.create_input_topic("customers", S, S)
        out = driver.create_output_topic("out", S, S)
        customers.pipe_input("alice", "Alice", 0)
        orders.pipe_input("o1", "nobody", 1)
        orders.pipe_input(None, "x@alice", 2)
        assert out.read_records_to_list() == expected


def test_global_table_join_never_repartitions() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("orders", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    customers = builder.global_table("customers", key_serde=S, value_serde=S)
    joined = stream.join(customers, joiner, key_selector=lambda k, v: v)
    topo = builder.build()
    assert not [t for t in topo.internal_topics.values() if t.kind == "repartition"]
    assert joined.repartition_required  # the mark passes through to later operators
    assert joined.node == "KSTREAM-LEFTJOIN-0000000005"  # Kafka's name, inner join too
    assert topo.copartition_groups == []


def test_global_table_join_needs_a_key_selector() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("orders")
    with pytest.raises(TypeError, match="key_selector"):
        stream.join(builder.global_table("customers"), joiner)


def test_copartitioning_is_enforced_and_repartition_topics_follow_the_table() -> None:
    from streams.runtime.topics import CopartitionError, plan_layout

    with pytest.raises(CopartitionError):
        plan_layout(stream_table_topology("inner"), "app", {"stream": 2, "table": 3})
    builder = StreamsBuilder()
    stream = builder.stream("stream", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    stream.join(builder.table("table", key_serde=S, value_serde=S), joiner)
    layout = plan_layout(builder.build(), "app", {"stream": 2, "table": 3})
    assert layout.partitions["app-KSTREAM-KEY-SELECT-0000000001-repartition"] == 3
