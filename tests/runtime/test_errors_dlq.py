"""Exception handlers, the dead-letter topic and wall-clock punctuation on the embedded broker."""

from __future__ import annotations

import pytest

from streams import KafkaStreams, Processor, PunctuationType, Record, Serdes, StreamsBuilder
from streams.processor.errors import HandlerFailedError
from streams.runtime import State

from .kafka_io import create_topics, produce, read_all

S, L = Serdes.string(), Serdes.long()


def _config(broker, tmp_path, app_id, **extra):
    return {"application.id": app_id, "bootstrap.servers": broker.bootstrap,
            "commit.interval.ms": 100, "state.dir": str(tmp_path / app_id), **extra}


def doubling():
    """in (string -> long) -> value * 2 -> out; 100 // 0 style failures for value 0."""
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .map_values(lambda v: 200 // v)
        .to("out", key_serde=S, value_serde=L))
    return builder.build()


def long_bytes(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


INPUT = [(b"a", long_bytes(1), 1_000), (b"poison", b"\xde\xad", 2_000),
         (b"b", long_bytes(2), 3_000)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_poison_record_is_skipped_and_dead_lettered(broker, tmp_path, guarantee) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1, "app-dlq": 1})
    produce(broker.bootstrap, "in", INPUT)
    streams = KafkaStreams(doubling(), _config(
        broker, tmp_path, f"dlq-{guarantee.replace('_', '-')}",
        **{"processing.guarantee": guarantee,
           "default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
           "errors.dead.letter.queue.topic.name": "app-dlq"}))
    streams.start()
    try:
        out = read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 2)
        assert [(r.key, int.from_bytes(r.value, "big")) for r in out] == [(b"a", 200),
                                                                         (b"b", 100)]
        dead = read_all(broker.bootstrap, "app-dlq", until=lambda rs: len(rs) >= 1)
        assert len(dead) == 1
        record = dead[0]
        assert (record.key, record.value, record.timestamp) == (b"poison", b"\xde\xad", 2_000)
        headers = dict(record.headers)
        assert headers["__streams.errors.exception"] == b"streams.serde.SerializationError"
        assert headers["__streams.errors.topic"] == b"in"
        assert headers["__streams.errors.partition"] == b"0"
        assert headers["__streams.errors.offset"] == b"1"
        assert headers["__streams.errors.message"]
        assert b"Traceback" in headers["__streams.errors.stacktrace"]
        assert streams.wait_for_state(State.RUNNING, timeout=30)
    finally:
        assert streams.close(timeout=30)


def test_log_and_fail_puts_the_instance_in_error_with_the_reason(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1, "app-dlq": 1})
    produce(broker.bootstrap, "in", INPUT)
    streams = KafkaStreams(doubling(), _config(
        broker, tmp_path, "fail-app", **{"errors.dead.letter.queue.topic.name": "app-dlq"}))
    streams.start()
    assert streams.wait_for_state(State.ERROR, timeout=30)
    assert isinstance(streams.error, HandlerFailedError)
    assert "in-0@1" in str(streams.error) and "deserialization" in str(streams.error)
    # The built-in log_and_fail handler dead-letters before failing (KIP-1034); under
    # at_least_once the dead letter is delivered.
    dead = read_all(broker.bootstrap, "app-dlq", until=lambda rs: len(rs) >= 1)
    assert [(r.key, r.value) for r in dead] == [(b"poison", b"\xde\xad")]
    streams.close(timeout=10)


def test_processing_exception_is_handled_per_config(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1, "app-dlq": 1})
    produce(broker.bootstrap, "in", [(b"a", long_bytes(1), 1), (b"zero", long_bytes(0), 2),
                                     (b"b", long_bytes(4), 3)])
    streams = KafkaStreams(doubling(), _config(
        broker, tmp_path, "processing-app",
        **{"processing.exception.handler": "LogAndContinueProcessingExceptionHandler",
           "errors.dead.letter.queue.topic.name": "app-dlq"}))
    streams.start()
    try:
        out = read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 2)
        assert [(r.key, int.from_bytes(r.value, "big")) for r in out] == [(b"a", 200),
                                                                         (b"b", 50)]
        dead = read_all(broker.bootstrap, "app-dlq", until=lambda rs: len(rs) >= 1)
        assert [(r.key, r.value) for r in dead] == [(b"zero", long_bytes(0))]
        assert dict(dead[0].headers)["__streams.errors.exception"] == b"ZeroDivisionError"
        assert streams.wait_for_state(State.RUNNING, timeout=30)
    finally:
        assert streams.close(timeout=30)


def test_a_record_too_large_for_the_producer_is_skipped_with_continue(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1})
    produce(broker.bootstrap, "in", [(b"small", b"x", 1), (b"huge", b"y", 2),
                                     (b"small2", b"z", 3)])
    builder = StreamsBuilder()
    b = Serdes.bytes()
    (builder.stream("in", key_serde=b, value_serde=b)
        .map_values(lambda v: v * 2_000_000 if v == b"y" else v)  # 2 MB > max.request.size
        .to("out", key_serde=b, value_serde=b))
    streams = KafkaStreams(builder.build(), _config(
        broker, tmp_path, "too-large", **{"production.exception.handler": "continue"}))
    streams.start()
    try:
        out = read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 2)
        assert [(r.key, r.value) for r in out] == [(b"small", b"x"), (b"small2", b"z")]
        assert streams.wait_for_state(State.RUNNING, timeout=30)
    finally:
        assert streams.close(timeout=30)


class Ticker(Processor):
    """Forwards one record per wall-clock punctuation, whether or not input arrives."""

    def init(self, context) -> None:
        super().init(context)
        self.ticks = 0
        context.schedule(50, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, timestamp: int) -> None:
        self.ticks += 1
        self.context.forward(Record("tick", self.ticks, timestamp))

    def process(self, record) -> None:
        pass


def test_wall_clock_punctuator_fires_with_no_input(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1})
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .process(Ticker)
        .to("out", key_serde=S, value_serde=L))
    streams = KafkaStreams(builder.build(), _config(broker, tmp_path, "ticker"))
    streams.start()
    try:
        out = read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 3)
        ticks = [int.from_bytes(r.value, "big") for r in out]
        assert ticks[:3] == [1, 2, 3]
        times = [r.timestamp for r in out]
        assert times == sorted(times) and times[1] - times[0] >= 50
    finally:
        assert streams.close(timeout=30)


def test_streams_config_names_a_bad_handler_or_extractor_key() -> None:
    from streams.config import ConfigError
    from streams.runtime.config import StreamsConfig

    for key in ("processing.exception.handler", "production.exception.handler",
                "deserialization.exception.handler", "default.timestamp.extractor"):
        with pytest.raises(ConfigError, match=f"'{key}' = 'bogus'"):
            StreamsConfig.from_mapping({"application.id": "a", key: "bogus"})
    config = StreamsConfig.from_mapping({
        "application.id": "a", "errors.dead.letter.queue.topic.name": "dlq",
        "default.production.exception.handler": "DefaultProductionExceptionHandler",
        "processing.exception.handler": "log_and_continue"}).task_config()
    assert config.errors is not None and config.errors.dead_letter_topic == "dlq"
    assert config.errors.processing.builtin and config.errors.production.builtin
