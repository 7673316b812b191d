"""KGroupedStream.cogroup -> CogroupedKStream.aggregate (reference §1.4)."""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows
from streams.testing import TestRecord, TopologyTestDriver

S, L, J = Serdes.string(), Serdes.long(), Serdes.json()


def customer_topology(*, rekey_clicks: bool = False):
    builder = StreamsBuilder()
    clicks = builder.stream("clicks", key_serde=S, value_serde=L)
    views = builder.stream("views", key_serde=S, value_serde=L)
    if rekey_clicks:
        clicks = clicks.select_key(lambda k, v: k.upper())
    profile = (clicks.group_by_key()
               .cogroup(lambda k, v, agg: {**agg, "clicks": agg["clicks"] + v})
               .cogroup(views.group_by_key(), lambda k, v, agg: {**agg, "views": agg["views"] + v})
               .aggregate(lambda: {"clicks": 0, "views": 0},
                          Materialized("profile", value_serde=J)))
    profile.to_stream().to("profiles", key_serde=S, value_serde=J)
    return builder.build()


def test_inputs_share_one_aggregate_with_their_own_aggregators() -> None:
    with TopologyTestDriver(customer_topology()) as driver:
        clicks = driver.create_input_topic("clicks", S, L)
        views = driver.create_input_topic("views", S, L)
        out = driver.create_output_topic("profiles", S, J)
        clicks.pipe_input("ann", 2, 10)
        views.pipe_input("ann", 5, 5)
        views.pipe_input("bo", 1, 20)
        clicks.pipe_input("ann", 1, 30)
        clicks.pipe_input("ann", None, 40)  # null values are skipped
        clicks.pipe_input(None, 1, 50)  # so are null keys
        assert out.read_records_to_list() == [
            TestRecord("ann", {"clicks": 2, "views": 0}, 10),
            TestRecord("ann", {"clicks": 2, "views": 5}, 10),  # max ts of contributors
            TestRecord("bo", {"clicks": 0, "views": 1}, 20),
            TestRecord("ann", {"clicks": 3, "views": 5}, 30),
        ]
        assert dict(driver.get_key_value_store("profile").all()) == {
            "ann": {"clicks": 3, "views": 5}, "bo": {"clicks": 0, "views": 1}}


def test_one_store_one_sub_topology_and_kafka_names() -> None:
    subs = customer_topology().sub_topologies()
    assert len(subs) == 1
    assert subs[0].stores == ["profile"]
    assert subs[0].nodes == [
        "KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001",
        "COGROUPKSTREAM-AGGREGATE-0000000002", "COGROUPKSTREAM-AGGREGATE-0000000003",
        "COGROUPKSTREAM-MERGE-0000000004", "KTABLE-TOSTREAM-0000000005",
        "KSTREAM-SINK-0000000006",
    ]


def test_only_rekeyed_inputs_are_repartitioned() -> None:
    topology = customer_topology(rekey_clicks=True)
    assert [t for t, d in topology.internal_topics.items() if d.kind == "repartition"] == [
        "profile-repartition"]
    with TopologyTestDriver(topology) as driver:
        clicks = driver.create_input_topic("clicks", S, L)
        views = driver.create_input_topic("views", S, L)
        out = driver.create_output_topic("profiles", S, J)
        clicks.pipe_input("ann", 2, 1)
        views.pipe_input("ANN", 4, 2)
        assert out.read_key_values_to_list() == [
            ("ANN", {"clicks": 2, "views": 0}), ("ANN", {"clicks": 2, "views": 4})]


def test_adding_the_same_grouped_stream_twice_is_rejected() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("s").group_by_key()
    cogrouped = grouped.cogroup(lambda k, v, a: a)
    with pytest.raises(ValueError, match="already"):
        cogrouped.cogroup(grouped, lambda k, v, a: a)


# -- windowed cogroups ---------------------------------------------------------------------------


def windowed_topology(windows, *, session: bool = False):
    builder = StreamsBuilder()
    a = builder.stream("a", key_serde=S, value_serde=L).group_by_key()
    b = builder.stream("b", key_serde=S, value_serde=L).group_by_key()
    cogrouped = a.cogroup(lambda k, v, agg: agg + v).cogroup(b, lambda k, v, agg: agg - v) \
        .windowed_by(windows)
    if session:
        table = cogrouped.aggregate(lambda: 0, lambda k, x, y: x + y, Materialized("w"))
    else:
        table = cogrouped.aggregate(lambda: 0, Materialized("w"))
    table.to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}-{wk.window.end}") \
        .to("out", key_serde=S, value_serde=L)
    return builder.build()


def test_time_windowed_cogroup_shares_one_window_store() -> None:
    topology = windowed_topology(TimeWindows.of_size_and_grace(10, 20))
    assert len(topology.sub_topologies()) == 1
    with TopologyTestDriver(topology) as driver:
        a = driver.create_input_topic("a", S, L)
        b = driver.create_input_topic("b", S, L)
        out = driver.create_output_topic("out", S, L)
        a.pipe_input("k", 5, 1)
        b.pipe_input("k", 2, 4)
        a.pipe_input("k", 1, 12)
        b.pipe_input("k", 7, 3)  # out of order, within grace
        assert out.read_records_to_list() == [
            TestRecord("k@0-10", 5, 1), TestRecord("k@0-10", 3, 4),
            TestRecord("k@10-20", 1, 12), TestRecord("k@0-10", -4, 4)]
        store = driver.get_window_store("w")
        assert [v for _, v in store.fetch("k", 0, 20)] == [-4, 1]


def test_session_windowed_cogroup_merges_sessions() -> None:
    topology = windowed_topology(SessionWindows.of_inactivity_gap_with_no_grace(5), session=True)
    with TopologyTestDriver(topology) as driver:
        a = driver.create_input_topic("a", S, L)
        b = driver.create_input_topic("b", S, L)
        out = driver.create_output_topic("out", S, L)
        a.pipe_input("k", 10, 1)
        b.pipe_input("k", 3, 4)
        assert out.read_records_to_list() == [
            TestRecord("k@1-1", 10, 1), TestRecord("k@1-1", None, 1),
            TestRecord("k@1-4", 7, 4)]


def test_windowed_by_rejects_other_things() -> None:
    cogrouped = StreamsBuilder().stream("s").group_by_key().cogroup(lambda k, v, a: a)
    with pytest.raises(TypeError):
        cogrouped.windowed_by(10)
