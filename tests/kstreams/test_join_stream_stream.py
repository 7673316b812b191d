"""KStream-KStream windowed joins through the TopologyTestDriver (reference §2.1, §1.6, §7).

The docs table uses one key, a join window of 15 and a grace of 5. Rows 60/80/100 follow the
reference's corrected (strict ``>``) rows, not the docs' off-by-one ones.
"""

from __future__ import annotations

import pytest

from streams import JoinWindows, Serdes, StreamsBuilder
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()


def joiner(left: str | None, right: str | None) -> str:
    return f"[{'null' if left is None else left},{'null' if right is None else right}]"


def topology(kind: str, windows: JoinWindows | None = None):
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    windows = windows or JoinWindows.of_time_difference_and_grace(15, 5)
    joined = getattr(left, {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind])(
        right, joiner, windows)
    joined.to("out", key_serde=S, value_serde=S)
    return builder.build()


# (ts, left value, right value, inner, left, outer); outputs are (value, ts); "null" inputs
# are records with a None value; all records have key "k".
NULL = "null"
ROWS = [
    (1, NULL, None, [], [], []),
    (2, None, NULL, [], [], []),
    (3, "A", None, [], [], []),
    (4, None, "a", [("[A,a]", 4)], [("[A,a]", 4)], [("[A,a]", 4)]),
    (5, "B", None, [("[B,a]", 5)], [("[B,a]", 5)], [("[B,a]", 5)]),
    (6, None, "b", [("[A,b]", 6), ("[B,b]", 6)], "same", "same"),
    (7, NULL, None, [], [], []),
    (8, None, NULL, [], [], []),
    (9, "C", None, [("[C,a]", 9), ("[C,b]", 9)], "same", "same"),
    (10, None, "c", [("[A,c]", 10), ("[B,c]", 10), ("[C,c]", 10)], "same", "same"),
    (11, None, NULL, [], [], []),
    (12, NULL, None, [], [], []),
    (13, None, NULL, [], [], []),
    (14, None, "d", [("[A,d]", 14), ("[B,d]", 14), ("[C,d]", 14)], "same", "same"),
    (15, "D", None, [("[D,a]", 15), ("[D,b]", 15), ("[D,c]", 15), ("[D,d]", 15)],
     "same", "same"),
    (40, "E", None, [], [], []),
    # corrected rows: E@40 closes only once ST > 40 + 15 + 5
    (60, "F", None, [], [], []),
    (80, None, "f", [], [("[E,null]", 40)], [("[E,null]", 40)]),
    (100, "G", None, [], [("[F,null]", 60)], [("[F,null]", 60)]),
]


def _value(cell: str | None) -> str | None:
    return None if cell == NULL else cell


@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_docs_table_row_by_row(kind: str) -> None:
    column = {"inner": 3, "left": 4, "outer": 5}[kind]
    with TopologyTestDriver(topology(kind)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        for row in ROWS:
            ts, left_value, right_value = row[0], row[1], row[2]
            expected = row[column]
            if expected == "same":
                expected = row[3]
            if left_value is not None:
                left.pipe_input("k", _value(left_value), ts)
            else:
                right.pipe_input("k", _value(right_value), ts)
            got = [(r.value, r.timestamp) for r in out.read_records_to_list()]
            assert got == expected, f"{kind} join, row ts={ts}"


def test_outer_right_record_is_emitted_once_stream_time_passes_its_window() -> None:
    """[null,f] (f@80, before 15, grace 5) is held at ST=100 and emitted at ST=101."""
    with TopologyTestDriver(topology("outer")) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("k", "F", 60)
        right.pipe_input("k", "f", 80)
        left.pipe_input("k", "G", 100)
        assert out.read_records_to_list() == [TestRecord("k", "[F,null]", 60)]
        left.pipe_input("x", "H", 101)
        assert out.read_records_to_list() == [TestRecord("k", "[null,f]", 80)]


def test_non_joined_results_come_out_in_time_side_key_order() -> None:
    """Held records leave the outer store in <ts, side (right first), key> order."""
    windows = JoinWindows.of_time_difference_with_no_grace(10)
    with TopologyTestDriver(topology("outer", windows)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("b", "Lb", 5)
        left.pipe_input("a", "La", 5)
        right.pipe_input("c", "Rc", 5)
        right.pipe_input("d", "Rd", 3)
        assert out.is_empty()
        left.pipe_input("z", "Lz", 16)  # ST 16 > 5 + 10 + 0
        assert out.read_records_to_list() == [
            TestRecord("d", "[null,Rd]", 3),
            TestRecord("c", "[null,Rc]", 5),
            TestRecord("a", "[La,null]", 5),
            TestRecord("b", "[Lb,null]", 5),
        ]


def test_asymmetric_window_uses_before_for_right_records() -> None:
    """Kafka's testEmitAllNonJoinedResultsForAsymmetricWindow: right @31 with before=5,
    grace 0 is held at ST=36 and emitted at ST=37."""
    windows = JoinWindows.of_time_difference_with_no_grace(0).before(5)
    with TopologyTestDriver(topology("outer", windows)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right.pipe_input("k", "r31", 31)
        left.pipe_input("other", "x", 36)
        assert out.is_empty()
        left.pipe_input("other", "y", 37)
        assert [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()] == [
            ("k", "[null,r31]", 31), ("other", "[x,null]", 36)]


def test_join_window_bounds_are_inclusive_and_directional() -> None:
    """left.ts - before <= right.ts <= left.ts + after."""
    windows = JoinWindows.of_time_difference_with_no_grace(0).before(3).after(5)
    with TopologyTestDriver(topology("inner", windows)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("k", "L", 100)
        for ts in (96, 97, 105, 106):
            right.pipe_input("k", f"r{ts}", ts)
        assert [(r.value, r.timestamp) for r in out.read_records_to_list()] == [
            ("[L,r97]", 100), ("[L,r105]", 105)]


def test_late_non_joined_record_whose_window_closed_is_emitted_at_once() -> None:
    windows = JoinWindows.of_time_difference_and_grace(10, 20)
    with TopologyTestDriver(topology("left", windows)) as driver:
        left = driver.create_input_topic("left", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("x", "X", 100)
        left.pipe_input("k", "late", 50)  # 50 + 10 < ST 100
        assert out.read_records_to_list() == [TestRecord("k", "[late,null]", 50)]


def test_records_older_than_the_window_store_retention_do_not_join() -> None:
    windows = JoinWindows.of_time_difference_and_grace(10, 5)  # retention 20 + 5
    with TopologyTestDriver(topology("inner", windows)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right.pipe_input("k", "old", 10)
        right.pipe_input("x", "later", 40)  # right store time 40: 10 <= 40 - 25 expired
        left.pipe_input("k", "L", 15)
        assert out.is_empty()


@pytest.mark.parametrize("kind,expected", [
    ("inner", []),
    ("left", [TestRecord(None, "[L,null]", 7)]),
    ("outer", [TestRecord(None, "[L,null]", 7), TestRecord(None, "[null,R]", 8)]),
])
def test_null_keys_follow_kip_962(kind: str, expected: list[TestRecord]) -> None:
    with TopologyTestDriver(topology(kind)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input(None, "L", 7)
        right.pipe_input(None, "R", 8)
        left.pipe_input(None, None, 9)
        assert out.read_records_to_list() == expected


def test_deprecated_of_emits_left_results_eagerly() -> None:
    """``JoinWindows.of`` keeps the pre-3.0 behaviour: [A,null] right away (no outer store)."""
    with TopologyTestDriver(topology("left", JoinWindows.of(15))) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("k", "A", 3)
        assert out.read_records_to_list() == [TestRecord("k", "[A,null]", 3)]
        right.pipe_input("k", "a", 4)
        assert out.read_records_to_list() == [TestRecord("k", "[A,a]", 4)]


def test_generated_names_stores_and_describe() -> None:
    topo = topology("outer")
    names = list(topo.nodes)
    assert names[:2] == ["KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001"]
    assert "KSTREAM-WINDOWED-0000000002" in names
    assert "KSTREAM-OUTERTHIS-0000000004" in names
    assert "KSTREAM-OUTEROTHER-0000000005" in names
    assert "KSTREAM-MERGE-0000000006" in names
    assert set(topo.stores) == {"KSTREAM-OUTERTHIS-0000000004-store",
                                "KSTREAM-OUTEROTHER-0000000005-store",
                                "KSTREAM-OUTERSHARED-0000000004-store"}
    this_store = topo.stores["KSTREAM-OUTERTHIS-0000000004-store"]
    assert (this_store.kind, this_store.retain_duplicates) == ("window", True)
    assert (this_store.window_size_ms, this_store.retention_ms) == (30, 35)
    changelog = topo.internal_topics["KSTREAM-OUTERTHIS-0000000004-store-changelog"]
    assert changelog.configs["cleanup.policy"] == "delete"
    assert [s.source_topics for s in topo.sub_topologies()] == [["left", "right"]]
    assert {"left", "right"} in topo.copartition_groups


def test_inner_join_has_no_outer_store() -> None:
    assert set(topology("inner").stores) == {"KSTREAM-JOINTHIS-0000000004-store",
                                             "KSTREAM-JOINOTHER-0000000005-store"}
    assert "KSTREAM-LEFT-SHARED" not in str(topology("left").stores)
    assert "KSTREAM-OUTERSHARED-0000000004-store" in topology("left").stores


def test_each_marked_side_is_repartitioned_separately() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    right = builder.stream("right", key_serde=S, value_serde=S)
    left.join(right, joiner, JoinWindows.of_time_difference_with_no_grace(10), name="j").to(
        "out", key_serde=S, value_serde=S)
    topo = builder.build()
    assert "j-left-repartition" in topo.internal_topics
    assert "j-right-repartition" not in topo.internal_topics
    assert {"j-left-repartition", "right"} in topo.copartition_groups
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        left_in = driver.create_input_topic("left", S, S)
        right_in = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right_in.pipe_input("blue", "R", 1)
        left_in.pipe_input("ignored", "blue", 2)
        assert out.read_records_to_list() == [TestRecord("blue", "[blue,R]", 2)]
        assert "app-j-left-repartition" in driver.produced_topic_names()


def test_both_marked_sides_get_their_own_topic_named_after_their_node() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    right = builder.stream("right", key_serde=S, value_serde=S).map(lambda k, v: (v, k))
    left.left_join(right, joiner, JoinWindows.of_time_difference_with_no_grace(10))
    topo = builder.build()
    repartitions = sorted(n for n, t in topo.internal_topics.items() if t.kind == "repartition")
    assert repartitions == ["KSTREAM-KEY-SELECT-0000000001-repartition",
                            "KSTREAM-MAP-0000000003-repartition"]


def test_a_stream_stream_join_requires_join_windows() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left")
    with pytest.raises(TypeError, match="JoinWindows"):
        left.join(builder.stream("right"), joiner)


def test_configured_default_serdes_are_used_when_none_are_given() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left")
    right = builder.stream("right")
    left.outer_join(right, joiner, JoinWindows.of_time_difference_with_no_grace(5)).to("out")
    config = {"default.key.serde": "string", "default.value.serde": "string"}
    with TopologyTestDriver(builder.build(), config) as driver:
        left_in = driver.create_input_topic("left", S, S)
        right_in = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        left_in.pipe_input("a", "L", 1)
        right_in.pipe_input("b", "R", 2)
        right_in.pipe_input("c", "X", 20)
        assert out.read_records_to_list() == [TestRecord("a", "[L,null]", 1),
                                              TestRecord("b", "[null,R]", 2)]


def test_emit_interval_config_throttles_the_non_joined_check() -> None:
    """Production Kafka checks at most once per interval of wall-clock time (default 0 here,
    as in Kafka's TopologyTestDriver); Kafka 4.4 starts the interval at the join's first record
    (checked against its driver: tests/reference/dsl_cases.py, "outer-join-throttle-*")."""
    windows = JoinWindows.of_time_difference_with_no_grace(5)
    config = {"__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 1000}
    with TopologyTestDriver(topology("left", windows), config) as driver:
        left = driver.create_input_topic("left", S, S)
        out = driver.create_output_topic("out", S, S)
        left.pipe_input("a", "A", 1)  # the first record: no check before clock 1000
        left.pipe_input("b", "B", 7)  # A could go, but the check is throttled
        assert out.is_empty()
        driver.advance_wall_clock_time(1000)
        left.pipe_input("c", "C", 13)  # checks (clock 1000): emits A and B, next at 2000
        assert out.read_records_to_list() == [TestRecord("a", "[A,null]", 1),
                                              TestRecord("b", "[B,null]", 7)]
        left.pipe_input("d", "D", 20)  # C could go, but the check is throttled
        assert out.is_empty()
        driver.advance_wall_clock_time(1000)
        left.pipe_input("e", "E", 27)
        assert out.read_records_to_list() == [TestRecord("c", "[C,null]", 13),
                                              TestRecord("d", "[D,null]", 20)]
