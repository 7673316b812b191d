"""Connect's producer keys without an aiokafka argument (``max.in.flight.requests.per.connection``,
``buffer.memory``): a bad value is refused naming the key when the worker starts (worker
``producer.*``) or when the connector is created (``producer.override.*``), never when a task
starts; a good one is taken and its connector delivers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import create_topics, free_port
from worker_helpers import consume_all, http, standalone, wait_running

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
