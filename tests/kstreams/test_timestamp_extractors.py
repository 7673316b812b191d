"""Timestamp extractors (reference §3.5) through the TopologyTestDriver."""

from __future__ import annotations

import logging
import time

import pytest

from streams import (
    ConsumerRecord,
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    PunctuationType,
    Serdes,
    StreamsBuilder,
    StreamsError,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from streams.processor.api import Processor, Record
from streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def passthrough(extractor=None):
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L, timestamp_extractor=extractor)
        .to("out", key_serde=S, value_serde=L))
    return builder.build()


def run(topology, config, records):
    """Pipe (key, value, ts); returns [(key, value, ts)] read from ``out``."""
    with TopologyTestDriver(topology, config) as driver:
        inp = driver.create_input_topic("in", S, L)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp)
                for r in driver.create_output_topic("out", S, L).read_records_to_list()]


WITH_NEGATIVE = [("a", 1, 100), ("b", 2, -1), ("c", 3, 50)]


def test_fail_on_invalid_timestamp_is_the_default() -> None:
    with TopologyTestDriver(passthrough()) as driver:
        inp = driver.create_input_topic("in", S, L)
        inp.pipe_input("a", 1, 100)
        with pytest.raises(StreamsError, match=r"in-0@1 has an invalid \(negative\) timestamp"):
            inp.pipe_input("b", 2, -1)


@pytest.mark.parametrize("name", [
    "LogAndSkipOnInvalidTimestamp", "log_and_skip_on_invalid_timestamp",
    "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp",
    LogAndSkipOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp()])
def test_log_and_skip_drops_negative_timestamps(name, caplog) -> None:
    caplog.set_level(logging.WARNING)
    got = run(passthrough(), {"default.timestamp.extractor": name}, WITH_NEGATIVE)
    assert got == [("a", 1, 100), ("c", 3, 50)]
    assert any("in-0@1" in m and "negative" in m for m in caplog.messages)


def test_use_partition_time_replaces_negative_timestamps() -> None:
    config = {"default.timestamp.extractor": "UsePartitionTimeOnInvalidTimestamp"}
    got = run(passthrough(), config, WITH_NEGATIVE)
    assert got == [("a", 1, 100), ("b", 2, 100), ("c", 3, 50)]  # partition time = max seen


def test_use_partition_time_fails_when_partition_time_is_unknown() -> None:
    with pytest.raises(StreamsError, match="partition time is still unknown"):
        run(passthrough(UsePartitionTimeOnInvalidTimestamp()), {}, [("a", 1, -5)])


def test_wallclock_extractor_gives_processing_time() -> None:
    before = int(time.time() * 1000)
    got = run(passthrough(), {"default.timestamp.extractor": WallclockTimestampExtractor},
              [("a", 1, 5), ("b", 2, -1)])
    after = int(time.time() * 1000)
    assert [k for k, _, _ in got] == ["a", "b"]
    assert all(before <= ts <= after for _, _, ts in got)


def test_custom_extractor_sees_the_deserialized_record_and_partition_time() -> None:
    calls = []

    def from_value(record, partition_time):
        calls.append((record, partition_time))
        return record.value  # event time carried in the payload

    got = run(passthrough(from_value), {}, [("a", 1_000, 5), ("b", 500, 6), ("c", 2_000, 7)])
    assert got == [("a", 1_000, 1_000), ("b", 500, 500), ("c", 2_000, 2_000)]
    assert [p for _, p in calls] == [-1, 1_000, 1_000]
    first = calls[0][0]
    assert isinstance(first, ConsumerRecord)
    assert (first.topic, first.partition, first.offset, first.key, first.value,
            first.timestamp) == ("in", 0, 0, "a", 1_000, 5)


def test_custom_extractor_returning_negative_drops_the_record(caplog) -> None:
    caplog.set_level(logging.WARNING)
    got = run(passthrough(lambda record, pt: -1 if record.key == "b" else record.timestamp),
              {}, [("a", 1, 10), ("b", 2, 20), ("c", 3, 30)])
    assert got == [("a", 1, 10), ("c", 3, 30)]
    assert any("in-0@1" in m and "negative extracted timestamp" in m for m in caplog.messages)


class PayloadTime:
    """A Kafka-style extractor class with ``extract``; also usable by dotted path."""

    def extract(self, record, partition_time):
        return record.value * 10


def test_per_source_extractor_overrides_the_default_and_dotted_paths_work() -> None:
    config = {"default.timestamp.extractor": f"{__name__}:PayloadTime"}
    assert run(passthrough(), config, [("a", 7, 1)]) == [("a", 7, 70)]
    assert run(passthrough(FailOnInvalidTimestamp()), config, [("a", 7, 1)]) == [("a", 7, 1)]
    assert run(passthrough(f"{__name__}.PayloadTime"), {}, [("a", 7, 1)]) == [("a", 7, 70)]


def test_unknown_extractor_is_rejected() -> None:
    with pytest.raises(ValueError, match="timestamp extractor"):
        TopologyTestDriver(passthrough(), {"default.timestamp.extractor": "Nope"})


class StreamTimeTicker(Processor):
    """Emits a tick per STREAM_TIME punctuation: driven by extracted timestamps."""

    def init(self, context) -> None:
        super().init(context)
        context.schedule(100, PunctuationType.STREAM_TIME,
                         lambda ts: context.forward(Record("tick", ts, ts)))

    def process(self, record) -> None:
        pass


def test_stream_time_follows_the_extracted_timestamps() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L,
                    timestamp_extractor=lambda record, pt: record.value)
        .process(StreamTimeTicker)
        .to("out", key_serde=S, value_serde=L))
    # Broker timestamps are all 0; stream time moves with the payload's event time.
    got = run(builder.build(), {}, [("a", 50, 0), ("b", 250, 0), ("c", 120, 0)])
    assert got == [("tick", 50, 50), ("tick", 250, 250)]
