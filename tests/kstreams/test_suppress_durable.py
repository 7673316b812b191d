"""The suppression buffer is a state store with a changelog (Kafka's
``InMemoryTimeOrderedKeyValueBuffer``): named and described as Kafka does, every buffer change
logged, and a buffer restored from its changelog emits what the lost one would have."""

from __future__ import annotations

import pytest

from streams import (
    BufferConfig,
    Materialized,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Window,
    Windowed,
)
from streams.processor.task import StreamsError
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
B = Serdes.bytes()
APP = "suppress-app"
STORE = "KTABLE-SUPPRESS-STATE-STORE-0000000003"
CHANGELOG = f"{APP}-{STORE}-changelog"


def final_counts_topology(size: int = 10, grace: int = 5):
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(size, grace)).count(Materialized("counts"))
     .suppress(Suppressed.until_window_closes())
     .to_stream().to("out", key_serde=Serdes.windowed(S, size), value_serde=Serdes.long()))
    return builder.build()


def test_describe_shows_the_buffer_store_named_as_kafka_names_it() -> None:
    text = str(final_counts_topology().describe())
    assert ("    Processor: KTABLE-SUPPRESS-0000000002 "
            f"(stores: [{STORE}])\n"
            "      --> KTABLE-TOSTREAM-0000000004\n"
            "      <-- KSTREAM-AGGREGATE-0000000001\n") in text
    topology = final_counts_topology()
    assert topology.internal_topics[f"{STORE}-changelog"].configs == {"cleanup.policy": "compact"}


def test_named_suppression_names_its_store_after_itself() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key().count()
     .suppress(Suppressed.until_time_limit(10).with_name("hold"))
     .to_stream().to("out", key_serde=S, value_serde=Serdes.long()))
    assert "Processor: hold (stores: [hold-store])" in str(builder.build().describe())


def _changelog(driver: TopologyTestDriver, store: str = STORE) -> list[TestRecord]:
    return driver.create_output_topic(f"{store}-changelog", B, B).read_records_to_list()


def _buffer_store(topology) -> str:
    (name,) = [s for s in topology.stores if s.startswith("KTABLE-SUPPRESS-STATE-STORE-")]
    return name


def test_every_buffer_change_reaches_the_changelog() -> None:
    with TopologyTestDriver(final_counts_topology(), {"application.id": APP}) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "v", timestamp=1)
        inp.pipe_input("b", "v", timestamp=2)
        assert CHANGELOG in driver.produced_topic_names()
        writes = _changelog(driver)
        assert [r.value is not None for r in writes] == [True, True]
        inp.pipe_input("a", "v", timestamp=3)    # an update of a buffered window: logged again
        assert [r.value is not None for r in _changelog(driver)] == [True]
        inp.pipe_input("c", "v", timestamp=15)   # ST 15 closes [0,10): a and b emitted
        logged = _changelog(driver)
        tombstones = [r.key for r in logged if r.value is None]
        assert len(tombstones) == 2 and {r.key for r in writes} == set(tombstones)
        assert all(r.timestamp == 15 for r in logged)  # stamped with stream time


def _restored_driver(topology, records: list[TestRecord], tmp_path, name: str):
    driver = TopologyTestDriver(topology, {"application.id": APP,
                                           "state.dir": str(tmp_path / name)})
    buffer = driver.get_state_store(_buffer_store(topology))
    for record in records:
        buffer.restore(record.key, record.value, record.timestamp)
    buffer.flush()  # what the runtime's restorer does at the end of a changelog partition
    return driver


def test_a_buffer_restored_from_its_changelog_emits_the_final_results(tmp_path) -> None:
    with TopologyTestDriver(final_counts_topology(), {"application.id": APP,
                                                      "state.dir": str(tmp_path / "a")}) as first:
        inp = first.create_input_topic("in", S, S)
        for key, ts in [("a", 1), ("b", 2), ("a", 4), ("a", 11), ("b", 12)]:
            inp.pipe_input(key, "v", timestamp=ts)
        assert first.create_output_topic("out", Serdes.windowed(S, 10), Serdes.long()).is_empty()
        logged = _changelog(first)
        assert not any(r.key == b"" for r in logged)
    # A new instance: the window store is gone, only the buffer comes back.
    second = _restored_driver(final_counts_topology(), logged, tmp_path, "b")
    with second:
        out = second.create_output_topic("out", Serdes.windowed(S, 10), Serdes.long())
        assert second.get_state_store(STORE).approximate_num_entries() == 4
        second.create_input_topic("in", S, S).pipe_input("z", "v", timestamp=25)  # [10,20) closes
        assert out.read_records_to_list() == [
            TestRecord(Windowed("a", Window(0, 10)), 2, 4),
            TestRecord(Windowed("b", Window(0, 10)), 1, 2),
            TestRecord(Windowed("a", Window(10, 20)), 1, 11),
            TestRecord(Windowed("b", Window(10, 20)), 1, 12)]


def time_limit_topology(limit: int, buffer_config: BufferConfig | None = None):
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key().count()
     .suppress(Suppressed.until_time_limit(limit, buffer_config))
     .to_stream().to("out", key_serde=S, value_serde=Serdes.long()))
    return builder.build()


def test_restored_buffer_keeps_time_order_and_stream_time_starts_over(tmp_path) -> None:
    with TopologyTestDriver(time_limit_topology(10), {"application.id": APP}) as first:
        inp = first.create_input_topic("in", S, S)
        inp.pipe_input("c", "v", timestamp=13)
        inp.pipe_input("b", "v", timestamp=12)   # buffered after c, due before it
        inp.pipe_input("d", "v", timestamp=20)   # ST 20: nothing due yet (12 > 20 - 10)
        assert first.create_output_topic("out", S, Serdes.long()).is_empty()
        logged = _changelog(first, _buffer_store(first.topology))
    second = _restored_driver(time_limit_topology(10), logged, tmp_path, "b")
    with second:
        inp = second.create_input_topic("in", S, S)
        out = second.create_output_topic("out", S, Serdes.long())
        # Stream time starts over (Kafka's KTableSuppressProcessor keeps it in memory only):
        # an old record does not make anything due, however late the changelog was stamped.
        inp.pipe_input("e", "v", timestamp=5)
        assert out.is_empty()
        inp.pipe_input("f", "v", timestamp=23)   # ST 23: e (5), b (12), c (13), in time order
        assert out.read_key_values_to_list() == [("e", 1), ("b", 1), ("c", 1)]


def test_restored_buffer_still_enforces_its_limits(tmp_path) -> None:
    strict = BufferConfig.max_records(2).shut_down_when_full()
    with TopologyTestDriver(time_limit_topology(1000, strict), {"application.id": APP}) as first:
        inp = first.create_input_topic("in", S, S)
        inp.pipe_input("a", "v", timestamp=1)
        inp.pipe_input("b", "v", timestamp=2)
        logged = _changelog(first, _buffer_store(first.topology))
    second = _restored_driver(time_limit_topology(1000, strict), logged, tmp_path, "b")
    with second, pytest.raises(StreamsError, match="full"):
        second.create_input_topic("in", S, S).pipe_input("c", "v", timestamp=3)


def test_buffer_with_logging_disabled_has_no_changelog() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key().count()
     .suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded().with_logging_disabled()))
     .to_stream().to("out", key_serde=S, value_serde=Serdes.long()))
    topology = builder.build()
    assert not [t for t in topology.internal_topics if "SUPPRESS" in t]
    with TopologyTestDriver(topology, {"application.id": APP}) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "v", timestamp=1)
        inp.pipe_input("b", "v", timestamp=20)
        assert driver.create_output_topic("out", S, Serdes.long()).read_key_values_to_list() == [
            ("a", 1)]
        assert not [t for t in driver.produced_topic_names() if "SUPPRESS" in t]
