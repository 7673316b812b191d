"""TopologyTestDriver API (reference §4) and the deserialization exception handler."""

from __future__ import annotations

import logging

import pytest

from streams import Serdes, StreamsBuilder
from streams.processor.task import StreamsError
from streams.testing import NoSuchElementError, TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def passthrough(in_key=S, in_value=L):
    builder = StreamsBuilder()
    builder.stream("in", key_serde=in_key, value_serde=in_value).to("out", key_serde=S,
                                                                    value_serde=L)
    return builder.build()


@pytest.fixture
def driver():
    with TopologyTestDriver(passthrough()) as test_driver:
        yield test_driver


def test_pipe_key_value_list_with_start_timestamp_and_advance(driver) -> None:
    inp = driver.create_input_topic("in", S, L)
    out = driver.create_output_topic("out", S, L)
    inp.pipe_key_value_list([("a", 1), ("b", 2), ("c", 3)], start_timestamp=1_000, advance=500)
    assert out.read_records_to_list() == [
        TestRecord("a", 1, 1_000), TestRecord("b", 2, 1_500), TestRecord("c", 3, 2_000)]


def test_input_topic_time_auto_advances_and_advance_time_moves_it(driver) -> None:
    inp = driver.create_input_topic("in", S, L, start_timestamp=100, auto_advance=10)
    out = driver.create_output_topic("out", S, L)
    inp.pipe_input("a", 1)
    inp.pipe_input("b", 2)
    inp.pipe_input("c", 3, timestamp=5)  # an explicit timestamp does not consume the clock
    inp.advance_time(1_000)
    inp.pipe_input("d", 4)
    inp.pipe_value_list([5])
    assert [r.timestamp for r in out.read_records_to_list()] == [100, 110, 5, 1_120, 1_130]


def test_pipe_record_list_keeps_headers_and_fills_missing_timestamps(driver) -> None:
    inp = driver.create_input_topic("in", S, L, start_timestamp=7)
    out = driver.create_output_topic("out", S, L)
    inp.pipe_record_list([TestRecord("a", 1, 50, [("h", b"1")]), TestRecord("b", 2)])
    assert out.read_records_to_list() == [TestRecord("a", 1, 50, [("h", b"1")]),
                                          TestRecord("b", 2, 7)]


def test_reading_an_empty_or_unknown_topic_raises(driver) -> None:
    out = driver.create_output_topic("out", S, L)
    with pytest.raises(NoSuchElementError):
        out.read_value()
    with pytest.raises(NoSuchElementError):
        driver.create_output_topic("never-written", S, L).read_record()
    driver.create_input_topic("in", S, L).pipe_input("a", 1, 1)
    assert out.read_value() == 1
    with pytest.raises(NoSuchElementError):
        out.read_key_value()
    assert issubclass(NoSuchElementError, LookupError)


def test_queue_size_is_empty_and_the_read_variants(driver) -> None:
    inp = driver.create_input_topic("in", S, L)
    out = driver.create_output_topic("out", S, L)
    assert out.is_empty() and out.get_queue_size() == 0
    inp.pipe_key_value_list([("a", 1), ("b", 2), ("a", 3), ("c", 4)], 0, 1)
    assert out.get_queue_size() == 4 and not out.is_empty()
    assert out.read_key_value() == ("a", 1)
    assert out.read_record() == TestRecord("b", 2, 1)
    assert out.get_queue_size() == 2
    assert out.read_values_to_list() == [3, 4]
    assert out.is_empty()
    inp.pipe_key_value_list([("a", 5), ("b", 6)])
    assert out.read_key_values_to_list() == [("a", 5), ("b", 6)]


def test_read_key_values_to_map_keeps_the_last_value_and_tombstones(driver) -> None:
    inp = driver.create_input_topic("in", S, L)
    out = driver.create_output_topic("out", S, L)
    inp.pipe_key_value_list([("a", 1), ("b", 2), ("a", 3), ("b", None)])
    assert out.read_key_values_to_map() == {"a": 3, "b": None}


def test_test_record_equality_covers_key_value_timestamp_and_headers() -> None:
    base = TestRecord("k", 1, 10, [("h", b"x")])
    assert base == TestRecord("k", 1, 10, (("h", b"x"),))
    assert base != TestRecord("j", 1, 10, [("h", b"x")])
    assert base != TestRecord("k", 2, 10, [("h", b"x")])
    assert base != TestRecord("k", 1, 11, [("h", b"x")])
    assert base != TestRecord("k", 1, 10, [("h", b"y")])
    assert base != TestRecord("k", 1, 10)
    assert hash(base) == hash(TestRecord("k", 1, 10, [("h", b"x")]))


def test_piping_to_a_topic_nobody_reads_is_an_error(driver) -> None:
    with pytest.raises(ValueError, match="nope"):
        driver.create_input_topic("nope", S, L).pipe_input("a", 1, 1)


def test_unknown_store_and_closed_driver(driver) -> None:
    with pytest.raises(KeyError):
        driver.get_key_value_store("missing")
    inp = driver.create_input_topic("in", S, L)
    driver.close()
    driver.close()  # idempotent
    with pytest.raises(RuntimeError):
        inp.pipe_input("a", 1, 1)


def test_produced_topic_names_lists_what_sinks_wrote(driver) -> None:
    assert driver.produced_topic_names() == set()
    driver.create_input_topic("in", S, L).pipe_input("a", 1, 1)
    assert driver.produced_topic_names() == {"out"}


def test_default_serdes_from_config() -> None:
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v.upper()).to("out")
    config = {"default.key.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
              "default.value.serde": "string"}
    with TopologyTestDriver(builder.build(), config) as driver:
        driver.create_input_topic("in").pipe_input("k", "hello", 1)
        out = driver.create_output_topic("out")
        assert out.read_key_value() == ("k", "HELLO")


def test_application_id_from_config_prefixes_internal_topics() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).group_by_key().count("c")
    with TopologyTestDriver(builder.build(), {"application.id": "my-app"}) as driver:
        driver.create_input_topic("in", S, L).pipe_input("a", 1, 1)
        assert driver.produced_topic_names() == {"my-app-c-changelog"}
        changelog = driver.create_output_topic("my-app-c-changelog", S, L)
        assert changelog.read_record() == TestRecord("a", 1, 1)


# -- default.deserialization.exception.handler ------------------------------------------------


def pipe_garbage(config):
    with TopologyTestDriver(passthrough(), config) as driver:
        raw = driver.create_input_topic("in", S, Serdes.bytes())
        out = driver.create_output_topic("out", S, L)
        raw.pipe_input("good", (1).to_bytes(8, "big"), 1)
        try:
            raw.pipe_input("bad", b"\x01\x02\x03", 2)  # not an 8-byte long
        finally:
            delivered = out.read_key_values_to_list()
        raw.pipe_input("after", (3).to_bytes(8, "big"), 3)
        return delivered + out.read_key_values_to_list()


def test_log_and_fail_is_the_default_and_raises() -> None:
    with pytest.raises(StreamsError, match="in-0@1"):
        pipe_garbage(None)
    with pytest.raises(StreamsError):
        pipe_garbage({"default.deserialization.exception.handler": "LogAndFailExceptionHandler"})


@pytest.mark.parametrize("name", [
    "log_and_continue", "LogAndContinueExceptionHandler",
    "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"])
def test_log_and_continue_skips_and_logs(name, caplog) -> None:
    caplog.set_level(logging.WARNING)
    config = {"default.deserialization.exception.handler": name}
    assert pipe_garbage(config) == [("good", 1), ("after", 3)]
    assert any("in-0@1" in message for message in caplog.messages)


def test_an_unknown_handler_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="handler"):
        TopologyTestDriver(passthrough(), {"default.deserialization.exception.handler": "x"})
