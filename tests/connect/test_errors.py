"""Transforms on real records; errors.tolerance, retries, the dead-letter queue and its headers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_until
from worker_helpers import (
    ThreadedWorker,
    consume_all,
    http,
    produce,
    standalone,
    status_state,
    wait_running,
)

from connect.api import RetriableException, SinkConnector, SinkTask
from connect.runtime.errors import ErrorConfig, ErrorHandler, Stage, ToleranceExceeded

JSON = "org.apache.kafka.connect.json.JsonConverter"


@pytest.fixture
def worker(tmp_path: Path, broker) -> Iterator[ThreadedWorker]:
    instance = standalone(tmp_path, broker.bootstrap, **{
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": JSON, "value.converter.schemas.enable": "false"})
    try:
        yield instance
    finally:
        instance.stop()


def test_transform_chain_on_source_records(worker: ThreadedWorker, tmp_path: Path,
                                           broker) -> None:
    src = tmp_path / "in.txt"
    src.write_text("alpha\nbeta\ngamma\n")
    code, body = http("POST", worker.url + "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": str(src), "topic": "lines",
        "transforms": "hoist,origin,route,dropGamma",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.origin.type": "InsertField$Value",
        "transforms.origin.static.field": "origin",
        "transforms.origin.static.value": "file",
        "transforms.route.type": "RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "copy-$1",
        "transforms.dropGamma.type": "Filter",
        "transforms.dropGamma.predicate": "isGamma",
        "predicates": "isGamma",
        "predicates.isGamma.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.isGamma.name": "never-present",
    }})
    assert code == 201, body
    records = consume_all(broker.bootstrap, "copy-lines", 3)
    assert [json.loads(r.value) for r in records] == [
        {"line": "alpha", "origin": "file"}, {"line": "beta", "origin": "file"},
        {"line": "gamma", "origin": "file"}]
    code, topics = http("GET", worker.url + "/connectors/src/topics")
    assert topics == {"src": {"topics": ["copy-lines"]}}


def test_dead_letter_queue_with_context_headers(worker: ThreadedWorker, tmp_path: Path,
                                                broker) -> None:
    values = [b'{"n": 1}', b"not json", b'{"n": 2}', b'"a string"', b'{"n": 3}']
    produce(broker.bootstrap, "input", values, keys=[b"k%d" % i for i in range(5)],
            headers=[[("origin", b"test")]] * 5)
    out = tmp_path / "out.txt"
    code, body = http("POST", worker.url + "/connectors", {"name": "snk", "config": {
        "connector.class": "FileStreamSink", "file": str(out), "topics": "input",
        "transforms": "extract",
        "transforms.extract.type": "ExtractField$Value", "transforms.extract.field": "n",
        "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"}})
    assert code == 201, body
    wait_until(lambda: out.exists() and out.read_text().splitlines() == ["1", "2", "3"], 60,
               message="the good records in the file")
    dead = consume_all(broker.bootstrap, "dlq", 2)
    assert [(r.key, r.value) for r in dead] == [(b"k1", b"not json"), (b"k3", b'"a string"')]
    first = dict(dead[0].headers)
    assert first["origin"] == b"test"  # the original headers are kept
    assert first["__connect.errors.topic"] == b"input"
    assert first["__connect.errors.partition"] == b"0"
    assert first["__connect.errors.offset"] == b"1"
    assert first["__connect.errors.connector.name"] == b"snk"
    assert first["__connect.errors.task.id"] == b"0"
    assert first["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert b"JsonConverter" in first["__connect.errors.class.name"]
    assert first["__connect.errors.exception.class.name"]
    assert first["__connect.errors.exception.message"]
    assert b"Traceback" in first["__connect.errors.exception.stacktrace"]
    second = dict(dead[1].headers)
    assert second["__connect.errors.stage"] == b"TRANSFORMATION"
    assert second["__connect.errors.offset"] == b"3"
    assert b"ExtractField" in second["__connect.errors.class.name"]
    wait_until(lambda: http("GET", worker.url + "/connectors/snk/offsets")[1]["offsets"] == [
        {"partition": {"kafka_topic": "input", "kafka_partition": 0},
         "offset": {"kafka_offset": 5}}], message="offsets past the bad records")
    assert status_state(worker.url, "snk") == ("RUNNING", ["RUNNING"])


def test_tolerance_none_fails_the_task_and_commits_nothing_past_it(
        worker: ThreadedWorker, tmp_path: Path, broker) -> None:
    produce(broker.bootstrap, "input", [b'{"n": 1}', b"{broken"])
    out = tmp_path / "out.txt"
    assert http("POST", worker.url + "/connectors", {"name": "snk", "config": {
        "connector.class": "FileStreamSink", "file": str(out), "topics": "input"}})[0] == 201
    wait_until(lambda: status_state(worker.url, "snk")[1] == ["FAILED"], message="task FAILED")
    code, status = http("GET", worker.url + "/connectors/snk/status")
    assert "Tolerance exceeded" in status["tasks"][0]["trace"]
    assert status["connector"]["state"] == "RUNNING"
    assert http("GET", worker.url + "/connectors/snk/offsets")[1] == {"offsets": []}


# -- a sink task that uses the errant record reporter and RetriableException --------------------

WRITTEN: list[str] = []
ATTEMPTS: list[int] = []


class FlakySinkTask(SinkTask):
    def start(self, props: dict[str, str]) -> None:
        self.fail_first = props.get("fail.first") == "true"

    def put(self, records: list) -> None:
        if not records:
            return
        ATTEMPTS.append(len(records))
        if self.fail_first and len(ATTEMPTS) == 1:
            self.context.timeout(50)
            raise RetriableException("destination busy")
        reporter = self.context.errant_record_reporter()
        for record in records:
            if record.value == "poison":
                assert reporter is not None
                reporter.report(record, ValueError("cannot store poison")).result(30)
            else:
                WRITTEN.append(record.value)


class FlakySinkConnector(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = props

    def task_class(self) -> type:
        return FlakySinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"fail.first": self.props.get("fail.first", "false")}]


def test_errant_record_reporter_and_retriable_put(worker: ThreadedWorker, broker) -> None:
    WRITTEN.clear()
    ATTEMPTS.clear()
    produce(broker.bootstrap, "flaky", [b"a", b"poison", b"b"])
    code, body = http("POST", worker.url + "/connectors", {"name": "flaky", "config": {
        "connector.class": f"{__name__}.FlakySinkConnector", "topics": "flaky",
        "fail.first": "true", "value.converter": "StringConverter",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "flaky-dlq",
        "errors.deadletterqueue.context.headers.enable": "true"}})
    assert code == 201, body
    wait_until(lambda: WRITTEN == ["a", "b"], 60, message="records written once after a retry")
    assert len(ATTEMPTS) >= 2 and ATTEMPTS[0] == ATTEMPTS[1] == 3  # the same batch redelivered
    dead = consume_all(broker.bootstrap, "flaky-dlq", 1)
    assert [r.value for r in dead] == [b"poison"]
    headers = dict(dead[0].headers)
    assert headers["__connect.errors.stage"] == b"TASK_PUT"
    assert headers["__connect.errors.exception.message"] == b"cannot store poison"
    assert headers["__connect.errors.offset"] == b"1"
    wait_running(worker.url, "flaky", 1)


def test_retry_with_backoff_then_tolerance() -> None:
    calls: list[int] = []

    def sometimes() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RetriableException("try again")
        return "ok"

    async def scenario() -> None:
        handler = ErrorHandler(ErrorConfig(retry_timeout_ms=10_000, retry_delay_max_ms=20),
                               "c", 0)
        assert await handler.run(Stage.KEY_CONVERTER, "X", sometimes) == (True, "ok")
        assert len(calls) == 3

        def always() -> None:
            raise RetriableException("still down")

        calls.clear()
        quick = ErrorHandler(ErrorConfig(retry_timeout_ms=0), "c", 0)
        with pytest.raises(ToleranceExceeded):
            await quick.run(Stage.VALUE_CONVERTER, "X", always)
        tolerant = ErrorHandler(ErrorConfig(tolerate_all=True, retry_timeout_ms=50,
                                            retry_delay_max_ms=10), "c", 0)
        assert await tolerant.run(Stage.TRANSFORMATION, "X", always) == (False, None)
        assert tolerant.failures == 1

    asyncio.run(scenario())
