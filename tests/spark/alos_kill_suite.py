"""``make test-spark-kill``: the streams sink's at-least-once streaming query across a SIGKILL
of its driver while input flows. Two Spark driver start-ups, 2-4 minutes, so apart from `make
test` (which runs the exactly-once query across a kill, test_spark_writer.py).

A query reads topic ``source`` and writes ``target`` under at_least_once (alos_query_app.py,
a micro-batch every 0.5 s). A feeder produces numbered rows all along. Once the query has
written part of its output, the driver's whole process group (Python, JVM, workers) is
SIGKILLed and started again on the same checkpoint while the feeder goes on; once the restarted
query is writing, the feeder stops. Then every row sent must be in ``target`` at least once
(duplicates are allowed: the micro-batch the kill cut short is written again) and nothing else;
the duplicates are counted and printed (5 runs: 969 to 2,000, at most one micro-batch of
``maxOffsetsPerTrigger`` = 2,000 rows, of 25,100 to 41,200 sent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from helpers import create_topics, wait_until
from topic_reader import read_topic

SPARK_DIR = Path(__file__).parent
PARTITIONS = 2
ROWS_PER_STEP, STEP_S = 100, 0.25  # the feed: 400 rows/s
KILL_AFTER_ROWS = 2_000  # the query has written at least this much when the driver dies
START_TIMEOUT_S = 300.0  # a Spark driver starting on a loaded 2-core machine


class Feeder(threading.Thread):
    """Produces ``row-<n>`` values, ROWS_PER_STEP every STEP_S, until ``stop`` is set; counts
    what the broker acknowledged."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="alos-kill-feeder", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 20})
        self.stop = threading.Event()
        self.acked = 0
        self.error: str | None = None

    def run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            for _ in range(ROWS_PER_STEP):
                self.producer.produce("source", key=f"k{n % 97}".encode(),
                                      value=f"row-{n}".encode(), on_delivery=self._delivered)
                n += 1
            self.producer.poll(0)
            next_at += STEP_S
            self.stop.wait(max(0.0, next_at - time.monotonic()))  # the feed's pace
        if self.producer.flush(60):
            self.error = "rows still unacknowledged 60 s after the feed stopped"

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.error = str(err)
        else:
            self.acked += 1


def _end_offsets(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "alos-kill-watermarks"})
    try:
        return sum(consumer.get_watermark_offsets(CTopicPartition(topic, p), 10,
                                                  cached=False)[1] for p in range(PARTITIONS))
    finally:
        consumer.close()


def _values(bootstrap: str, topic: str) -> Counter[bytes]:
    """Every value in ``topic`` with how often it is there, read to each partition's end."""
    return Counter(value for *_, value, _ts, _h in read_topic(bootstrap, topic))


def _start_app(bootstrap: str, tmp_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log_file:
        log_file.write(b"=== start\n")
        return subprocess.Popen(
            [sys.executable, str(SPARK_DIR / "alos_query_app.py"), bootstrap, "source",
             "target", str(tmp_path / "checkpoint"), str(tmp_path / "STOP")],
            stdout=log_file, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)


def _current_log(log_path: Path) -> str:
    return log_path.read_text(errors="replace").rsplit("=== start", 1)[-1]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_at_least_once_query_survives_a_driver_kill_while_input_flows(broker: Any,
                                                                       tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"source": PARTITIONS, "target": PARTITIONS})
    log_path = tmp_path / "app.log"
    feeder = Feeder(bootstrap)
    app = _start_app(bootstrap, tmp_path, log_path)
    try:
        def started() -> bool:
            assert app.poll() is None, _current_log(log_path)[-3000:]
            return "STARTED" in _current_log(log_path)

        wait_until(started, START_TIMEOUT_S, interval=0.2, message="the query to start")
        feeder.start()

        def written(rows: int) -> Any:
            def check() -> bool:
                assert app.poll() is None, _current_log(log_path)[-3000:]
                assert feeder.error is None, feeder.error
                return _end_offsets(bootstrap, "target") >= rows
            return check

        wait_until(written(KILL_AFTER_ROWS), START_TIMEOUT_S, interval=0.1,
                   message=f"{KILL_AFTER_ROWS} rows in target")
        os.killpg(app.pid, signal.SIGKILL)  # the driver: Python, JVM and workers
        app.wait(30)
        at_kill = _end_offsets(bootstrap, "target")
        fed_at_kill = feeder.acked
        assert feeder.is_alive(), "the feed had ended before the kill"
        app = _start_app(bootstrap, tmp_path, log_path)  # the same checkpoint
        wait_until(started, START_TIMEOUT_S, interval=0.2, message="the restarted query")
        # The restarted query writes while the feed still goes on, then the feed stops.
        wait_until(written(at_kill + KILL_AFTER_ROWS), START_TIMEOUT_S, interval=0.2,
                   message="the restarted query writing")
        feeder.stop.set()
        feeder.join(90)
        assert feeder.error is None, feeder.error
        sent = feeder.acked
        assert _end_offsets(bootstrap, "source") == sent
        wait_until(written(sent), 600, interval=0.5, message=f"{sent} rows in target")

        def complete() -> Counter[bytes]:
            assert app.poll() is None, _current_log(log_path)[-3000:]
            values = _values(bootstrap, "target")
            return values if all(values[f"row-{i}".encode()] for i in range(sent)) \
                else Counter()

        values = wait_until(complete, 600, interval=1.0, message="every row sent in target")
        (tmp_path / "STOP").touch()
        assert app.wait(120) == 0, _current_log(log_path)[-3000:]
        assert "DONE" in _current_log(log_path)
    finally:
        feeder.stop.set()
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait(30)
    expected = {f"row-{i}".encode() for i in range(sent)}
    assert set(values) == expected, f"unexpected rows: {sorted(set(values) - expected)[:5]}"
    duplicates = sum(values.values()) - len(values)
    print(f"at-least-once across a driver kill: {sent} rows sent ({fed_at_kill} before the "
          f"kill), {sum(values.values())} in target ({at_kill} when the driver was killed), "
          f"{duplicates} duplicates; restarts for Spark's worker connect-back: "
          f"{log_path.read_text().count('RESTARTED')}")
