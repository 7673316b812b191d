"""Windowed aggregations through the TopologyTestDriver (reference §1.5, §1.6, §1.8)."""

from __future__ import annotations

import datetime

import pytest

from streams import (
    EmitStrategy,
    JoinWindows,
    Materialized,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
    Window,
    Windowed,
)
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()


def capture(build, inputs):
    """Build with ``build(grouped) -> KTable``; return [(Windowed, value, ts)] forwarded."""
    from streams.processor.api import Processor

    seen: list[tuple[object, object, int]] = []

    class Collect(Processor):
        def process(self, record):
            seen.append((record.key, record.value, record.timestamp))

    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde=S, value_serde=S).group_by_key()
    table = build(grouped)
    table.to_stream().process(Collect)
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        for key, value, ts in inputs:
            inp.pipe_input(key, value, timestamp=ts)
        stores = driver.get_all_state_stores()
        store = stores[table.store_name]
        contents = list(store.all())
    return seen, contents


def w(key, start, end):
    return Windowed(key, Window(start, end))


# -- window definitions ----------------------------------------------------------------------

def test_time_windows_definitions_and_validation() -> None:
    tumbling = TimeWindows.of_size_with_no_grace(datetime.timedelta(seconds=10))
    assert (tumbling.size(), tumbling.grace_period_ms()) == (10_000, 0)
    assert tumbling.windows_for(25_000) == {20_000: Window(20_000, 30_000)}
    hopping = TimeWindows.of_size_and_grace(10, 2).advance_by(5)
    assert list(hopping.windows_for(12)) == [5, 10]
    assert list(hopping.windows_for(3)) == [0]
    with pytest.raises(ValueError, match="size must be larger than zero"):
        TimeWindows.of_size_with_no_grace(0)
    with pytest.raises(ValueError, match="advance"):
        tumbling.advance_by(20_000)
    with pytest.raises(ValueError, match="grace must not be negative"):
        TimeWindows.of_size_and_grace(10, -1)
    with pytest.raises(TypeError, match="duration"):
        TimeWindows.of_size_with_no_grace("10s")
    with pytest.raises(ValueError, match="gap"):
        SessionWindows.of_inactivity_gap_with_no_grace(0)
    with pytest.raises(ValueError):
        SlidingWindows.of_time_difference_and_grace(-1, 0)


def test_join_windows() -> None:
    jw = JoinWindows.of_time_difference_and_grace(15, 5)
    assert (jw.before_ms, jw.after_ms, jw.grace_ms, jw.size()) == (15, 15, 5, 30)
    asym = JoinWindows.of_time_difference_with_no_grace(10).before(0).after(5)
    assert (asym.before_ms, asym.after_ms, asym.size(), asym.grace_period_ms()) == (0, 5, 5, 0)
    assert JoinWindows.of_time_difference_with_no_grace(5).before(-3).size() == 2
    with pytest.raises(ValueError, match="must not be negative"):
        JoinWindows.of_time_difference_with_no_grace(5).before(-6)
    old = JoinWindows.of(datetime.timedelta(hours=1))
    assert old.grace_ms == 22 * 3600 * 1000 and not old.enable_spurious_result_fix
    assert EmitStrategy.on_window_close() is EmitStrategy.ON_WINDOW_CLOSE


# -- time windows ------------------------------------------------------------------------------

def test_tumbling_count_output_timestamps_and_store() -> None:
    seen, contents = capture(
        lambda g: g.windowed_by(TimeWindows.of_size_with_no_grace(10)).count("counts"),
        [("a", "x", 3), ("a", "x", 1), ("b", "x", 12), ("a", "x", 14)])
    assert [(k, v, ts) for k, v, ts in seen] == [
        (w("a", 0, 10), 1, 3), (w("a", 0, 10), 2, 3), (w("b", 10, 20), 1, 12),
        (w("a", 10, 20), 1, 14)]
    # Retention = size + grace = 10: at observed start 10 the window [0,10) has expired for
    # reads, as in Kafka (fetchAll starts at observed - retention + 1).
    assert contents == [(w("a", 10, 20), 1), (w("b", 10, 20), 1)]


def test_hopping_windows_and_windowed_output_topic() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(10).advance_by(5)).count()
     .to_stream().to("out", key_serde=Serdes.windowed(S, 10), value_serde=Serdes.long()))
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", Serdes.windowed(S, 10), Serdes.long())
        inp.pipe_input("k", "v", timestamp=7)
        inp.pipe_input("k", "v", timestamp=12)
        assert out.read_records_to_list() == [
            TestRecord(w("k", 0, 10), 1, 7), TestRecord(w("k", 5, 15), 1, 7),
            TestRecord(w("k", 5, 15), 2, 12), TestRecord(w("k", 10, 20), 1, 12)]


def test_time_window_grace_boundaries() -> None:
    """§1.6: a window takes a record only while end > ST - grace."""
    windows = TimeWindows.of_size_and_grace(10, 5)
    seen, _ = capture(lambda g: g.windowed_by(windows).count(),
                      [("k", "v", 20),   # ST 20, close time 15
                       ("k", "v", 9),    # window [0,10): 10 > 15? no -> dropped
                       ("k", "v", 24),   # ST 24, close time 19
                       ("k", "v", 19),   # window [10,20): 20 > 19 -> accepted
                       ("k", "v", 25),   # ST 25, close time 20
                       ("k", "v", 11)])  # window [10,20): 20 > 20? no -> dropped
    assert [(k.window.start, v, ts) for k, v, ts in seen] == [
        (20, 1, 20), (20, 2, 24), (10, 1, 19), (20, 3, 25)]


def test_time_windows_null_key_dropped_null_value_counted() -> None:
    seen, _ = capture(lambda g: g.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(),
                      [(None, "v", 1), ("k", None, 2)])
    assert [(k, v) for k, v, _ in seen] == [(w("k", 0, 10), 1)]


def test_windowed_reduce_and_aggregate() -> None:
    windows = TimeWindows.of_size_with_no_grace(10)
    seen, _ = capture(lambda g: g.windowed_by(windows).reduce(lambda agg, v: agg + v),
                      [("k", "a", 1), ("k", "b", 2), ("k", "c", 11)])
    assert [v for _, v, _ in seen] == ["a", "ab", "c"]
    seen, _ = capture(
        lambda g: g.windowed_by(windows).aggregate(lambda: "", lambda k, v, agg: agg + v.upper(),
                                                   Materialized(value_serde=S)),
        [("k", "a", 1), ("k", "b", 2)])
    assert [v for _, v, _ in seen] == ["A", "AB"]


def test_emit_on_window_close_time_windows() -> None:
    windows = TimeWindows.of_size_and_grace(10, 5)
    seen, _ = capture(
        lambda g: g.windowed_by(windows).emit_strategy(EmitStrategy.on_window_close()).count(),
        [("b", "v", 3), ("a", "v", 4), ("a", "v", 12), ("a", "v", 14),  # ST 14: nothing closed
         ("a", "v", 15),   # ST 15 >= 10 + 5: [0,10) closes
         ("a", "v", 16), ("a", "v", 24), ("c", "v", 40)])  # ST 40: [10,20) and [20,30) close
    assert [(k, v, ts) for k, v, ts in seen] == [
        (w("a", 0, 10), 1, 4), (w("b", 0, 10), 1, 3),
        (w("a", 10, 20), 4, 16), (w("a", 20, 30), 1, 24)]


def test_retention_must_cover_size_plus_grace() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    with pytest.raises(ValueError, match="no smaller than its window size plus the grace"):
        grouped.windowed_by(TimeWindows.of_size_and_grace(10, 5)).count(
            Materialized("s", retention=14))
    with pytest.raises(ValueError, match="2 \\* time difference"):
        grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(10)).count(
            Materialized("t", retention=15))
    with pytest.raises(ValueError, match="inactivity gap plus the grace"):
        grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 1)).count(
            Materialized("u", retention=10))
    store = builder.topology.stores
    grouped.windowed_by(TimeWindows.of_size_and_grace(10, 5)).count("ok")
    assert (store["ok"].retention_ms, store["ok"].window_size_ms) == (15, 10)


def test_group_by_repartitions_before_windowing() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S)
     .group_by(lambda k, v: v, key_serde=S, value_serde=S)
     .windowed_by(TimeWindows.of_size_with_no_grace(10)).count(Materialized("wc"))
     .to_stream().to("out", key_serde=Serdes.windowed(S, 10), value_serde=Serdes.long()))
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", Serdes.windowed(S, 10), Serdes.long())
        inp.pipe_input("x", "hello", timestamp=1)
        inp.pipe_input("y", "hello", timestamp=2)
        assert out.read_key_values_to_map() == {w("hello", 0, 10): 2}
        assert f"{driver.application_id}-wc-repartition" in driver.produced_topic_names()
        assert list(driver.get_window_store("wc").fetch("hello", 0, 100)) == [(0, 2)]


# -- sliding windows ---------------------------------------------------------------------------

def test_sliding_windows_reference_example() -> None:
    """§1.5: d=5000, records at 8000, 9200, 12400 -> the five windows."""
    seen, contents = capture(
        lambda g: g.windowed_by(SlidingWindows.of_time_difference_with_no_grace(5000)).count(),
        [("k", "v", 8000), ("k", "v", 9200), ("k", "v", 12400)])
    assert contents == [(w("k", 3000, 8000), 1), (w("k", 4200, 9200), 2),
                        (w("k", 7400, 12400), 3), (w("k", 8001, 13001), 2),
                        (w("k", 9201, 14201), 1)]
    assert [(k.window.start, v, ts) for k, v, ts in seen] == [
        (3000, 1, 8000),
        (8001, 1, 9200), (4200, 2, 9200),   # 8000's right window appears with 9200
        (8001, 2, 12400), (9201, 1, 12400), (7400, 3, 12400)]


def test_sliding_windows_out_of_order_and_early_records() -> None:
    seen, contents = capture(
        lambda g: g.windowed_by(SlidingWindows.of_time_difference_and_grace(10, 100)).count(),
        [("k", "v", 30), ("k", "v", 25), ("k", "v", 4), ("k", None, 26), ("k", "v", 8)])
    assert contents == [
        (w("k", 0, 10), 2),     # early records share the combined [0, d] window
        (w("k", 5, 15), 1),     # 4's right window, created when 8 arrives
        (w("k", 15, 25), 1), (w("k", 20, 30), 2),
        (w("k", 26, 36), 1)]    # 25's right window, created by the out-of-order 25
    # 25 updates [20,30], then creates its left window, then its right window (holding 30)
    assert [(k.window.start, v, ts) for k, v, ts in seen][1:] == [
        (20, 2, 30), (15, 1, 25), (26, 1, 30), (0, 1, 4), (5, 1, 8), (0, 2, 8)]


def test_sliding_windows_grace_drop() -> None:
    """§1.6: a record's windows take it only while end >= ST - grace (its left window ends at
    its own ts, so a record with ts < ST - grace is dropped)."""
    seen, _ = capture(
        lambda g: g.windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5)).count(),
        [("k", "v", 100), ("j", "v", 95), ("i", "v", 94), ("k", "v", 94)])
    assert [(k.key, k.window.start, v) for k, v, _ in seen] == [
        ("k", 90, 1), ("j", 85, 1),
        # k@94: [90,100] is still open and its right window [95,105] is created (holding
        # 100); its own left window [84,94] is dropped
        ("k", 90, 2), ("k", 95, 1)]


def test_sliding_emit_on_close() -> None:
    seen, _ = capture(
        lambda g: g.windowed_by(SlidingWindows.of_time_difference_with_no_grace(10))
        .emit_strategy(EmitStrategy.on_window_close()).count(),
        [("k", "v", 20), ("k", "v", 25), ("k", "v", 30), ("k", "v", 36)])
    # ST 36: windows with end < 36 are final: [10,20]=1, [15,25]=2, [20,30]=3, [21,31]=2
    assert [(k.window.start, v, ts) for k, v, ts in seen] == [
        (10, 1, 20), (15, 2, 25), (20, 3, 30), (21, 2, 30)]


# -- session windows ---------------------------------------------------------------------------

def test_session_windows_reference_example() -> None:
    """§1.5: gap 5, records at 10, 12, 20, then 16 merges [10,12] and [20,20] into [10,20].

    (A grace keeps [10,12] in the store's retention when the late 16 arrives.)"""
    seen, contents = capture(
        lambda g: g.windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 10)).count(),
        [("k", "v", 10), ("k", "v", 12), ("k", "v", 20), ("k", "v", 16)])
    assert [(k, v, ts) for k, v, ts in seen] == [
        (w("k", 10, 10), 1, 10),
        (w("k", 10, 10), None, 10), (w("k", 10, 12), 2, 12),
        (w("k", 20, 20), 1, 20),
        (w("k", 10, 12), None, 12), (w("k", 20, 20), None, 20), (w("k", 10, 20), 4, 20)]
    assert contents == [(w("k", 10, 20), 4)]


def test_session_without_grace_retention_hides_old_sessions() -> None:
    """Kafka's session store keeps gap + grace: with no grace, [10,12] (end <= 20 - 5) is
    already out of retention at ST 20, so the late 16 merges only with [20,20]."""
    seen, _ = capture(
        lambda g: g.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).count(),
        [("k", "v", 10), ("k", "v", 12), ("k", "v", 20), ("k", "v", 16)])
    assert [(k, v, ts) for k, v, ts in seen][4:] == [
        (w("k", 20, 20), None, 20), (w("k", 16, 20), 2, 20)]


def test_session_grace_boundary_and_merger() -> None:
    windows = SessionWindows.of_inactivity_gap_and_grace(5, 2)
    seen, _ = capture(
        lambda g: g.windowed_by(windows).aggregate(
            lambda: "", lambda k, v, agg: agg + v, lambda k, a, b: a + "|" + b,
            Materialized(value_serde=S)),
        [("k", "a", 30),   # ST 30: close time 23
         ("j", "b", 23),   # [23,23]: 23 < 23? no -> forwarded (but, as in Kafka, already
                           # outside the store's retention: end <= 30 - (5 + 2))
         ("j", "x", 24),   # [24,24] does not see [23,23]
         ("j", "c", 22),   # merges with [24,24] -> [22,24]
         ("i", "d", 22)])  # [22,22]: 22 < 23 -> dropped
    assert [(k, v) for k, v, _ in seen] == [
        (w("k", 30, 30), "a"), (w("j", 23, 23), "b"), (w("j", 24, 24), "x"),
        (w("j", 24, 24), None), (w("j", 22, 24), "|xc")]


def test_session_emit_on_close_and_reduce() -> None:
    seen, _ = capture(
        lambda g: g.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
        .emit_strategy(EmitStrategy.on_window_close()).reduce(lambda a, b: a + b),
        [("k", "a", 10), ("k", "b", 12), ("j", "c", 13), ("k", "d", 17), ("x", "e", 30)])
    # ST 30: close time 25; sessions ending before 25 are final, ordered by end
    assert [(k, v, ts) for k, v, ts in seen] == [
        (w("j", 13, 13), "c", 13), (w("k", 10, 17), "abd", 17)]


@pytest.mark.parametrize("store_type", ["memory", "rocksdb"])
def test_in_memory_and_rocksdb_give_same_results(store_type) -> None:
    seen, _ = capture(
        lambda g: g.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
            Materialized("c", store_type=store_type)),
        [("k", "v", 1), ("k", "v", 2)])
    assert [v for _, v, _ in seen] == [1, 2]
