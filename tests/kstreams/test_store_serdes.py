"""Which serdes a DSL operator's store uses when its Materialized gives none (Kafka 4.4's rules,
checked on its driver by tests/reference/dsl_cases.py ``serdes()``).

Kafka hands a filter's, map_values' or to_table's Materialized as it is to the store: no serdes
there means the configured defaults, whatever the table itself carries downstream. A source
table reads and stores with the serdes given beside its Materialized (Kafka's Consumed).
"""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, StreamsBuilder
from streams.processor.errors import HandlerFailedError
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
STRING_DEFAULTS = {"default.key.serde": "string", "default.value.serde": "string"}


def counts(builder: StreamsBuilder):
    return builder.stream("in", key_serde=S, value_serde=S).group_by_key().count()


def test_a_materialized_filter_stores_with_the_default_serdes_not_the_tables() -> None:
    builder = StreamsBuilder()
    counts(builder).filter(lambda k, v: True, Materialized("kept")).to_stream().to(
        "out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), STRING_DEFAULTS) as driver, \
            pytest.raises(HandlerFailedError, match="string serde needs str, got int"):
        driver.create_input_topic("in", S, S).pipe_input("a", "x", 1)


def test_a_materialized_filter_with_serdes_stores_with_them() -> None:
    builder = StreamsBuilder()
    counts(builder).filter(lambda k, v: True, Materialized("kept", value_serde=L)).to_stream().to(
        "out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), STRING_DEFAULTS) as driver:
        driver.create_input_topic("in", S, S).pipe_input("a", "x", 1)
        assert driver.create_output_topic("out", S, L).read_records_to_list() == [
            TestRecord("a", 1, 1)]
        assert driver.get_key_value_store("kept").get("a") == 1


def test_to_table_alone_stores_with_the_streams_serdes() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).to_table().to_stream().to(
        "out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), STRING_DEFAULTS) as driver:
        driver.create_input_topic("in", S, L).pipe_input("a", 5, 1)
        assert driver.create_output_topic("out", S, L).read_records_to_list() == [
            TestRecord("a", 5, 1)]


def test_to_table_with_a_materialized_stores_with_its_serdes_else_the_defaults() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).to_table(Materialized("t")).to_stream().to(
        "out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), STRING_DEFAULTS) as driver, \
            pytest.raises(HandlerFailedError, match="string serde needs str, got int"):
        driver.create_input_topic("in", S, L).pipe_input("a", 5, 1)


def test_a_source_table_reads_and_stores_with_the_serdes_beside_its_materialized() -> None:
    builder = StreamsBuilder()
    named = Materialized("t", key_serde=S, value_serde=S)
    builder.table("tin", key_serde=S, value_serde=L, materialized=named).to_stream().to(
        "out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), STRING_DEFAULTS) as driver:
        driver.create_input_topic("tin", S, L).pipe_input("a", 5, 1)
        assert driver.create_output_topic("out", S, L).read_records_to_list() == [
            TestRecord("a", 5, 1)]
        assert driver.get_key_value_store("t").get("a") == 5
    assert named.value_serde is S  # the caller's Materialized is left as it was


def test_an_unnamed_to_table_writes_with_the_defaults_only_once_a_join_reads_it() -> None:
    """Kafka materializes an unnamed toTable only when a join (or old values) needs it; until
    then it writes nothing, so a value the defaults cannot write passes."""
    def topology(joined: bool):
        builder = StreamsBuilder()
        table = builder.stream("in", key_serde=S, value_serde=S).map_values(len).to_table()
        table.to_stream().to("out", key_serde=S, value_serde=L)
        if joined:
            builder.stream("in2", key_serde=S, value_serde=S).left_join(
                table, lambda a, b: f"{a}|{b}").to("out2", key_serde=S, value_serde=S)
        return builder.build()

    with TopologyTestDriver(topology(False), STRING_DEFAULTS) as driver:
        driver.create_input_topic("in", S, S).pipe_input("a", "apple", 1)
        assert driver.create_output_topic("out", S, L).read_records_to_list() == [
            TestRecord("a", 5, 1)]
    with TopologyTestDriver(topology(True), STRING_DEFAULTS) as driver, \
            pytest.raises(HandlerFailedError, match="string serde needs str, got int"):
        driver.create_input_topic("in", S, S).pipe_input("a", "apple", 1)


def test_an_unnamed_materialized_gives_a_filter_its_serdes_but_no_store() -> None:
    builder = StreamsBuilder()
    kept = counts(builder).filter(lambda k, v: v > 0, Materialized(value_serde=L))
    kept.to_stream().to("out", key_serde=S)  # the filter's value serde writes the topic
    topology = builder.build()
    assert [name for name in topology.stores if "FILTER" in name] == []
    with TopologyTestDriver(topology, STRING_DEFAULTS) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 1)
        inp.pipe_input("a", "y", 2)
        assert driver.create_output_topic("out", S, L).read_records_to_list() == [
            TestRecord("a", 1, 1), TestRecord("a", 2, 2)]
