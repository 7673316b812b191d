"""Regressions for frames the protocol fuzzer (tests/fuzz) found: each is refused or answered
with an error, leaves at most one log line and no traceback, and the broker keeps serving."""

from __future__ import annotations

import logging
import resource
import subprocess
import sys

import pytest
from helpers import BrokerProcess, wait_until
from kio.index import load_response_schema
from kio.serial import entity_reader
from test_bad_input import api_versions_v0, encode_request, exchange, lines_for

from streams.broker import bounds, handlers, protocol
from streams.broker.records import Record, build_batch, validate_produced
from streams.broker.topics import OFFSETS_TOPIC, TRANSACTION_TOPIC

INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUEST = 42

# DescribeConfigs v1 whose legacy resources array claims 0x7fffffff elements in 0 bytes.
HUGE_LEGACY_COUNT = bytes.fromhex("0000001000200001000000070002667a7fffffff")

# Legacy (int32 -1) null arrays where the schema does not allow null, and the field named.
NULL_LEGACY_ARRAYS = {
    "DeleteTopics v3": ("topic_names", "000000210014000300000004000f61696f6b61666b612d302e3134"
                                       "2e30ffffffff00009c40"),
    "DescribeConfigs v1": ("resources", "000000160020000100000004000772646b61666b61ffffffff01"),
    "ListOffsets v3": ("partitions", "0000002e0002000300000005000f61696f6b61666b612d302e31342e"
                                     "30ffffffff00000000010006667a2d61696fffffffff"),
}


def _tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records
            if r.exc_info or r.exc_text or "Traceback" in r.getMessage()]


def _response(api_key: int, version: int, body: bytes) -> object:
    entity, _size = entity_reader(load_response_schema(api_key, version))(body, 0)
    return entity


def _metadata_ok(port: int) -> bool:
    request = encode_request(3, 4, 99, {"topics": None, "allow_auto_topic_creation": False})
    [(corr, body)] = exchange(port, request).responses()
    return corr == 99 and bool(_response(3, 4, body).brokers)


# -- 1. huge legacy array counts --------------------------------------------------------------


def test_huge_legacy_count_is_refused_before_kio_reads_it(monkeypatch) -> None:
    called = []
    monkeypatch.setattr(protocol, "_request_reader",
                        lambda *key: lambda *args: called.append(key) or (None, 0))
    ctx, pos = protocol.parse_header(HUGE_LEGACY_COUNT[4:])
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode_body(ctx, HUGE_LEGACY_COUNT[4:], pos)
    assert isinstance(info.value.__cause__, bounds.BoundsError)
    assert called == []


class LimitedBroker(BrokerProcess):
    """A broker subprocess whose address space is capped, so a huge allocation fails fast."""

    def start(self) -> LimitedBroker:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

        self.log_path = self.data_dir.parent / f"broker-{self.port}.log"
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "streams.cli.main", "broker", "start",
               "--data-dir", str(self.data_dir), "--port", str(self.port)]
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                         preexec_fn=limit)
        wait_until(self._accepting, 30, message=f"broker on port {self.port}")
        return self


def test_huge_legacy_count_does_not_crash_the_broker(tmp_path) -> None:
    broker = LimitedBroker(tmp_path / "data").start()
    try:
        result = exchange(broker.port, HUGE_LEGACY_COUNT)
        assert result.responses() == []
        assert _metadata_ok(broker.port)
        assert broker.proc is not None and broker.proc.poll() is None, "broker died"
        log = broker.log_path.read_text(errors="replace")
        assert "Traceback" not in log and "MemoryError" not in log, log[-2000:]
        assert [line for line in log.splitlines() if f", {result.port})" in line] != []
    finally:
        broker.stop()


# -- 2. produce into internal topics ----------------------------------------------------------


@pytest.mark.parametrize("topic", [TRANSACTION_TOPIC, OFFSETS_TOPIC])
def test_client_produce_into_an_internal_topic_is_refused(broker, topic) -> None:
    broker.call(broker.broker.groups.offsets.ensure_topic)  # both internal topics exist
    request = encode_request(0, 7, 31, {
        "transactional_id": None, "acks": -1, "timeout": 5000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": build_batch([Record(b"k", b"garbage", 1000)])}]}],
    })
    [(corr, body)] = exchange(broker.port, request).responses()
    assert corr == 31
    [partition] = _response(0, 7, body).responses[0].partition_responses
    assert partition.error_code.value == INVALID_TOPIC_EXCEPTION
    assert broker.call(lambda: broker.broker.topics.partition(topic, 0).next_offset) == 0


GARBAGE = {  # topic: a record its replay cannot parse
    TRANSACTION_TOPIC: Record(b"txn-1", b"\x00not json", 1000),
    OFFSETS_TOPIC: Record(b"\x00\x01\x00\x09group", b"\x00\x03", 1000),  # key runs short
}


@pytest.mark.parametrize("topic", sorted(GARBAGE))
def test_an_unreadable_internal_record_is_skipped_at_start(broker, caplog, topic) -> None:
    def write_garbage() -> None:
        broker.broker.groups.offsets.ensure_topic()
        plog = broker.broker.topics.partition(topic, 0)
        batch = build_batch([GARBAGE[topic]])
        plog.append(bytearray(batch), validate_produced(batch))

    broker.call(write_garbage)
    caplog.set_level(logging.INFO, logger="streams.broker")
    broker.restart()
    warnings = [r for r in caplog.records
                if r.levelno == logging.WARNING and topic in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert _tracebacks(caplog.records) == []
    assert _metadata_ok(broker.port)


# -- 3. legacy null arrays --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NULL_LEGACY_ARRAYS))
def test_legacy_null_array_is_refused_with_one_line(broker, caplog, name) -> None:
    caplog.set_level(logging.INFO)
    field, frame = NULL_LEGACY_ARRAYS[name]
    since = len(caplog.records)
    result = exchange(broker.port, bytes.fromhex(frame))
    assert result.responses() == []
    lines = lines_for(caplog, since, result)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno in (logging.INFO, logging.WARNING)
    assert f"non-nullable field {field}" in lines[0].getMessage()
    assert _tracebacks(caplog.records[since:]) == []
    assert api_versions_v0(broker.port) == handlers.supported_versions()


# -- 4. a resource name too long to echo in an error message ----------------------------------


@pytest.mark.parametrize("resource_type", [2, 4])  # topic, broker
def test_describe_configs_with_a_huge_resource_name_answers_an_error(
        broker, caplog, resource_type) -> None:
    caplog.set_level(logging.INFO)
    name = "a" * 32_767  # the longest legacy string: an error message quoting it is longer
    request = encode_request(32, 1, 41, {"resources": [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": None},
        {"resource_type": 4, "resource_name": "", "configuration_keys": None},
    ], "include_synonyms": False})
    since = len(caplog.records)
    result = exchange(broker.port, request)
    [(corr, body)] = result.responses()
    assert corr == 41
    huge, cluster = _response(32, 1, body).results
    assert huge.error_code.value == INVALID_REQUEST
    assert huge.resource_name == name
    assert cluster.error_code.value == 0
    assert lines_for(caplog, since, result) == []
    assert _tracebacks(caplog.records[since:]) == []


def test_create_topics_with_a_huge_name_answers_an_error(broker, caplog) -> None:
    """CreateTopics v4 (legacy strings) naming a topic of 32767 characters: the broker quoted
    the name in the error message, which then did not fit the answer, and closed the
    connection (fuzz seed 1130208818, case 4135)."""
    caplog.set_level(logging.INFO)
    name = "x" * 32_767
    request = encode_request(19, 4, 43, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout": 10_000, "validate_only": False})
    since = len(caplog.records)
    result = exchange(broker.port, request)
    [(corr, body)] = result.responses()
    assert corr == 43
    [topic] = _response(19, 4, body).topics
    assert topic.error_code.value == INVALID_TOPIC_EXCEPTION
    assert topic.name == name and len(topic.error_message) < 400
    assert _tracebacks(caplog.records[since:]) == []
    assert _metadata_ok(broker.port)
