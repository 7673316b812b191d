"""Suppress and emit-on-close through the TopologyTestDriver (reference §1.7)."""

from __future__ import annotations

import datetime

import pytest

from streams import (
    BufferConfig,
    Materialized,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Window,
    Windowed,
)
from streams.processor.task import StreamsError
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
MIN = 60_000
HOUR = 60 * MIN


def windowed_counts(windows, suppressed, *, table_fn=None):
    builder = StreamsBuilder()
    table = (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
             .windowed_by(windows).count(Materialized("counts")))
    if table_fn is not None:
        table = table_fn(table)
    return builder, table.suppress(suppressed)


def test_until_window_closes_hourly_window_emitted_once_at_end_plus_grace() -> None:
    """§1.7: hourly windows, 10-minute grace: 09:00-10:00 is emitted once, at ST >= 10:10."""
    windows = TimeWindows.of_size_and_grace(datetime.timedelta(hours=1),
                                            datetime.timedelta(minutes=10))
    builder, table = windowed_counts(windows, Suppressed.until_window_closes())
    table.to_stream().to("out", key_serde=Serdes.windowed(S, HOUR), value_serde=Serdes.long())
    nine = 9 * HOUR
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", Serdes.windowed(S, HOUR), Serdes.long())
        inp.pipe_input("k", "v", timestamp=nine + 5 * MIN)
        inp.pipe_input("k", "v", timestamp=nine + 30 * MIN)
        inp.pipe_input("j", "v", timestamp=nine + 20 * MIN)
        inp.pipe_input("k", "v", timestamp=nine + 65 * MIN)   # 10:05: window still in grace
        inp.pipe_input("k", "v", timestamp=nine + 50 * MIN)   # late but within grace
        assert out.is_empty()
        inp.pipe_input("k", "v", timestamp=nine + 70 * MIN - 1)  # 10:09:59.999
        assert out.is_empty()
        inp.pipe_input("x", "v", timestamp=nine + 70 * MIN)   # ST = 10:10: the window closes
        assert out.read_records_to_list() == [  # same window end: serialized-key order
            TestRecord(Windowed("j", Window(nine, nine + HOUR)), 1, nine + 20 * MIN),
            TestRecord(Windowed("k", Window(nine, nine + HOUR)), 3, nine + 50 * MIN)]
        inp.pipe_input("k", "v", timestamp=nine + 55 * MIN)   # too late: dropped upstream
        inp.pipe_input("x", "v", timestamp=nine + 200 * MIN)
        assert [(r.key.key, r.key.window.start, r.value) for r in out.read_records_to_list()] == [
            ("k", nine + HOUR, 2), ("x", nine + HOUR, 1)]  # the 10:00 windows, once each


def test_until_window_closes_uses_session_gap_plus_grace_and_passes_table_ops() -> None:
    windows = SessionWindows.of_inactivity_gap_and_grace(5, 3)
    builder = StreamsBuilder()
    seen = []
    table = (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
             .windowed_by(windows).count())
    table = table.filter(lambda k, v: v is not None) if hasattr(table, "filter") else table
    table.suppress(Suppressed.until_window_closes()).to_stream().foreach(
        lambda k, v: seen.append((k, v)))
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("k", "v", timestamp=10)
        inp.pipe_input("k", "v", timestamp=12)   # session [10,12]
        inp.pipe_input("j", "v", timestamp=19)   # ST 19 < 12 + 5 + 3
        assert seen == []
        inp.pipe_input("j", "v", timestamp=20)   # ST 20 >= 12 + 8: final [10,12] = 2
        assert seen == [(Windowed("k", Window(10, 12)), 2)]


def test_until_window_closes_rejects_non_windowed_tables_and_eager_buffers() -> None:
    builder = StreamsBuilder()
    table = builder.stream("in").group_by_key().count()
    with pytest.raises(ValueError, match="windowed"):
        table.suppress(Suppressed.until_window_closes())
    with pytest.raises(ValueError, match="strict buffer"):
        Suppressed.until_window_closes(BufferConfig.max_records(3))
    Suppressed.until_window_closes(BufferConfig.max_records(3).shut_down_when_full())


def counts_with_time_limit(limit, buffer_config=None):
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key().count()
     .suppress(Suppressed.until_time_limit(limit, buffer_config))
     .to_stream().to("out", key_serde=S, value_serde=Serdes.long()))
    return builder.build()


def test_until_time_limit_emits_latest_value_per_key() -> None:
    with TopologyTestDriver(counts_with_time_limit(10)) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        inp.pipe_input("a", "v", timestamp=0)
        inp.pipe_input("a", "v", timestamp=5)
        inp.pipe_input("b", "v", timestamp=9)
        assert out.is_empty()
        inp.pipe_input("c", "v", timestamp=15)   # a's buffer time 5 <= 15 - 10
        assert out.read_records_to_list() == [TestRecord("a", 2, 5)]
        inp.pipe_input("c", "v", timestamp=19)   # b: 9 <= 9
        assert out.read_records_to_list() == [TestRecord("b", 1, 9)]
        inp.pipe_input("a", "v", timestamp=100)
        assert out.read_records_to_list() == [TestRecord("c", 2, 19)]


def test_time_limit_update_keeps_its_buffer_time() -> None:
    with TopologyTestDriver(counts_with_time_limit(10)) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        inp.pipe_input("a", "v", timestamp=1)
        inp.pipe_input("a", "v", timestamp=8)   # replaces a's value, keeps buffer time 1
        inp.pipe_input("b", "v", timestamp=11)  # 1 <= 11 - 10: a goes, with its latest count
        assert out.read_records_to_list() == [TestRecord("a", 2, 8)]


def test_time_limit_buffer_full_emits_early_or_shuts_down() -> None:
    eager = BufferConfig.max_records(2).emit_early_when_full()
    with TopologyTestDriver(counts_with_time_limit(1000, eager)) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        for key, ts in [("a", 1), ("b", 2), ("a", 3), ("c", 4)]:
            inp.pipe_input(key, "v", timestamp=ts)
        # Kafka's buffer is non-resetting: a's update at 3 keeps a's place (time 1), so the
        # third key evicts a with its latest count (tests/reference/test_dsl_diff)
        assert out.read_key_values_to_list() == [("a", 2)]
    strict = BufferConfig.max_records(2).shut_down_when_full()
    with TopologyTestDriver(counts_with_time_limit(1000, strict)) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "v", timestamp=1)
        inp.pipe_input("b", "v", timestamp=2)
        with pytest.raises(StreamsError, match="full"):
            inp.pipe_input("c", "v", timestamp=3)


def test_max_bytes_buffer() -> None:
    eager = BufferConfig.max_bytes(20)  # "k" + 8-byte long = 9 bytes per entry
    with TopologyTestDriver(counts_with_time_limit(1000, eager)) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        for key, ts in [("a", 1), ("b", 2), ("c", 3)]:
            inp.pipe_input(key, "v", timestamp=ts)
        assert out.read_key_values_to_list() == [("a", 1)]


def test_suppress_validation() -> None:
    with pytest.raises(ValueError):
        Suppressed.until_time_limit(-1)
    with pytest.raises(ValueError):
        BufferConfig.max_records(0)
    assert Suppressed.until_time_limit(datetime.timedelta(seconds=2)).time_limit_ms == 2000


def test_time_limit_forwards_the_value_downstream_last_saw_as_old() -> None:
    """A key updated twice while buffered is emitted as Change(latest, value from before it
    was buffered): a table aggregation downstream subtracts what it was given. Kafka's buffer
    forwards the old value of the latest update instead (d, which downstream never saw), so
    its count of cab stays 1 after a left cab; a deliberate difference
    (docs/kafka-differences.md, composed-1127401-114)."""
    builder = StreamsBuilder()
    latest = (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
              .reduce(lambda agg, v: v, Materialized(key_serde=S, value_serde=S)))
    counts = (latest.suppress(Suppressed.until_time_limit(5))
              .group_by(lambda k, v: (v, k), key_serde=S, value_serde=S)
              .count(Materialized("counts")))
    counts.to_stream().to("out", key_serde=S, value_serde=Serdes.long())
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.long())
        inp.pipe_input("a", "cab", timestamp=0)
        inp.pipe_input("b", "z", timestamp=10)  # a leaves the buffer: cab counts a
        inp.pipe_input("a", "d", timestamp=11)
        inp.pipe_input("a", "cocoa", timestamp=12)  # a buffered since 11, last seen as cab
        inp.pipe_input("c", "y", timestamp=20)
        assert out.read_records_to_list() == [
            TestRecord("cab", 1, 0), TestRecord("z", 1, 10), TestRecord("cab", 0, 12),
            TestRecord("cocoa", 1, 12)]
        assert dict(driver.get_key_value_store("counts").all()) == {
            "cab": 0, "cocoa": 1, "z": 1}
