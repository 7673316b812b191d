"""Processor API inside the DSL and in a hand-built Topology: stores, punctuators, metadata."""

from __future__ import annotations

import pytest

from streams import Processor, PunctuationType, Record, Serdes, Stores, StreamsBuilder, Topology
from streams.processor.task import StreamsError
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


class RunningTotal(Processor):
    """Sums per key in a store; emits the total with the record's timestamp."""

    def init(self, context) -> None:
        super().init(context)
        self.store = context.get_state_store("totals")

    def process(self, record: Record) -> None:
        total = (self.store.get(record.key) or 0) + record.value
        self.store.put(record.key, total)
        self.context.forward(record.with_value(total))


def totals_topology():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder("totals", S, L))
    builder.stream("in", key_serde=S, value_serde=L).process(RunningTotal, "totals") \
        .to("out", key_serde=S, value_serde=L)
    return builder.build()


def test_dsl_process_with_a_store() -> None:
    with TopologyTestDriver(totals_topology()) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_key_value_list([("a", 1), ("b", 5), ("a", 2)], start_timestamp=100, advance=10)
        assert out.read_records_to_list() == [
            TestRecord("a", 1, 100), TestRecord("b", 5, 110), TestRecord("a", 3, 120)]
        store = driver.get_key_value_store("totals")
        assert dict(store.all()) == {"a": 3, "b": 5}
        app = driver.application_id
        assert f"{app}-totals-changelog" in driver.produced_topic_names()


def test_process_marks_the_stream_for_repartitioning() -> None:
    builder = StreamsBuilder()
    assert builder.stream("in").process(RunningTotal).repartition_required


def test_a_store_not_connected_to_the_processor_is_refused() -> None:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder("totals", S, L))
    builder.stream("in", key_serde=S, value_serde=L).process(RunningTotal)
    # "totals" is connected to nothing; every sub-topology is built without it
    with pytest.raises(StreamsError, match="totals"), TopologyTestDriver(builder.build()):
        pass


class Ticker(Processor):
    """Counts records; punctuators forward the count stamped with the punctuation time."""

    def __init__(self, kind: PunctuationType, interval: int) -> None:
        self.kind = kind
        self.interval = interval
        self.fired: list[int] = []

    def init(self, context) -> None:
        super().init(context)
        self.count = 0
        self.handle = context.schedule(self.interval, self.kind, self.punctuate)

    def punctuate(self, timestamp: int) -> None:
        self.fired.append(timestamp)
        self.context.forward(Record("tick", self.count, timestamp))

    def process(self, record: Record) -> None:
        self.count += 1


def ticker_topology(kind: PunctuationType, interval: int, instances: list[Ticker]):
    topology = Topology()
    topology.add_source("src", "in", key_serde=S, value_serde=L)

    def supplier() -> Ticker:
        ticker = Ticker(kind, interval)
        instances.append(ticker)
        return ticker

    topology.add_processor("ticker", supplier, "src")
    topology.add_sink("sink", "out", "ticker", key_serde=S, value_serde=L)
    return topology


def test_stream_time_punctuators_fire_from_record_timestamps() -> None:
    tickers: list[Ticker] = []
    with TopologyTestDriver(ticker_topology(PunctuationType.STREAM_TIME, 10, tickers)) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("k", 1, 0)  # first record: stream time 0 -> fires at 0
        inp.pipe_input("k", 1, 5)
        driver.advance_wall_clock_time(1000)  # wall clock does not move stream time
        inp.pipe_input("k", 1, 3)  # out of order: stream time stays 5
        inp.pipe_input("k", 1, 25)  # fires once at 25 (missed intervals are skipped)
        inp.pipe_input("k", 1, 29)
        inp.pipe_input("k", 1, 30)
        assert tickers[0].fired == [0, 25, 30]
        assert out.read_records_to_list() == [
            TestRecord("tick", 1, 0), TestRecord("tick", 4, 25), TestRecord("tick", 6, 30)]


class LateScheduler(Processor):
    """Schedules its stream-time punctuator on its second record, not in init()."""

    def init(self, context) -> None:
        super().init(context)
        self.fired: list[int] = []
        self.seen = 0

    def process(self, record: Record) -> None:
        self.seen += 1
        if self.seen == 2:
            self.context.schedule(100, PunctuationType.STREAM_TIME, self.fired.append)


def test_a_stream_time_punctuator_scheduled_late_is_due_at_once_and_aligned_to_zero() -> None:
    # Kafka's StreamTask#schedule starts every STREAM_TIME schedule at 0 ("punctuate as soon
    # as we have data"), so one scheduled at stream time 1,050 fires at 1,050, then at 1,100.
    late: list[LateScheduler] = []
    topology = Topology()
    topology.add_source("src", "in", key_serde=S, value_serde=L)
    topology.add_processor("late", lambda: late.append(LateScheduler()) or late[-1], "src")
    with TopologyTestDriver(topology) as driver:
        inp = driver.create_input_topic("in", S, L)
        inp.pipe_input("k", 1, 1_000)
        inp.pipe_input("k", 1, 1_050)  # schedules here
        assert late[0].fired == [1_050]
        inp.pipe_input("k", 1, 1_099)
        inp.pipe_input("k", 1, 1_100)
        assert late[0].fired == [1_050, 1_100]


def test_wall_clock_punctuators_fire_only_when_the_driver_clock_advances() -> None:
    tickers: list[Ticker] = []
    topology = ticker_topology(PunctuationType.WALL_CLOCK_TIME, 100, tickers)
    with TopologyTestDriver(topology, initial_wall_clock_time=1_000) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, L)
        inp.pipe_input("k", 1, 999_999)  # record time does not drive wall-clock punctuation
        assert tickers[0].fired == []
        driver.advance_wall_clock_time(99)
        assert tickers[0].fired == []
        driver.advance_wall_clock_time(1)
        inp.pipe_input("k", 1, 1)
        driver.advance_wall_clock_time(250)
        assert tickers[0].fired == [1_100, 1_350]
        assert out.read_key_values_to_list() == [("tick", 1), ("tick", 2)]


def test_a_cancelled_punctuator_stops() -> None:
    tickers: list[Ticker] = []
    topology = ticker_topology(PunctuationType.WALL_CLOCK_TIME, 10, tickers)
    with TopologyTestDriver(topology) as driver:
        driver.advance_wall_clock_time(10)
        tickers[0].handle.cancel()
        driver.advance_wall_clock_time(100)
        assert tickers[0].fired == [10]


class MetadataRecorder(Processor):
    def __init__(self, seen: list) -> None:
        self.seen = seen

    def process(self, record: Record) -> None:
        meta = self.context.record_metadata()
        self.seen.append((meta.topic, meta.partition, meta.offset, record.headers,
                          self.context.current_stream_time_ms(),
                          self.context.current_system_time_ms()))
        self.context.forward(record.with_headers((*record.headers, ("seen", b"1"))))


def test_record_metadata_headers_and_clocks_in_a_processor() -> None:
    seen: list = []
    builder = StreamsBuilder()
    builder.stream(["a", "b"], key_serde=S, value_serde=L) \
        .process(lambda: MetadataRecorder(seen)).to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(), initial_wall_clock_time=77) as driver:
        a = driver.create_input_topic("a", S, L)
        b = driver.create_input_topic("b", S, L)
        out = driver.create_output_topic("out", S, L)
        a.pipe_input("k", 1, 10, headers=[("h", b"x")])
        a.pipe_input("k", 2, 8)
        b.pipe_input("k", 3, 20)
        assert seen == [("a", 0, 0, (("h", b"x"),), 10, 77), ("a", 0, 1, (), 10, 77),
                        ("b", 0, 0, (), 20, 77)]
        assert out.read_record() == TestRecord("k", 1, 10, [("h", b"x"), ("seen", b"1")])


class Splitter(Processor):
    """Forwards to a named child: the PAPI way to route."""

    def process(self, record: Record) -> None:
        self.context.forward(record, "evens" if record.value % 2 == 0 else "odds")


def test_hand_built_topology_with_named_children_and_a_timestamped_store() -> None:
    topology = Topology()
    topology.add_source("src", "in", key_serde=S, value_serde=L)
    topology.add_processor("split", Splitter, "src")

    class Keep(Processor):
        def init(self, context) -> None:
            super().init(context)
            self.store = context.get_state_store("last-odd")

        def process(self, record: Record) -> None:
            self.store.put(record.key, record.value, record.timestamp)
            self.context.forward(record.with_timestamp(record.timestamp + 1))

    topology.add_processor("odds", Keep, "split")
    topology.add_processor("evens", lambda: _Forward(), "split")
    topology.add_state_store(
        Stores.key_value_store_builder("last-odd", S, L, persistent=False, timestamped=True),
        "odds")
    topology.add_sink("odd-sink", "odd-out", "odds", key_serde=S, value_serde=L)
    topology.add_sink("even-sink", "even-out", "evens", key_serde=S, value_serde=L)
    with TopologyTestDriver(topology) as driver:
        inp = driver.create_input_topic("in", S, L)
        inp.pipe_input("a", 1, 10)
        inp.pipe_input("a", 2, 11)
        inp.pipe_input("a", 3, 12)
        assert driver.create_output_topic("odd-out", S, L).read_records_to_list() == [
            TestRecord("a", 1, 11), TestRecord("a", 3, 13)]
        assert driver.create_output_topic("even-out", S, L).read_records_to_list() == [
            TestRecord("a", 2, 11)]
        assert driver.get_key_value_store("last-odd").get_with_timestamp("a") == (3, 12)


class _Forward(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record)


def test_forward_to_an_unknown_child_fails_loudly() -> None:
    topology = Topology()
    topology.add_source("src", "in", key_serde=S, value_serde=L)
    topology.add_processor("split", Splitter, "src")
    topology.add_processor("odds", _Forward, "split")
    with TopologyTestDriver(topology) as driver, pytest.raises(StreamsError, match="evens"):
        driver.create_input_topic("in", S, L).pipe_input("a", 2, 1)


def test_processor_close_is_called_when_the_driver_closes() -> None:
    closed: list[bool] = []

    class Closing(_Forward):
        def close(self) -> None:
            closed.append(True)

    builder = StreamsBuilder()
    builder.stream("in").process(Closing)
    TopologyTestDriver(builder.build()).close()
    assert closed == [True]
