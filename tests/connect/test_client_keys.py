"""Connect's producer keys that aiokafka has no argument for: ``max.in.flight.requests.per.connection``,
``buffer.memory`` and ``delivery.timeout.ms`` (KIP-91). A bad value is refused naming the key
when the worker starts (worker ``producer.*``) or when the connector is created
(``producer.override.*``), never when a task starts; a good one is honoured: a broker outage
longer than ``request.timeout.ms`` loses nothing under Kafka Connect's default delivery timeout
(for ever), and fails the task past a delivery timeout the user set."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import create_topics, free_port, wait_until
from worker_helpers import consume_all, http, standalone, status_state, wait_running

COUNT = 500


def _seq(tmp_path: Path, name: str, **overrides: str) -> dict[str, str]:
    return {"connector.class": "tests.connect.seq_plugins.SeqSource", "tasks.max": "1",
            "topic": name, "count": str(COUNT), "partitions": "1",
            "acks.file": str(tmp_path / f"{name}.acks"),
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            **{f"producer.override.{k}": v for k, v in overrides.items()}}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("max.in.flight.requests.per.connection", "0",
     "Invalid value 0 for configuration producer.max.in.flight.requests.per.connection: "
     "Value must be at least 1"),
    ("buffer.memory", "lots",
     "Invalid value lots for configuration producer.buffer.memory: Not a number of type LONG"),
    ("delivery.timeout.ms", "5",
     "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"),
])
def test_a_worker_with_a_bad_producer_key_does_not_start(tmp_path: Path, key: str, value: str,
                                                        message: str) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:1\n"
                      f"listeners=http://127.0.0.1:{free_port()}\n"
                      f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n"
                      f"producer.{key}={value}\n")
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", "standalone",
                             str(worker)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_connector_producer_overrides_are_checked_at_creation(tmp_path: Path, broker) -> None:
    create_topics(broker.bootstrap, {"ok": 1})
    worker = standalone(tmp_path, broker.bootstrap,
                        **{"connector.client.config.override.policy": "All"})
    try:
        refused = {
            "max.in.flight.requests.per.connection=abc": (
                {"max.in.flight.requests.per.connection": "abc"},
                "Invalid value abc for configuration "
                "producer.override.max.in.flight.requests.per.connection: "
                "Not a number of type INT"),
            "max.in.flight.requests.per.connection=0": (
                {"max.in.flight.requests.per.connection": "0"},
                "producer.override.max.in.flight.requests.per.connection: "
                "Value must be at least 1"),
            "6 in flight, idempotent": (
                {"max.in.flight.requests.per.connection": "6", "enable.idempotence": "true"},
                "Must set max.in.flight.requests.per.connection to at most 5 to use the "
                "idempotent producer."),
            "buffer.memory=-1": (
                {"buffer.memory": "-1"},
                "Invalid value -1 for configuration producer.override.buffer.memory: "
                "Value must be at least 0"),
            "unknown key": ({"linger": "5"}, "unsupported producer config "
                                             "'producer.override.linger'"),
            "delivery.timeout.ms=soon": (
                {"delivery.timeout.ms": "soon"},
                "Invalid value soon for configuration producer.override.delivery.timeout.ms: "
                "Not a number of type INT"),
            "delivery.timeout.ms below the request timeout": (
                {"delivery.timeout.ms": "1500", "request.timeout.ms": "1000",
                 "linger.ms": "600"},
                "delivery.timeout.ms should be equal to or larger than linger.ms + "
                "request.timeout.ms"),
        }
        for case, (overrides, message) in refused.items():
            code, body = http("PUT", f"{worker.url}/connectors/bad/config",
                              _seq(tmp_path, "bad", **overrides))
            assert code == 400, (case, code, body)
            assert message in body["message"], (case, body)
        assert http("GET", f"{worker.url}/connectors")[1] == []

        # Taken: at most 5 in flight (the producer keeps one request per broker), and
        # buffer.memory=1 (the task's loop waits for each hand-over); every record arrives.
        code, _ = http("PUT", f"{worker.url}/connectors/ok/config", _seq(
            tmp_path, "ok", **{"max.in.flight.requests.per.connection": "5", "buffer.memory": "1",
                     "enable.idempotence": "true"}))
        assert code == 201
        wait_running(worker.url, "ok", 1)
        records = consume_all(broker.bootstrap, "ok", COUNT)
        assert sorted(int(r.value) for r in records) == list(range(COUNT))
    finally:
        worker.stop()


@pytest.mark.parametrize(("delivery_timeout_ms", "survives"), [(None, True), ("2500", False)])
def test_a_broker_outage_longer_than_the_request_timeout(tmp_path: Path, broker,
                                                          delivery_timeout_ms: str | None,
                                                          survives: bool) -> None:
    """The broker is down for 5 request timeouts while the source produces. Kafka Connect's
    default delivery timeout (Integer.MAX_VALUE) keeps every batch until the broker is back;
    a user's 2.5 s gives the batch up and fails the task, as Kafka's producer would. Before
    Connect honoured delivery.timeout.ms, aiokafka gave a batch up after request.timeout.ms."""
    create_topics(broker.bootstrap, {"outage": 1})
    overrides = {"request.timeout.ms": "1000"}
    if delivery_timeout_ms is not None:
        overrides["delivery.timeout.ms"] = delivery_timeout_ms
    config = {**_seq(tmp_path, "outage", **overrides), "count": str(OUTAGE_RECORDS),
              "per.poll": "20", "poll.ms": "50"}
    worker = standalone(tmp_path, broker.bootstrap,
                        **{"connector.client.config.override.policy": "All"})
    try:
        assert http("PUT", f"{worker.url}/connectors/outage/config", config)[0] == 201
        wait_until(lambda: _committed(worker.url) >= 200, 60, message="records flowing")
        broker.stop()
        time.sleep(5)  # the fault: the broker is down for five request timeouts
        broker.start()
        if survives:
            # Read again until every record is there (retried batches may repeat some).
            wait_until(lambda: {int(r.value) for r in consume_all(
                broker.bootstrap, "outage", OUTAGE_RECORDS, timeout=10)} == set(
                range(OUTAGE_RECORDS)), 120, message="every record in the topic")
            assert status_state(worker.url, "outage") == ("RUNNING", ["RUNNING"])
        else:
            wait_until(lambda: status_state(worker.url, "outage")[1] == ["FAILED"], 60,
                       message="the task failed past its delivery timeout")
    finally:
        worker.stop()


OUTAGE_RECORDS = 3000


def _committed(url: str) -> int:
    code, body = http("GET", f"{url}/connectors/outage/offsets")
    offsets = body.get("offsets") if code == 200 else None
    return int(offsets[0]["offset"]["next"]) if offsets else 0
