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
    """Wraps a task's ``_write`` so a test can hold Spark writes until it opens (all of them, or
    only the first with ``first_only``); ``written`` lists the first offset of each write done,
    in the order they finished."""

    def __init__(self, task: Any, fail: bool = False, first_only: bool = False) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.fail = fail
        self.written: list[int] = []
        self.second_written = threading.Event()
        calls: list[int] = []
        original = task._write

        def write(table: Any, writer: str) -> Any:
            calls.append(1)
            held = len(calls) == 1 or not first_only
            if held:
                self.entered.set()
                assert self.open.wait(60), "the test never opened the gate"
                if self.fail:
                    raise RuntimeError("disk on fire")
            files = original(table, writer)
            self.written.append(table.column("_offset")[0].as_py())
            if len(self.written) == 1 and not held:
                self.second_written.set()
            return files

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


def test_pre_commit_never_reports_a_flush_in_flight(spark, tmp_path: Path, sink: Any) -> None:
    gate = Gate(sink)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])  # due: handed to a flush thread
    assert gate.entered.wait(60)
    assert sink.pre_commit({TP("t", 0): 10}) == {TP("t", 0): 5}
    sink.put([record(i, {"n": i}) for i in range(10, 13)])  # buffering goes on meanwhile
    sink.put([record(i, {"n": i}) for i in range(13, 15)])  # a second flush: in flight too
    assert sink.pre_commit({TP("t", 0): 15}) == {TP("t", 0): 5}

    third = threading.Thread(target=sink.put, args=([record(i, {"n": i})
                                                     for i in range(15, 20)],))
    third.start()  # a third flush is due now: it waits for the first (backpressure)
    assert entries(tmp_path) == 2  # nothing committed behind the held flushes
    gate.open.set()
    third.join(60)
    assert not third.is_alive()
    wait_until(lambda: sink.pre_commit({TP("t", 0): 20}) == {TP("t", 0): 20}, 60,
               message="all background flushes committed")
    sink.stop()
    offsets = sorted(r["_offset"] for r in spark.read.parquet(str(tmp_path)).collect())
    assert offsets == list(range(20))
    log = CommitLog(tmp_path)
    assert [dict(e.offsets) for e in log.refresh()][1:] == [
        {("t", 0): n} for n in (5, 10, 15, 20)]  # committed in order


def test_a_later_flush_writes_meanwhile_but_commits_after_the_earlier(spark, tmp_path: Path,
                                                                       sink: Any) -> None:
    gate = Gate(sink, first_only=True)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])  # held at its write
    assert gate.entered.wait(60)
    sink.put([record(i, {"n": i}) for i in range(10, 15)])  # written at once
    assert gate.second_written.wait(60)
    assert gate.written == [10]
    assert entries(tmp_path) == 2  # written, yet not committed: the earlier flush comes first
    gate.open.set()
    sink.flusher.wait()
    assert gate.written == [10, 5]
    log = CommitLog(tmp_path)
    assert [dict(e.offsets) for e in log.refresh()][1:] == [{("t", 0): 5}, {("t", 0): 10},
                                                            {("t", 0): 15}]
    sink.stop()


def test_failed_background_flush_fails_the_task_and_loses_nothing(spark, tmp_path: Path,
                                                                  sink: Any) -> None:
    gate = Gate(sink, fail=True, first_only=True)
    sink.put([record(i, {"n": i}) for i in range(5, 10)])  # returns: the write is in the back
    assert gate.entered.wait(60)
    sink.put([record(i, {"n": i}) for i in range(10, 15)])  # written, then never committed
    assert gate.second_written.wait(60)
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
    assert list((tmp_path / "_streams_staging").iterdir()) == []  # both flushes' files removed

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

    def commit(n: int) -> Any:
        def flush(turn: Any) -> None:
            turn()
            ran.append(n)
        return flush

    flusher.submit(commit(1))
    flusher.wait()
    flusher.check()  # a success raises nothing

    release = threading.Event()

    def fail(turn: Any) -> None:
        assert release.wait(60)
        raise ValueError("boom")

    flusher.submit(fail)
    flusher.submit(commit(2))  # in flight with the failing one: its turn raises
    release.set()
    flusher.wait()
    with pytest.raises(ConnectException, match="ValueError: boom"):
        flusher.check()
    with pytest.raises(ConnectException, match="boom"):  # no later flush may run
        flusher.submit(commit(3))
    flusher.shutdown()
    assert ran == [1]


def test_flush_thread_turns_follow_hand_over_order() -> None:
    flusher = FlushThread("test-flush", max_in_flight=2)
    order: list[str] = []
    first_may_commit = threading.Event()
    second_ready = threading.Event()

    def first(turn: Any) -> None:
        assert first_may_commit.wait(60)
        turn()
        order.append("first")

    def second(turn: Any) -> None:
        order.append("second writes")
        second_ready.set()
        turn()  # waits for the first to finish
        order.append("second")

    flusher.submit(first)
    flusher.submit(second)
    assert second_ready.wait(60)
    first_may_commit.set()
    flusher.shutdown()
    assert order == ["second writes", "first", "second"]
