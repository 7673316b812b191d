"""`streams health check`, the logging options, and the log volume during a broker outage."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from helpers import EmbeddedBroker, create_topics, free_port, wait_until

from streams import KafkaStreams, Serdes, StreamsBuilder
from streams.metrics.logs import JsonFormatter, RepeatFilter, take_logging_options


def streams_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_health_check_round_trip_and_failure(broker) -> None:
    done = streams_cli("health", "check", "--bootstrap-servers", broker.bootstrap,
                       "--count", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"OK: {broker.bootstrap} round trip ")
    assert "3 trips" in done.stdout
    done = streams_cli("health", "check", "--bootstrap-servers", broker.bootstrap, "--json",
                       "--log-level", "WARNING")
    result = json.loads(done.stdout)
    assert result["status"] == "OK" and result["topic"] == "streams-health"
    assert result["offset"] == 3  # the fourth record of the health topic
    closed = f"127.0.0.1:{free_port()}"
    done = streams_cli("health", "check", "--bootstrap-servers", closed, "--timeout", "5")
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line
    assert line.startswith(f"streams health check: cannot connect to a broker at {closed}")


def test_logging_options_anywhere_and_json_lines() -> None:
    assert take_logging_options(["topics", "list", "--log-level", "DEBUG",
                                 "--log-format=json"]) == (["topics", "list"], "DEBUG", "json")
    done = streams_cli("describe", "tests/runtime/wordcount_app.py", "--log-level", "LOUD")
    assert done.returncode == 2 and "--log-level 'LOUD'" in done.stderr
    record = logging.LogRecord("streams.x", logging.WARNING, __file__, 1, "lag %d", (7,), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "WARNING" and line["logger"] == "streams.x"
    assert line["message"] == "lag 7" and line["ts"].endswith("Z")


def test_repeat_filter_passes_one_per_window() -> None:
    flt = RepeatFilter(window_s=3600)
    template = "Unable to update metadata from %s"
    records = [logging.LogRecord("aiokafka", logging.ERROR, "", 1, template, ([0],), None)
               for _ in range(100)]
    assert [flt.filter(r) for r in records].count(True) == 1
    other = logging.LogRecord("aiokafka", logging.ERROR, "", 1, "something else", (), None)
    assert flt.filter(other)


def test_broker_outage_logs_one_line_per_attempt(tmp_path, caplog) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"in": 1, "out": 1})
        builder = StreamsBuilder()
        builder.stream("in", key_serde=Serdes.string(), value_serde=Serdes.string()).to("out")
        streams = KafkaStreams(builder.build(), {
            "application.id": "outage", "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path / "state"),
            "commit.interval.ms": 500})  # the next commit notices the outage
        streams.start()
        try:
            wait_until(lambda: streams.state.value == "RUNNING", timeout=60)
            caplog.set_level(logging.INFO)
            caplog.clear()
            broker.stop()

            def attempts() -> int:
                return sum(1 for r in caplog.records if "rejoining the group in" in r.message)
            wait_until(lambda: attempts() >= 6, timeout=60)
            records = list(caplog.records)
            rejoins = [r for r in records if "rejoining the group in" in r.message]
            # 0.1, 0.2, 0.4, 0.8, 1.0 s...: the delays back off
            assert [r.message.split(" in ")[-1].split(" s")[0] for r in rejoins[:5]] == \
                ["0.1", "0.2", "0.4", "0.8", "1.0"]
            connection_errors = [r for r in records if r.name == "aiokafka"
                                 and r.levelno >= logging.ERROR]
            assert len(connection_errors) <= 12, [r.getMessage() for r in connection_errors]
            assert len(records) < 60, [r.getMessage() for r in records]
            broker.start()  # same port and data: the app comes back on its own
            wait_until(lambda: streams.state.value == "RUNNING", timeout=60)
        finally:
            streams.close(30)
    finally:
        broker.stop()


@pytest.fixture(autouse=True)
def _reset_repeat_filter() -> None:
    """The process-wide filter remembers what it let through; start each test afresh."""
    from streams.metrics import logs

    logs._FILTER._last.clear()
    logs._FILTER._dropped.clear()


def test_broker_and_run_commands_take_metrics_listener(tmp_path) -> None:
    from helpers import BrokerProcess

    from .scrape import get, health

    url = f"http://127.0.0.1:{free_port()}"
    broker = BrokerProcess(tmp_path / "b", extra=["--metrics-listener", url]).start()
    try:
        wait_until(lambda: get(url + "/health")[0] == 200, timeout=30)
        status, body = health(url)
        assert body["status"] == "UP" and body["port"] == broker.port
        assert b"kafka_server_socketservermetrics_connection_count" in get(url + "/metrics")[1]
    finally:
        broker.stop()
    done = streams_cli("run", "tests/runtime/wordcount_app.py", "--bootstrap-servers",
                       "127.0.0.1:9", "--metrics-listener", "localhost")
    assert done.returncode == 2
    assert "metrics.listener='localhost': expected http://HOST:PORT" in done.stderr
    done = streams_cli("broker", "start", "--metrics-listener", "http://h:1/x")
    assert done.returncode == 2 and "metrics.listener" in done.stderr
