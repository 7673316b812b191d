"""KTable filter / filter_not / map_values / to_stream (reference §1.3) through the driver."""

from __future__ import annotations

import sys
import types

import pytest

from streams import Materialized, Serdes, StreamsBuilder
from streams.dsl.ktable import KTable
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def table_topology(build):
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    build(table).to_stream().to("out", key_serde=S, value_serde=L)
    return builder.build()


def run(topology, records):
    with TopologyTestDriver(topology) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        return out.read_records_to_list()


def test_filter_forwards_failing_updates_as_tombstones() -> None:
    topology = table_topology(lambda t: t.filter(lambda k, v: v > 5))
    assert run(topology, [("a", 1, 10), ("b", 10, 5), ("b", 2, 8), ("c", 7, 14)]) == [
        TestRecord("a", None, 10), TestRecord("b", 10, 5), TestRecord("b", None, 8),
        TestRecord("c", 7, 14),
    ]


def test_filter_not_is_the_negation() -> None:
    topology = table_topology(lambda t: t.filter_not(lambda k, v: v > 5))
    assert run(topology, [("a", 1, 1), ("b", 10, 2)]) == [
        TestRecord("a", 1, 1), TestRecord("b", None, 2)]


def test_filter_of_an_unnamed_source_forwards_every_tombstone() -> None:
    """Kafka's KTableFilter drops an update that was and stays filtered out only when it sends
    old values; an unnamed source table does not offer them (tests/reference/test_dsl_diff)."""
    calls: list[tuple[str, int]] = []

    def predicate(key: str, value: int) -> bool:
        calls.append((key, value))
        return value > 5

    topology = table_topology(lambda t: t.filter(predicate))
    out = run(topology, [
        ("a", 10, 1), ("a", None, 2),  # a was in the filtered table: delete forwarded
        ("b", 1, 3), ("b", None, 4),  # b was filtered out: forwarded all the same
        ("c", None, 5),  # c never existed: forwarded all the same
    ])
    assert out == [TestRecord("a", 10, 1), TestRecord("a", None, 2), TestRecord("b", None, 3),
                   TestRecord("b", None, 4), TestRecord("c", None, 5)]
    assert all(value is not None for _, value in calls)  # never called with a tombstone


def test_filter_of_a_named_source_drops_what_stays_filtered_out() -> None:
    """A materialized parent offers old values (Kafka: enableSendingOldValues(false)), so an
    update out of the filtered table before and after is not forwarded."""
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L, materialized="source")
    table.filter(lambda k, v: v > 5).to_stream().to("out", key_serde=S, value_serde=L)
    out = run(builder.build(), [("a", 10, 1), ("a", None, 2), ("b", 1, 3), ("b", None, 4),
                                ("c", None, 5), ("d", 1, 6), ("d", 8, 7), ("d", 2, 8)])
    assert out == [TestRecord("a", 10, 1), TestRecord("a", None, 2), TestRecord("d", 8, 7),
                   TestRecord("d", None, 8)]


def test_materialized_filter_is_queryable_and_deletes_filtered_keys() -> None:
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    big = table.filter(lambda k, v: v > 5, Materialized("big"))
    assert big.queryable_store_name() == "big"
    big.to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("a", 10, 1)
        inp.pipe_input("b", 20, 2)
        inp.pipe_input("a", 3, 3)
        store = driver.get_key_value_store("big")
        assert dict(store.all()) == {"b": 20}
        assert store.get_with_timestamp("b") == (20, 2)
        inp.pipe_input("b", None, 4)
        assert dict(store.all()) == {}
        assert out.read_key_values_to_list() == [("a", 10), ("b", 20), ("a", None), ("b", None)]


def test_filter_without_materialized_is_not_queryable() -> None:
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    assert table.filter(lambda k, v: True).queryable_store_name() is None


def test_materialized_with_serdes_only_spends_a_store_name_but_stores_nothing() -> None:
    """Kafka's KTableImpl#doFilter: "only materialize if materialized is specified and it has
    queryable name"; the generated store name still spends counter value 3."""
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    filtered = table.filter(lambda k, v: True, Materialized(value_serde=L))
    assert filtered.queryable_store_name() is None
    assert filtered.node == "KTABLE-FILTER-0000000004"
    assert "KTABLE-FILTER-STATE-STORE-0000000003" not in builder.build().stores


def test_map_values_skips_the_mapper_on_tombstones() -> None:
    seen: list[int] = []

    def double(value: int) -> int:
        seen.append(value)
        return value * 2

    topology = table_topology(lambda t: t.map_values(double))
    assert run(topology, [("a", 1, 1), ("a", 2, 2), ("a", None, 3)]) == [
        TestRecord("a", 2, 1), TestRecord("a", 4, 2), TestRecord("a", None, 3)]
    assert seen == [1, 2]  # once per update: nobody downstream needs old values


def test_materialized_map_values_is_queryable() -> None:
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    table.map_values(lambda v: f"v{v}", Materialized("labels", value_serde=S))
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        inp.pipe_input("a", 1, 1)
        inp.pipe_input("b", 2, 2)
        inp.pipe_input("a", None, 3)
        assert dict(driver.get_key_value_store("labels").all()) == {"b": "v2"}


def test_chained_table_operators_keep_timestamps() -> None:
    topology = table_topology(
        lambda t: t.map_values(lambda v: v * 10).filter(lambda k, v: v >= 50))
    assert run(topology, [("a", 7, 100), ("b", 1, 50)]) == [
        TestRecord("a", 70, 100), TestRecord("b", None, 50)]


def test_to_stream_with_a_mapper_changes_the_key_and_marks_repartition() -> None:
    builder = StreamsBuilder()
    table = builder.table("in", key_serde=S, value_serde=L)
    stream = table.to_stream(lambda k, v: f"{k}:{v}")
    assert stream.repartition_required
    counts = stream.group_by_key(key_serde=S, value_serde=L).count()
    counts.to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("a", 1, 5)
        inp.pipe_input("b", 1, 6)
        inp.pipe_input("a", 1, 7)
        assert out.read_records_to_list() == [
            TestRecord("a:1", 1, 5), TestRecord("b:1", 1, 6), TestRecord("a:1", 2, 7)]


def test_table_to_stream_round_trip_keeps_tombstones() -> None:
    """Kafka's KTableSource forwards a delete even for a key it does not hold."""
    topology = table_topology(lambda t: t)
    assert run(topology, [("a", 1, 1), ("a", None, 2), ("a", None, 3)]) == [
        TestRecord("a", 1, 1), TestRecord("a", None, 2), TestRecord("a", None, 3)]


# -- joins and suppress are thin delegations to their own modules ------------------------------


@pytest.fixture
def fake_modules(monkeypatch):
    calls: list[tuple] = []
    joins = types.ModuleType("streams.dsl.joins")
    joins.table_join = lambda *args: calls.append(("table_join", *args)) or "joined"
    fk = types.ModuleType("streams.dsl.fk_join")
    fk.foreign_key_join = lambda *args, **options: calls.append(("fk", *args)) or "fk-joined"
    suppress = types.ModuleType("streams.dsl.suppress")
    suppress.suppress_table = lambda *args: calls.append(("suppress", *args)) or "suppressed"
    for name, module in (("joins", joins), ("fk_join", fk), ("suppress", suppress)):
        monkeypatch.setitem(sys.modules, f"streams.dsl.{name}", module)
    return calls


def test_table_joins_delegate_with_kind_and_materialized(fake_modules) -> None:
    builder = StreamsBuilder()
    left: KTable = builder.table("l")
    right: KTable = builder.table("r")
    joiner = lambda a, b: (a, b)  # noqa: E731
    assert left.join(right, joiner) == "joined"
    assert left.left_join(right, joiner, "store") == "joined"
    assert left.outer_join(right, joiner, materialized="o") == "joined"
    assert fake_modules == [("table_join", left, right, joiner, "inner", None),
                            ("table_join", left, right, joiner, "left", "store"),
                            ("table_join", left, right, joiner, "outer", "o")]
    assert left.send_old_values and right.send_old_values


def test_foreign_key_joins_delegate(fake_modules) -> None:
    builder = StreamsBuilder()
    left, right = builder.table("l"), builder.table("r")
    joiner, extract = (lambda a, b: a), (lambda v: v)
    assert left.join(right, joiner, foreign_key_extractor=extract) == "fk-joined"
    assert left.left_join(right, joiner, "m", foreign_key_extractor=extract) == "fk-joined"
    assert fake_modules == [("fk", left, right, extract, joiner, "inner", None),
                            ("fk", left, right, extract, joiner, "left", "m")]


def test_suppress_delegates(fake_modules) -> None:
    table = StreamsBuilder().table("t")
    marker = object()
    assert table.suppress(marker) == "suppressed"
    assert fake_modules == [("suppress", table, marker)]


def test_old_values_request_travels_up_through_unmaterialized_tables() -> None:
    builder = StreamsBuilder()
    source = builder.table("in")
    mapped = source.map_values(lambda v: v)
    stored = mapped.filter(lambda k, v: True, "stored")
    top = stored.map_values(lambda v: v)
    top.enable_sending_old_values()
    assert top.send_old_values and stored.send_old_values
    assert not mapped.send_old_values  # "stored" reads old values from its own store
    assert source.send_old_values is False
