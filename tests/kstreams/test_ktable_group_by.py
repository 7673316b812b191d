"""KTable.group_by + KGroupedTable count/reduce/aggregate (reference §1.3, §1.4)."""

from __future__ import annotations

from streams import Materialized, Serdes, StreamsBuilder
from streams.processor.api import Change
from streams.processor.table import ChangeSerde
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()

# Reference §1.4 "KGroupedTable sum, regrouped by region": (ts, user, region+amount).
REGION_INPUTS = [
    (1, "alice", "E5"), (2, "bob", "A3"), (3, "charlie", "A7"), (4, "alice", "A5"),
    (5, "charlie", None), (6, None, "E9"), (7, "bob", "E3"),
]


def by_region(user: str, value: str) -> tuple[str, int]:
    return value[0], int(value[1:])


def regional(aggregate_fn, value_serde=L):
    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    grouped = table.group_by(by_region, key_serde=S, value_serde=L)
    aggregate_fn(grouped).to_stream().to("regions", key_serde=S, value_serde=value_serde)
    return builder.build()


def pipe_regions(topology, value_serde=L, inputs=REGION_INPUTS):
    with TopologyTestDriver(topology) as driver:
        inp = driver.create_input_topic("user-regions", S, S)
        out = driver.create_output_topic("regions", S, value_serde)
        for ts, user, value in inputs:
            inp.pipe_input(user, value, ts)
        records = out.read_records_to_list()
        stores = {name: dict(store.all()) for name, store in driver.get_all_state_stores().items()}
        return records, stores


# States after each step: E5 | A3,E5 | A10,E5 | A15,E0 | A8,E0 | A8,E0 | A5,E3.
EXPECTED_SUMS = [
    TestRecord("E", 5, 1), TestRecord("A", 3, 2), TestRecord("A", 10, 3),
    TestRecord("E", 0, 4), TestRecord("A", 15, 4),  # UPDATE alice E->A: subtract first
    TestRecord("A", 8, 5),  # DELETE charlie: subtractor only
    # ts 6: null key ignored
    TestRecord("A", 5, 7), TestRecord("E", 3, 7),  # UPDATE bob A->E
]


def test_aggregate_reproduces_the_reference_regrouping_table() -> None:
    calls: list[tuple[str, str, int, int]] = []

    def adder(key: str, value: int, agg: int) -> int:
        calls.append(("add", key, value, agg))
        return agg + value

    def subtractor(key: str, value: int, agg: int) -> int:
        calls.append(("sub", key, value, agg))
        return agg - value

    topology = regional(lambda g: g.aggregate(lambda: 0, adder, subtractor,
                                              Materialized("sums", value_serde=L)))
    records, stores = pipe_regions(topology)
    assert records == EXPECTED_SUMS
    assert stores["sums"] == {"A": 5, "E": 3}
    assert calls == [
        ("add", "E", 5, 0), ("add", "A", 3, 0), ("add", "A", 7, 3),
        ("sub", "E", 5, 5), ("add", "A", 5, 10),
        ("sub", "A", 7, 15),
        ("sub", "A", 3, 8), ("add", "E", 3, 0),
    ]


def test_reduce_reproduces_the_reference_regrouping_table() -> None:
    topology = regional(lambda g: g.reduce(lambda agg, v: agg + v, lambda agg, v: agg - v,
                                           "sums"))
    records, stores = pipe_regions(topology)
    assert records == EXPECTED_SUMS
    assert stores["sums"] == {"A": 5, "E": 3}


def test_count_adds_and_subtracts() -> None:
    topology = regional(lambda g: g.count("counts"))
    records, stores = pipe_regions(topology)
    assert records == [
        TestRecord("E", 1, 1), TestRecord("A", 1, 2), TestRecord("A", 2, 3),
        TestRecord("E", 0, 4), TestRecord("A", 3, 4), TestRecord("A", 2, 5),
        TestRecord("A", 1, 7), TestRecord("E", 1, 7),
    ]
    assert stores["counts"] == {"A": 1, "E": 1}


def test_same_key_update_is_one_update_without_an_intermediate_result() -> None:
    """KIP-904: alice E5 -> E7 stays in region E: one output, subtract then add."""
    calls: list[tuple[str, int, int]] = []

    def adder(key: str, value: int, agg: int) -> int:
        calls.append(("add", value, agg))
        return agg + value

    def subtractor(key: str, value: int, agg: int) -> int:
        calls.append(("sub", value, agg))
        return agg - value

    topology = regional(lambda g: g.aggregate(lambda: 0, adder, subtractor, "sums"))
    records, _ = pipe_regions(topology, inputs=[(1, "alice", "E5"), (2, "bob", "E1"),
                                                (3, "alice", "E7")])
    assert records == [TestRecord("E", 5, 1), TestRecord("E", 6, 2), TestRecord("E", 8, 3)]
    assert calls == [("add", 5, 0), ("add", 1, 5), ("sub", 5, 6), ("add", 7, 1)]


def test_subtractor_returning_none_removes_the_key_and_initializer_runs_again() -> None:
    inits: list[int] = []

    def init() -> list:
        inits.append(1)
        return []

    def adder(key, value, agg):
        return [*agg, value]

    def subtractor(key, value, agg):
        rest = [v for v in agg if v != value]
        return rest or None

    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    lists = table.group_by(by_region, key_serde=S, value_serde=L).aggregate(
        init, adder, subtractor, Materialized("lists", value_serde=Serdes.json()))
    lists.to_stream().to("regions", key_serde=S, value_serde=Serdes.json())
    records, stores = pipe_regions(builder.build(), Serdes.json(), inputs=[
        (1, "alice", "E5"), (2, "alice", "A5"), (3, "bob", "E3")])
    assert records == [TestRecord("E", [5], 1), TestRecord("E", None, 2),
                       TestRecord("A", [5], 2), TestRecord("E", [3], 3)]
    assert stores["lists"] == {"A": [5], "E": [3]}
    assert len(inits) == 3  # E, A, and E again after its delete


def test_null_new_key_drops_the_add_but_still_subtracts() -> None:
    def mapper(user, value):
        return (None if value.startswith("X") else value[0]), int(value[1:])

    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    table.group_by(mapper, key_serde=S, value_serde=L).count("counts") \
        .to_stream().to("regions", key_serde=S, value_serde=L)
    records, stores = pipe_regions(builder.build(), inputs=[
        (1, "alice", "E5"), (2, "alice", "X1"), (3, "bob", "X2")])
    assert records == [TestRecord("E", 1, 1), TestRecord("E", 0, 2)]
    assert stores["counts"] == {"E": 0}


def test_group_by_of_a_filtered_table_subtracts_filtered_out_values() -> None:
    """Old values reach the re-keying node through a non-materialized filter."""
    mapper_calls: list[str] = []

    def mapper(value: str) -> str:
        mapper_calls.append(value)
        return value

    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    table.map_values(mapper).filter(lambda user, v: int(v[1:]) < 100) \
        .group_by(by_region, key_serde=S, value_serde=L) \
        .aggregate(lambda: 0, lambda k, v, a: a + v, lambda k, v, a: a - v, "sums") \
        .to_stream().to("regions", key_serde=S, value_serde=L)
    records, stores = pipe_regions(builder.build(), inputs=[
        (1, "alice", "E5"), (2, "bob", "E7"), (3, "alice", "E500"), (4, "bob", None)])
    assert records == [TestRecord("E", 5, 1), TestRecord("E", 12, 2), TestRecord("E", 7, 3),
                       TestRecord("E", 0, 4)]
    assert stores["sums"] == {"E": 0}
    assert mapper_calls == ["E5", "E7", "E500", "E5", "E7"]  # new, plus old where needed


def test_group_by_always_repartitions_with_kafka_names() -> None:
    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    table.group_by(by_region).count()
    subs = builder.build().sub_topologies()
    assert [s.nodes for s in subs] == [
        ["KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "KTABLE-SELECT-0000000003",
         "KSTREAM-SINK-0000000005"],
        ["KSTREAM-SOURCE-0000000006", "KTABLE-AGGREGATE-0000000007"],
    ]
    assert subs[0].sink_topics == ["KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition"]
    assert subs[1].stores == ["KTABLE-AGGREGATE-STATE-STORE-0000000004"]
    topics = builder.build().internal_topics
    assert topics["KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition"].kind == "repartition"


def test_group_by_without_serdes_uses_internal_formats() -> None:
    builder = StreamsBuilder()
    table = builder.table("user-regions", key_serde=S, value_serde=S)
    table.group_by(lambda user, v: (v[0], (user, int(v[1:])))).aggregate(
        dict, lambda k, v, agg: {**agg, v[0]: v[1]},
        lambda k, v, agg: {u: n for u, n in agg.items() if u != v[0]}, "who")
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("user-regions", S, S)
        inp.pipe_input("alice", "E5", 1)
        inp.pipe_input("bob", "E3", 2)
        inp.pipe_input("alice", "A1", 3)
        assert dict(driver.get_key_value_store("who").all()) == {
            "A": {"alice": 1}, "E": {"bob": 3}}
        app = driver.application_id
        assert f"{app}-who-repartition" in driver.produced_topic_names()


def test_change_serde_round_trips_every_shape() -> None:
    serde = ChangeSerde(L)
    for change in (Change(1, 2), Change(1, None), Change(None, 2), Change(None, None),
                   Change(0, 0)):
        assert serde.deserialize("t", serde.serialize("t", change)) == change
