"""The sink worker's batch fast path gives exactly what the per-record path gives.

Covers the converters' ``to_connect_batch`` against ``to_connect_data``, the worker's record
constructor against ``SinkRecord(...)``, and ``WorkerSinkTask`` delivering a fetch with good, bad,
header-carrying and transform-failing records: every failing record still goes through retries,
tolerance and the dead-letter queue, stage by stage, and the errant record reporter still finds the
raw message of a record.
"""

from __future__ import annotations

import asyncio
import decimal
import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord, TopicPartition

from connect.api import RetriableException, SinkTask, SinkTaskContext
from connect.converters import (
    ByteArrayConverter,
    IntegerConverter,
    JsonConverter,
    StringConverter,
)
from connect.converters.base import to_connect_batch
from connect.converters.json import _DECODER, _schemaless_from_json
from connect.data import DataException, Schema
from connect.file.sink import FileStreamSinkTask, render
from connect.records import ConnectHeaders, SinkRecord, SinkRecordBatch, TimestampType
from connect.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorConfig,
    ErrorHandler,
    ToleranceExceeded,
)
from connect.runtime.plugin_thread import PluginThread
from connect.runtime.sink_task import WorkerSinkTask, _find_message
from connect.runtime.task_support import Converters
from connect.transforms import TransformationChain

TOPIC = "in"


def _json(schemas: bool) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({"schemas.enable": str(schemas).lower()}, False)
    return conv


def _string() -> StringConverter:
    conv = StringConverter()
    conv.configure({}, True)
    return conv


def _per_value(conv: Any, values: list[Any]) -> tuple[list[Any], list[Any]]:
    pairs = [conv.to_connect_data(TOPIC, v) for v in values]
    return [p.schema for p in pairs], [p.value for p in pairs]


# -- converters ----------------------------------------------------------------------------------

SCHEMALESS = [b'{"a":1,"b":[1.5,-0.0,1e400,null,true],"c":{"d":"\\u00e9x"}}', None, b"null",
              b"0.1", b"5e-324", b"1.7976931348623157e308", b"123456789012345678901234567890.5",
              b'"caf\xc3\xa9"', b"[]", b"-12", b"1E2", b"NaN", b'{"k":"v","k":"w"}']


def test_json_schemaless_batch_matches_per_value_and_the_decimal_reading() -> None:
    conv = _json(False)
    schemas, values = to_connect_batch(conv, TOPIC, SCHEMALESS)
    one_by_one = _per_value(conv, SCHEMALESS)
    # Compared through repr: NaN != NaN, and -0.0 == 0.0 would hide a lost sign.
    assert schemas == one_by_one[0] == [None] * len(SCHEMALESS)
    assert repr(values) == repr(one_by_one[1])
    # The plain decoder gives what decoding numbers as Decimal and then to float gave.
    for raw, value in zip(SCHEMALESS, values, strict=True):
        if raw is not None:
            expected = _schemaless_from_json(_DECODER.decode(raw.decode()))
            assert repr(value) == repr(expected), raw
    assert math.copysign(1.0, values[0]["b"][1]) == -1.0
    assert values[0]["b"][2] == math.inf


def test_json_with_schemas_batch_matches_per_value() -> None:
    conv = _json(True)
    raw = [b'{"schema":{"type":"int32","optional":false},"payload":7}',
           b'{"schema":{"type":"double","optional":true},"payload":0.1}',
           b'{"schema":null,"payload":{"x":1.25}}', None,
           b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
           b'Decimal","parameters":{"scale":"2"}},"payload":"AJY="}']
    assert to_connect_batch(conv, TOPIC, raw) == _per_value(conv, raw)
    assert to_connect_batch(conv, TOPIC, raw)[1][4] == decimal.Decimal("1.50")


@pytest.mark.parametrize("conv", [_json(False), _json(True), _string(), ByteArrayConverter(),
                                  IntegerConverter()],
                         ids=["json", "json-schemas", "string", "bytes", "integer"])
def test_every_converter_batch_matches_per_value(conv: Any) -> None:
    values: list[Any] = {
        JsonConverter: [b'{"n":1}', None, b'"s"'],
        StringConverter: [b"a", None, "é".encode(), b""],
        ByteArrayConverter: [b"\x00\x01", None, bytearray(b"x")],
        IntegerConverter: [b"\x00\x00\x00\x07", None],
    }[type(conv)]
    if isinstance(conv, JsonConverter) and conv.schemas_enable:
        values = [b'{"schema":null,"payload":1}', None]
    assert to_connect_batch(conv, TOPIC, values) == _per_value(conv, values)


@pytest.mark.parametrize("conv, bad", [
    (_json(False), b"{not json"), (_json(False), b"\xff\xfe"), (_json(True), b'{"n":1}'),
    (_string(), b"\xff"), (IntegerConverter(), b"\x01")])
def test_a_bad_value_raises_what_the_per_value_call_raises(conv: Any, bad: bytes) -> None:
    good = {JsonConverter: b"1", StringConverter: b"ok", IntegerConverter: b"\x00\x00\x00\x01"}
    values = [good[type(conv)], bad, good[type(conv)]]
    with pytest.raises(DataException) as single:
        conv.to_connect_data(TOPIC, bad)
    with pytest.raises(DataException) as batch:
        to_connect_batch(conv, TOPIC, values)
    assert str(batch.value) == str(single.value)


# -- records -------------------------------------------------------------------------------------

def test_consumed_record_equals_the_public_constructor() -> None:
    args = (TOPIC, 3, Schema.OPTIONAL_STRING_SCHEMA, "k", None, {"v": 1}, 42, 1700,
            TimestampType.CREATE_TIME)
    fast = SinkRecord._consumed(*args)
    slow = SinkRecord(*args, None)
    assert fast == slow and repr(fast) == repr(slow)
    assert (fast.original_topic, fast.original_kafka_partition, fast.original_kafka_offset) == (
        TOPIC, 3, 42)
    assert fast.headers == ConnectHeaders() and len(fast.headers) == 0
    fast.headers.add_string("h", "x")  # made on first use, then kept
    assert fast.headers.last_with_name("h").value == "x"
    moved = SinkRecord._consumed(*args).with_(topic="other", kafka_partition=0)
    assert (moved.topic, moved.original_topic, moved.original_kafka_partition) == (
        "other", TOPIC, 3)
    assert moved.headers == ConnectHeaders()
    with pytest.raises(ValueError, match="negative timestamp"):
        SinkRecord._consumed(TOPIC, 0, None, None, None, None, 1, -5,
                             TimestampType.NO_TIMESTAMP_TYPE)


# -- the worker ----------------------------------------------------------------------------------

class _Capture(SinkTask):
    def __init__(self) -> None:
        self.batches: list[list[SinkRecord]] = []

    def start(self, props: dict[str, str]) -> None:
        """Nothing to open."""

    def put(self, records: list) -> None:
        self.batches.append(list(records))


class _Producer:
    """Stands in for the DLQ producer: keeps what would be sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, list[tuple[str, bytes]]]] = []

    async def send_and_wait(self, topic: str, value: Any, key: Any, headers: Any) -> None:
        self.sent.append((value, headers))


class _Env:
    def on_topic(self, connector: str, topic: str) -> None:
        """Not tracked here."""


class _Id:
    connector, task = "snk", 0

    def __str__(self) -> str:
        return "snk-0"


def _runner(config: ErrorConfig, chain: dict[str, str] | None = None,
            value: Any = None) -> tuple[WorkerSinkTask, _Capture, _Producer]:
    """A WorkerSinkTask wired as ``execute`` wires it, without a consumer or broker."""
    runner = WorkerSinkTask.__new__(WorkerSinkTask)
    runner.env, runner.id = _Env(), _Id()  # type: ignore[assignment]
    runner.current, runner.raw_batch, runner.fatal, runner.stopping = {}, {}, None, False
    runner.thread, runner.abandoned = PluginThread("task-thread-snk-0"), False
    runner.converters = Converters(_string(), value or _json(False), _string())
    runner.chain = TransformationChain.from_config(chain or {})
    producer = _Producer()
    runner.errors = ErrorHandler(config, "snk", 0,
                                 DeadLetterQueueReporter(producer, config, "snk", 0))
    runner.task = _Capture()
    runner.context = SinkTaskContext({}, None)
    return runner, runner.task, producer


def _msg(offset: int, value: bytes | None, headers: Any = (), ts: int = 1000) -> ConsumerRecord:
    return ConsumerRecord(TOPIC, 0, offset, ts, 0, b"k%d" % offset, value, None,
                          len(value or b""), 2, headers)


EXTRACT = {"transforms": "x", "transforms.x.type": "ExtractField$Value", "transforms.x.field": "n"}


def _fetch() -> list[ConsumerRecord]:
    return [_msg(10, b'{"n":1}'), _msg(11, b"not json"), _msg(12, b'{"n":2}', [("h", b"1")]),
            _msg(14, b'"no field n"'), _msg(15, None), _msg(16, b'{"n":3}')]


def _slow_path(runner: WorkerSinkTask, messages: list[ConsumerRecord]) -> list[SinkRecord]:
    async def each() -> list[SinkRecord]:
        out = [await runner._convert(m) for m in messages]
        return [r for r in out if r is not None]

    return asyncio.run(each())


def test_fetch_with_failures_gives_the_slow_path_records_and_dlq_entries() -> None:
    config = ErrorConfig(tolerate_all=True, dlq_topic="dlq", dlq_context_headers=True)
    fast, task, producer = _runner(config, EXTRACT)
    asyncio.run(fast._deliver_batch({TopicPartition(TOPIC, 0): _fetch()}))
    slow, _, slow_producer = _runner(config, EXTRACT)
    expected = _slow_path(slow, _fetch())
    assert task.batches == [expected]
    assert [r.value for r in expected] == [1, 2, None, 3]
    assert expected[1].headers.last_with_name("h").value == "1"
    assert fast.current == {TopicPartition(TOPIC, 0): 17}
    assert fast.errors.failures == 2
    assert producer.sent == slow_producer.sent
    stages = [dict(h)["__connect.errors.stage"] for _, h in producer.sent]
    assert stages == [b"VALUE_CONVERTER", b"TRANSFORMATION"]
    assert [dict(h)["__connect.errors.offset"] for _, h in producer.sent] == [b"11", b"14"]


def test_without_tolerance_a_bad_record_fails_the_batch() -> None:
    runner, task, producer = _runner(ErrorConfig(dlq_topic="dlq"))
    with pytest.raises(ToleranceExceeded):
        asyncio.run(runner._deliver_batch({TopicPartition(TOPIC, 0): _fetch()}))
    assert task.batches == [] and runner.current == {}
    assert [v for v, _ in producer.sent] == [b"not json"]


class _FlakyConverter:
    """Fails every value once with a RetriableException, then converts it (no batch method)."""

    def __init__(self) -> None:
        self.seen: set[bytes | None] = set()

    def configure(self, configs: dict[str, Any], is_key: bool = False) -> None:
        """No settings."""

    def to_connect_data(self, topic: str, value: bytes | None) -> Any:
        if value not in self.seen:
            self.seen.add(value)
            raise RetriableException("not yet")
        return StringConverter().to_connect_data(topic, value)


def test_retriable_conversion_errors_are_retried_in_the_slow_path() -> None:
    config = ErrorConfig(retry_timeout_ms=10_000, retry_delay_max_ms=1)
    runner, task, _ = _runner(config, value=_FlakyConverter())
    messages = [_msg(0, b"a"), _msg(1, b"b")]
    asyncio.run(runner._deliver_batch({TopicPartition(TOPIC, 0): messages}))
    assert [r.value for r in task.batches[0]] == ["a", "b"]
    assert runner.errors.failures == 0


def test_records_match_the_slow_path_without_transforms() -> None:
    messages = [_msg(i, json.dumps({"i": i, "f": i / 3}).encode(), ts=2000 + i)
                for i in range(50)]
    fast, task, _ = _runner(ErrorConfig())
    asyncio.run(fast._deliver_batch({TopicPartition(TOPIC, 0): messages,
                                     TopicPartition(TOPIC, 1): []}))
    slow, _, _ = _runner(ErrorConfig())
    assert task.batches == [_slow_path(slow, messages)]
    assert task.batches[0][0].timestamp_type is TimestampType.CREATE_TIME


class _Columns(_Capture):
    """A task that takes records as columns."""

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[list[SinkRecordBatch]] = []

    def put_batches(self, batches: list[SinkRecordBatch]) -> None:
        self.columns.append(list(batches))


def _columns_runner(chain: dict[str, str] | None = None
                    ) -> tuple[WorkerSinkTask, _Columns, _Producer]:
    config = ErrorConfig(tolerate_all=True, dlq_topic="dlq")
    runner, _, producer = _runner(config, chain)
    runner.task = task = _Columns()
    return runner, task, producer


def test_a_task_taking_columns_gets_one_batch_per_partition() -> None:
    zero = [_msg(i, json.dumps({"i": i}).encode(), ts=2000 + i) for i in range(5)]
    one = [ConsumerRecord(TOPIC, 1, o, 3000 + o, 1, None, b"[]", None, 2, 2, ())
           for o in (7, 9)]
    runner, task, _ = _columns_runner()
    asyncio.run(runner._deliver_batch({TopicPartition(TOPIC, 0): zero,
                                       TopicPartition(TOPIC, 1): one,
                                       TopicPartition(TOPIC, 2): []}))
    assert task.batches == []
    [batches] = task.columns
    assert [(b.topic, b.partition, b.offsets) for b in batches] == [
        (TOPIC, 0, [0, 1, 2, 3, 4]), (TOPIC, 1, [7, 9])]
    assert batches[0].values == [{"i": i} for i in range(5)]
    assert batches[0].keys == [f"k{i}" for i in range(5)]
    assert batches[1].timestamps == [3007, 3009]
    assert batches[1].timestamp_types == [TimestampType.LOG_APPEND_TIME] * 2
    slow, _, _ = _runner(ErrorConfig())
    assert batches[0].records() == _slow_path(slow, zero)
    assert batches[1].record(1) == _slow_path(slow, one)[1]
    assert runner.current == {TopicPartition(TOPIC, 0): 5, TopicPartition(TOPIC, 1): 10}


@pytest.mark.parametrize("fetch, chain", [
    ([_msg(0, b"1"), _msg(1, b"2", [("h", b"x")])], None),  # a header
    ([_msg(0, b"1"), _msg(1, b"not json")], None),  # a conversion failure
    ([_msg(0, b'{"n":1}')], EXTRACT),  # a transform
])
def test_records_needing_the_per_record_path_reach_put(fetch: list[ConsumerRecord],
                                                       chain: dict[str, str] | None) -> None:
    runner, task, _ = _columns_runner(chain)
    asyncio.run(runner._deliver_batch({TopicPartition(TOPIC, 0): fetch}))
    assert task.columns == []
    slow, _, _ = _columns_runner(chain)
    assert task.batches == [_slow_path(slow, fetch)]


def test_default_put_batches_hands_records_to_put() -> None:
    task = _Capture()
    columns = SinkRecordBatch(TOPIC, 3, [4, 5], [10, None],
                              [TimestampType.CREATE_TIME, TimestampType.NO_TIMESTAMP_TYPE],
                              [None, None], [b"a", None], [None, None], [1, 2])
    task.put_batches([columns])
    assert task.batches == [[
        SinkRecord(TOPIC, 3, None, b"a", None, 1, 4, 10, TimestampType.CREATE_TIME),
        SinkRecord(TOPIC, 3, None, None, None, 2, 5, None, TimestampType.NO_TIMESTAMP_TYPE)]]


def test_errant_reporter_finds_the_raw_message_by_original_offset() -> None:
    messages = [_msg(o, b"1") for o in (3, 4, 7, 9)]  # gaps, as after compaction
    batch = {TopicPartition(TOPIC, 0): messages}
    assert _find_message(batch, TOPIC, 0, 7) is messages[2]
    assert _find_message(batch, TOPIC, 0, 9) is messages[3]
    assert _find_message(batch, TOPIC, 0, 5) is None
    assert _find_message(batch, TOPIC, 0, 10) is None
    assert _find_message(batch, TOPIC, 1, 3) is None


# -- the file sink -------------------------------------------------------------------------------

class _Text(str):
    pass


@pytest.mark.parametrize("value, line", [
    ({"a": [1, 2.5, None], "b": "é"}, '{"a":[1,2.5,null],"b":"\\u00e9"}'),
    (OrderedDict(z=1), '{"z":1}'), ([True, {"x": b"y"}], '[true,{"x":"b\'y\'"}]'),
    ({1: {1, 2}}, '{"1":"{1, 2}"}'), ({"n": math.nan}, '{"n":NaN}'), ("text", "text"),
    (_Text("sub"), "sub"), (None, "null"), (True, "true"), (b"\xff!", "\ufffd!"), (7, "7"),
    (decimal.Decimal("1.50"), "1.50")])
def test_render_lines(value: Any, line: str) -> None:
    assert render(value) == line


def test_file_sink_writes_one_line_per_record(tmp_path: Any) -> None:
    task = FileStreamSinkTask()
    task.start({"file": str(tmp_path / "out.txt")})
    records = [SinkRecord._consumed(TOPIC, 0, None, None, None, v, i, None,
                                    TimestampType.NO_TIMESTAMP_TYPE)
               for i, v in enumerate([{"a": 1}, "two", None])]
    task.put(records)
    task.put([])
    task.stop()
    assert (tmp_path / "out.txt").read_text() == '{"a":1}\ntwo\nnull\n'
