"""Deserialization, processing and production exception handlers and the dead-letter queue,
through the TopologyTestDriver (the same StreamTask code the runtime runs)."""

from __future__ import annotations

import logging

import pytest

from streams import (
    ErrorHandlerContext,
    HandlerResponse,
    Processor,
    PunctuationType,
    Record,
    Serde,
    Serdes,
    StreamsBuilder,
    StreamsError,
)
from streams.processor.errors import HandlerFailedError, ProducerRecord
from streams.serde import SerializationError
from streams.testing import TopologyTestDriver

S, L, B = Serdes.string(), Serdes.long(), Serdes.bytes()
DLQ = {"errors.dead.letter.queue.topic.name": "dlq"}
ERROR_HEADERS = ("__streams.errors.exception", "__streams.errors.message",
                 "__streams.errors.stacktrace", "__streams.errors.topic",
                 "__streams.errors.partition", "__streams.errors.offset")


def passthrough():
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).to("out", key_serde=S, value_serde=L)
    return builder.build()


def dividing():
    """100 // value: a value of 0 makes the processor raise ZeroDivisionError."""
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .map_values(lambda v: 100 // v)
        .to("out", key_serde=S, value_serde=L))
    return builder.build()


class Picky(Serde[int]):
    """Refuses to serialize negative numbers (a production-side serialization failure)."""

    def serialize(self, topic: str, value: int | None) -> bytes | None:
        if value is not None and value < 0:
            raise SerializationError(f"negative value {value} for {topic}")
        return L.serialize(topic, value)

    def deserialize(self, topic: str, data: bytes | None) -> int | None:
        return L.deserialize(topic, data)


def picky_sink():
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=L).to("out", key_serde=S, value_serde=Picky())
    return builder.build()


def headers_of(record) -> dict[str, bytes | None]:
    return dict(record.headers)


def long_bytes(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


# -- deserialization --------------------------------------------------------------------------


def pipe_raw(config, values):
    """Pipe raw value bytes into ``passthrough``; what reached ``out``, and the driver's DLQ."""
    with TopologyTestDriver(passthrough(), config) as driver:
        raw = driver.create_input_topic("in", S, B)
        out = driver.create_output_topic("out", S, L)
        dlq = driver.create_output_topic("dlq", B, B)
        error = None
        try:
            for i, value in enumerate(values):
                raw.pipe_input(f"k{i}", value, 10 * i, headers=[("origin", b"test")])
        except StreamsError as exc:
            error = exc
        return out.read_key_values_to_list(), dlq.read_records_to_list(), error


GARBAGE = [long_bytes(1), b"\x01\x02\x03", long_bytes(3)]


def test_deserialization_log_and_fail_is_the_default() -> None:
    delivered, dead, error = pipe_raw({}, GARBAGE)
    assert delivered == [("k0", 1)]
    assert isinstance(error, HandlerFailedError) and "in-0@1" in str(error)
    assert "deserialization" in str(error)
    assert dead == []  # no DLQ configured


@pytest.mark.parametrize("key", ["deserialization.exception.handler",
                                 "default.deserialization.exception.handler",
                                 "deserialization_exception_handler"])
@pytest.mark.parametrize("name", ["log_and_continue", "LogAndContinueExceptionHandler",
                                  "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"])
def test_deserialization_log_and_continue_skips_and_logs(key, name, caplog) -> None:
    caplog.set_level(logging.WARNING)
    delivered, dead, error = pipe_raw({key: name}, GARBAGE)
    assert error is None
    assert delivered == [("k0", 1), ("k2", 3)]
    assert any("in-0@1" in m and "deserialization" in m for m in caplog.messages)


def test_deserialization_log_and_continue_with_dlq_dead_letters_the_raw_record() -> None:
    delivered, dead, error = pipe_raw(
        {"default.deserialization.exception.handler": "log_and_continue", **DLQ}, GARBAGE)
    assert error is None and delivered == [("k0", 1), ("k2", 3)]
    assert len(dead) == 1
    record = dead[0]
    assert (record.key, record.value, record.timestamp) == (b"k1", b"\x01\x02\x03", 10)
    headers = headers_of(record)
    assert headers["origin"] == b"test"  # the source record's headers are kept
    assert set(ERROR_HEADERS) <= set(headers)
    assert headers["__streams.errors.exception"] == b"streams.serde.SerializationError"
    assert headers["__streams.errors.topic"] == b"in"
    assert headers["__streams.errors.partition"] == b"0"
    assert headers["__streams.errors.offset"] == b"1"
    assert headers["__streams.errors.message"]
    assert b"Traceback" in headers["__streams.errors.stacktrace"]


def test_deserialization_log_and_fail_with_dlq_dead_letters_then_fails() -> None:
    delivered, dead, error = pipe_raw(DLQ, GARBAGE)
    assert isinstance(error, HandlerFailedError)
    assert delivered == [("k0", 1)]
    assert [(r.key, r.value) for r in dead] == [(b"k1", b"\x01\x02\x03")]


def test_unknown_or_misplaced_handler_names_are_rejected() -> None:
    for config in ({"default.deserialization.exception.handler": "x"},
                   {"processing.exception.handler": "LogAndContinueExceptionHandler"},
                   {"production.exception.handler": "no.such.module.handler"}):
        with pytest.raises(ValueError, match="exception handler"):
            TopologyTestDriver(passthrough(), config)


# -- processing (KIP-1033) --------------------------------------------------------------------


def pipe_values(topology, config, values, out_serde=L):
    with TopologyTestDriver(topology, config) as driver:
        inp = driver.create_input_topic("in", S, L)
        out = driver.create_output_topic("out", S, out_serde)
        dlq = driver.create_output_topic("dlq", B, B)
        error = None
        try:
            for i, value in enumerate(values):
                inp.pipe_input(f"k{i}", value, 10 * i)
        except StreamsError as exc:
            error = exc
        return out.read_key_values_to_list(), dlq.read_records_to_list(), error


def test_processing_exception_fails_by_default_naming_record_and_node() -> None:
    delivered, _dead, error = pipe_values(dividing(), {}, [5, 0, 4])
    assert delivered == [("k0", 20)]
    assert isinstance(error, HandlerFailedError)
    message = str(error)
    assert "in-0@1" in message and "KSTREAM-MAPVALUES" in message
    assert "ZeroDivisionError" in message
    assert isinstance(error.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("name", [
    "log_and_continue", "LogAndContinueProcessingExceptionHandler",
    "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler"])
def test_processing_log_and_continue_drops_only_the_failing_record(name, caplog) -> None:
    caplog.set_level(logging.WARNING)
    delivered, dead, error = pipe_values(dividing(), {"processing.exception.handler": name},
                                         [5, 0, 4])
    assert error is None
    assert delivered == [("k0", 20), ("k2", 25)]
    assert dead == []
    assert any("in-0@1" in m and "processing" in m and "ZeroDivisionError" in m
               for m in caplog.messages)


def test_processing_dlq_gets_the_source_bytes_not_the_failing_nodes_record() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .map_values(lambda v: v * 2)
        .map_values(lambda v: 100 // (v - 2))  # fails for an input of 1
        .to("out", key_serde=S, value_serde=L))
    delivered, dead, error = pipe_values(
        builder.build(), {"processing.exception.handler": "log_and_continue", **DLQ}, [2, 1, 3])
    assert error is None and delivered == [("k0", 50), ("k2", 25)]
    assert [(r.key, r.value, r.timestamp) for r in dead] == [(b"k1", long_bytes(1), 10)]
    headers = headers_of(dead[0])
    assert headers["__streams.errors.exception"] == b"ZeroDivisionError"
    assert headers["__streams.errors.offset"] == b"1"


def test_a_failing_branch_does_not_stop_its_siblings() -> None:
    builder = StreamsBuilder()
    source = builder.stream("in", key_serde=S, value_serde=L)
    source.map_values(lambda v: 100 // v).to("out", key_serde=S, value_serde=L)
    source.map_values(lambda v: -v).to("negated", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build(),
                            {"processing.exception.handler": "log_and_continue"}) as driver:
        driver.create_input_topic("in", S, L).pipe_input("a", 0, 1)
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == []
        assert driver.create_output_topic("negated", S, L).read_key_values_to_list() == [
            ("a", 0)]


class FailingPunctuator(Processor):
    def init(self, context) -> None:
        super().init(context)
        self.ticks = 0
        context.schedule(10, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, timestamp: int) -> None:
        self.ticks += 1
        if self.ticks == 1:
            raise RuntimeError("first tick fails")
        self.context.forward(Record("tick", self.ticks, timestamp))

    def process(self, record) -> None:
        self.context.forward(record)


def punctuating():
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .process(FailingPunctuator)
        .to("out", key_serde=S, value_serde=L))
    return builder.build()


def test_punctuator_exceptions_go_to_the_processing_handler() -> None:
    with TopologyTestDriver(punctuating(), {"processing.exception.handler": "log_and_continue",
                                           **DLQ}) as driver:
        driver.advance_wall_clock_time(10)  # fails, logged, dead-lettered with no source
        driver.advance_wall_clock_time(10)
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("tick", 2)]
        dead = driver.create_output_topic("dlq", B, B).read_records_to_list()
        assert len(dead) == 1 and dead[0].key is None and dead[0].value is None
        headers = headers_of(dead[0])
        assert headers["__streams.errors.topic"] is None
        assert headers["__streams.errors.message"] == b"first tick fails"
    with TopologyTestDriver(punctuating()) as driver, pytest.raises(HandlerFailedError,
                                                                    match="punctuation"):
        driver.advance_wall_clock_time(10)


# -- production -------------------------------------------------------------------------------


def test_production_serialization_error_fails_by_default() -> None:
    delivered, _dead, error = pipe_values(picky_sink(), {}, [1, -2, 3])
    assert delivered == [("k0", 1)]
    assert isinstance(error, HandlerFailedError)
    assert "production" in str(error) and "in-0@1" in str(error)
    assert "negative value -2" in str(error)


@pytest.mark.parametrize("name", ["continue", "log_and_continue"])
def test_production_continue_skips_the_record(name, caplog) -> None:
    caplog.set_level(logging.WARNING)
    delivered, dead, error = pipe_values(
        picky_sink(), {"production.exception.handler": name}, [1, -2, 3])
    assert error is None and delivered == [("k0", 1), ("k2", 3)] and dead == []
    assert any("in-0@1" in m and "production" in m for m in caplog.messages)


def test_production_default_handler_with_dlq_dead_letters_and_fails() -> None:
    delivered, dead, error = pipe_values(
        picky_sink(), {"default.production.exception.handler":
                       "org.apache.kafka.streams.errors.DefaultProductionExceptionHandler",
                       **DLQ}, [1, -2, 3])
    assert isinstance(error, HandlerFailedError) and delivered == [("k0", 1)]
    assert [(r.key, r.value) for r in dead] == [(b"k1", long_bytes(-2))]


# -- custom handlers --------------------------------------------------------------------------


seen: list[tuple[ErrorHandlerContext, object, BaseException]] = []


def dead_letter_zero_divisions(context, record, exc):
    """A custom handler: dead-letter division errors, fail on anything else."""
    seen.append((context, record, exc))
    if isinstance(exc, ZeroDivisionError):
        return HandlerResponse.DEAD_LETTER
    return HandlerResponse.FAIL


def test_custom_handler_callable_gets_context_record_and_exception() -> None:
    seen.clear()
    delivered, dead, error = pipe_values(
        dividing(), {"processing.exception.handler": dead_letter_zero_divisions, **DLQ},
        [5, 0, 4])
    assert error is None and delivered == [("k0", 20), ("k2", 25)]
    assert [(r.key, r.value) for r in dead] == [(b"k1", long_bytes(0))]
    (context, record, exc), = seen
    assert (context.topic, context.partition, context.offset, context.timestamp) == (
        "in", 0, 1, 10)
    assert context.processor_node_id.startswith("KSTREAM-MAPVALUES")
    assert str(context.task_id) == "0_0"
    assert (context.source_raw_key, context.source_raw_value) == (b"k1", long_bytes(0))
    assert isinstance(record, Record) and (record.key, record.value) == ("k1", 0)
    assert isinstance(exc, ZeroDivisionError)


def test_custom_handler_by_dotted_path() -> None:
    seen.clear()
    path = f"{__name__}:dead_letter_zero_divisions"
    delivered, dead, error = pipe_values(
        dividing(), {"processing.exception.handler": path, **DLQ}, [0])
    assert error is None and len(dead) == 1 and len(seen) == 1


class SkipNegatives:
    """A Kafka-style handler class: instantiated, configured, and its handle() called."""

    def configure(self, configs) -> None:
        self.app_id = configs.get("application.id")

    def handle(self, context, record, exc):
        assert isinstance(record, ProducerRecord) and record.topic == "out"
        assert self.app_id == "custom-app"
        return HandlerResponse.RESUME


def test_custom_handler_class_with_handle_and_configure() -> None:
    delivered, dead, error = pipe_values(
        picky_sink(), {"application.id": "custom-app",
                       "production.exception.handler": SkipNegatives, **DLQ}, [1, -2, 3])
    # A custom handler that says CONTINUE is not dead-lettered by the DLQ config (KIP-1034).
    assert error is None and delivered == [("k0", 1), ("k2", 3)] and dead == []


def test_dead_letter_without_a_dlq_topic_is_an_error() -> None:
    delivered, dead, error = pipe_values(
        dividing(), {"processing.exception.handler": dead_letter_zero_divisions}, [0])
    assert isinstance(error, StreamsError)
    assert "errors.dead.letter.queue.topic.name" in str(error)


def test_a_handler_that_raises_stops_processing() -> None:
    def broken(context, record, exc):
        raise KeyError("oops")

    _delivered, _dead, error = pipe_values(dividing(),
                                           {"processing.exception.handler": broken}, [0])
    assert isinstance(error, StreamsError) and "handler itself failed" in str(error)
