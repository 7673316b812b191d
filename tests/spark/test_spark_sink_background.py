"""SparkSink's background flush: Spark writes while ``put`` returns, without giving up exactly-once.

Synchronisation is by events and polling (a write is held at a gate), never by sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from test_spark_sink import record, start_task

from connect.api import ConnectException
from connect.api import TopicPartition as TP
from connect.spark.commit_log import CommitLog
from connect.spark.flusher import FlushThread

pytestmark = pytest.mark.spark


class Gate:
    """Wraps a task's ``_write`` so a test can hold the next Spark write until it opens."""

    def __init__(self, task: Any, fail: bool = False) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.fail = fail
        original = task._write

        def write(*args: Any) -> Any:
            self.entered.set()
            assert self.open.wait(60), "the test never opened the gate"
            if self.fail:
                raise RuntimeError("disk on fire")
            return original(*args)

        task._write = write


def entries(path: Path) -> int:
    log = CommitLog(path)
    log.refresh()
    return log.sequence


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[Any]:
    """A task with flush.size 5 whose schema is fixed (entry 1) and whose first flush is
    committed (entry 2: offsets 0..4)."""
    task, _ = start_task(tmp_path, **{"flush.size": 5})
    task.open([TP("t", 0)])
    task.put([record(i, {"n": i}) for i in range(5)])  # the schema is committed in put
    assert entries(tmp_path) >= 1
    task.flusher.wait()
    assert task.pre_commit({TP("t", 0): 5}) == {TP("t", 0): 5}
    assert entries(tmp_path) == 2
    yield task
    task.flusher.shutdown()


def test_pre_commit_never_reports_the_flush_in_flight(spark, tmp_path: Path, sink: Any) -> None:
    gate = Gate(sink)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])  # due: handed to the flush thread
    assert gate.entered.wait(60)
    assert sink.pre_commit({TP("t", 0): 10}) == {TP("t", 0): 5}
    sink.put([record(i, {"n": i}) for i in range(10, 13)])  # buffering goes on meanwhile

    second = threading.Thread(target=sink.put, args=([record(i, {"n": i})
                                                      for i in range(13, 15)],))
    second.start()  # a second flush is due now: it waits for the first (backpressure)
    assert entries(tmp_path) == 2  # nothing committed behind the held flush
    gate.open.set()
    second.join(60)
    assert not second.is_alive()
    wait_until(lambda: sink.pre_commit({TP("t", 0): 15}) == {TP("t", 0): 15}, 60,
               message="both background flushes committed")
    sink.stop()
    offsets = sorted(r["_offset"] for r in spark.read.parquet(str(tmp_path)).collect())
    assert offsets == list(range(15))
    assert entries(tmp_path) == 4  # in order: the schema, 0..4, 5..9, 10..14


def test_failed_background_flush_fails_the_task_and_loses_nothing(spark, tmp_path: Path,
                                                                  sink: Any) -> None:
    gate = Gate(sink, fail=True)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])  # returns: the write is in the back
    gate.open.set()
    wait_until(lambda: not sink.flusher.busy, 60, message="the background flush failing")
    with pytest.raises(ConnectException, match="disk on fire") as failed:
        sink.put([record(10, {"n": 10})])
    assert failed.value.__cause__ is not None
    with pytest.raises(ConnectException, match="disk on fire"):
        sink.pre_commit({TP("t", 0): 11})
    with pytest.raises(ConnectException, match="disk on fire"):
        sink.stop()  # and never commits what was buffered after the failed flush
    assert CommitLog(tmp_path).refresh()[-1].offsets == {("t", 0): 5}

    again, context = start_task(tmp_path, **{"flush.size": 5})  # the worker restarts the task
    again.open([TP("t", 0)])
    assert context.rewinds == {TP("t", 0): 5}  # the failed flush's records are read again
    again.put([record(i, {"n": i}) for i in range(5, 11)])
    again.stop()
    offsets = sorted(r["_offset"] for r in spark.read.parquet(str(tmp_path)).collect())
    assert offsets == list(range(11))


def test_close_and_open_wait_for_the_flush_in_flight(spark, tmp_path: Path, sink: Any) -> None:
    gate = Gate(sink)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])
    assert gate.entered.wait(60)
    sink.put([record(10, {"n": 10})])  # buffered, not due
    seen: list[int] = []

    def close() -> None:
        sink.close([TP("t", 0)])
        seen.append(entries(tmp_path))

    closer = threading.Thread(target=close)
    closer.start()
    gate.open.set()
    closer.join(60)
    assert seen == [4]  # the flush in flight, then close's own flush of offset 10
    sink.open([TP("t", 0)])
    assert sink.context.rewinds == {TP("t", 0): 11}
    sink.stop()
    offsets = sorted(r["_offset"] for r in spark.read.parquet(str(tmp_path)).collect())
    assert offsets == list(range(11))


def test_flush_thread_failure_is_sticky() -> None:
    flusher = FlushThread("test-flush")
    ran: list[int] = []
    flusher.submit(lambda: ran.append(1))
    flusher.wait()
    flusher.check()  # a success raises nothing

    def fail() -> None:
        raise ValueError("boom")

    flusher.submit(fail)
    flusher.wait()
    with pytest.raises(ConnectException, match="ValueError: boom"):
        flusher.check()
    with pytest.raises(ConnectException, match="boom"):  # no later flush may run
        flusher.submit(lambda: ran.append(2))
    flusher.shutdown()
    assert ran == [1]
