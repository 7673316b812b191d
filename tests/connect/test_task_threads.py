"""A thread per task: a stuck task never holds up the rest of its worker.

A worker process runs eight healthy connectors (four DataGen sources, four FileStreamSinks
reading them) beside a source stuck in ``poll()`` and ``stop()`` and a sink stuck in ``put()``.
The stuck tasks are restarted ten times; after every restart each healthy connector has moved
more records, and at the end a new connector runs, pause and stop work, and SIGTERM ends the
worker. (Before, plugin calls ran on asyncio's default executor: the fifth restart starved it and
froze the worker.)
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, http, standalone, status_state, wait_running

from connect.runtime.status import State, TaskId

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
GRACEFUL_MS = 500
HEALTHY = 4  # DataGen sources, and as many FileStreamSinks reading them


def end_offsets(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Records in each topic (sum of its partitions' end offsets)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run() -> dict[str, int]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await producer.start()
        await consumer.start()
        try:
            out = {}
            for topic in topics:
                parts = await producer.partitions_for(topic)
                ends = await consumer.end_offsets([TopicPartition(topic, p) for p in parts])
                out[topic] = sum(ends.values())
            return out
        finally:
            await consumer.stop()
            await producer.stop()

    return asyncio.run(run())


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def metric(url: str, name: str) -> float:
    import urllib.request

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    match = re.search(rf"^\S*{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M)
    assert match, f"no metric {name} in /metrics"
    return float(match.group(1))


def test_stuck_tasks_restarted_ten_times_leave_the_others_running(tmp_path: Path, broker) -> None:
    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    with props.open("a") as handle:
        handle.write(f"task.shutdown.graceful.timeout.ms={GRACEFUL_MS}\n")
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url,
                           pythonpath=[str(HERE)]).start()
    try:
        files = {f"sink{i}": tmp_path / f"sink{i}.txt" for i in range(HEALTHY)}
        for i in range(HEALTHY):
            code, _ = http("PUT", f"{url}/connectors/gen{i}/config", {
                "connector.class": "DataGen", "quickstart": "orders", "kafka.topic": f"t{i}",
                "tasks.max": "1", "iterations": "100000000", "max.rate": "100"})
            assert code == 201
            code, _ = http("PUT", f"{url}/connectors/sink{i}/config", {
                "connector.class": "FileStreamSink", "topics": f"t{i}", "tasks.max": "1",
                "file": str(files[f"sink{i}"])})
            assert code == 201
        for name in [*(f"gen{i}" for i in range(HEALTHY)), *files]:
            wait_running(url, name, 1)
        code, _ = http("PUT", f"{url}/connectors/stuck-src/config", {
            "connector.class": "stuck_plugins.StuckSourceConnector", "tasks.max": "1"})
        assert code == 201
        code, _ = http("PUT", f"{url}/connectors/stuck-sink/config", {
            "connector.class": "stuck_plugins.StuckSinkConnector", "topics": "t0",
            "tasks.max": "1"})
        assert code == 201
        wait_running(url, "stuck-src", 1)
        wait_running(url, "stuck-sink", 1)

        topics = [f"t{i}" for i in range(HEALTHY)]

        def counts() -> dict[str, int]:
            moved = end_offsets(broker.bootstrap, topics)
            moved.update({name: line_count(path) for name, path in files.items()})
            return moved

        def progressed(before: dict[str, int]) -> dict[str, int]:
            """Wait until every healthy connector moved records since ``before``."""
            latest: dict[str, int] = {}

            def all_moved() -> bool:
                latest.update(counts())
                return all(latest[k] > v for k, v in before.items())

            wait_until(all_moved, 60, message=f"healthy connectors moving (from {before})")
            return dict(latest)

        seen = progressed({k: 0 for k in [*topics, *files]})
        for round_ in range(1, 11):
            for name in ("stuck-src", "stuck-sink"):
                code, _ = http("POST", f"{url}/connectors/{name}/tasks/0/restart")
                assert code == 204, (name, code)
            # Both stuck tasks were abandoned (each restart gives up on its thread) ...
            wait_until(lambda r=round_: metric(url, "abandoned_thread_total") >= 2 * r, 60,
                       message=f"round {round_}: the stuck tasks abandoned")
            # ... and run again on fresh threads, while every healthy connector moves on.
            wait_running(url, "stuck-src", 1)
            wait_running(url, "stuck-sink", 1)
            seen = progressed(seen)
        assert metric(url, "abandoned_thread_alive") >= 20  # still stuck, and counted
        log_text = (tmp_path / "w.log").read_text(errors="replace")
        assert "did not stop within task.shutdown.graceful.timeout.ms=500 ms" in log_text

        # The worker still takes new work and follows the user's requests.
        source_file = tmp_path / "in.txt"
        source_file.write_text("".join(f"line {n}\n" for n in range(100)))
        code, _ = http("PUT", f"{url}/connectors/fresh/config", {
            "connector.class": "FileStreamSource", "file": str(source_file),
            "topic": "fresh", "tasks.max": "1"})
        assert code == 201
        wait_running(url, "fresh", 1)
        wait_until(lambda: end_offsets(broker.bootstrap, ["fresh"])["fresh"] == 100, 60,
                   message="the new connector's 100 lines in Kafka")
        assert http("PUT", f"{url}/connectors/gen1/pause")[0] == 202
        wait_until(lambda: status_state(url, "gen1") == ("PAUSED", ["PAUSED"]), 60,
                   message="gen1 PAUSED")
        assert http("PUT", f"{url}/connectors/gen2/stop")[0] == 204
        wait_until(lambda: status_state(url, "gen2") == ("STOPPED", []), 60,
                   message="gen2 STOPPED")
        others = {k: v for k, v in seen.items() if k not in ("t1", "t2")}
        progressed(others)

        # SIGTERM ends the worker though two tasks are stuck (bounded by the graceful timeout).
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        try:
            worker.proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail("the worker did not end on SIGTERM")
    finally:
        worker.kill()


def test_an_abandoned_task_is_failed_with_the_reason(tmp_path: Path, broker) -> None:
    """The task's status says why; the next start of it runs on a new thread."""
    worker = standalone(tmp_path, broker.bootstrap,
                        **{"task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS)})
    try:
        import sys

        sys.path.insert(0, str(HERE))
        worker.put_connector({"name": "stuck", "connector.class":
                              "stuck_plugins.StuckSourceConnector", "tasks.max": "1"})
        wait_running(worker.url, "stuck", 1)
        herder = worker.process.herder
        assert herder is not None
        tid = TaskId("stuck", 0)
        first = herder.worker.tasks[tid].thread

        async def restart() -> None:
            await herder.worker.stop_task(tid)

        worker.call(restart())
        status = herder.statuses.task(tid)
        assert status is not None and status.state is State.FAILED
        assert "did not stop within task.shutdown.graceful.timeout.ms=500 ms" in (
            status.trace or "")
        assert first is not None and first.abandoned and first.thread.is_alive()
        assert http("POST", f"{worker.url}/connectors/stuck/tasks/0/restart")[0] == 204
        wait_running(worker.url, "stuck", 1)
        second = herder.worker.tasks[tid].thread
        assert second is not first and second is not None and not second.abandoned
    finally:
        worker.stop()


def test_a_slow_validate_holds_up_nothing_else(tmp_path: Path, broker) -> None:
    """A connector's validate() runs on a thread of its own (as Kafka's connector executor):
    while one blocks, the worker answers, and creates and starts another connector."""
    import threading

    entered, release = tmp_path / "entered", tmp_path / "release"
    worker = standalone(tmp_path, broker.bootstrap)
    answers: list[tuple[int, object]] = []
    try:
        slow = {"name": "slow", "connector.class": "stuck_plugins.SlowValidateSourceConnector",
                "entered.file": str(entered), "release.file": str(release)}
        caller = threading.Thread(target=lambda: answers.append(http(
            "PUT", f"{worker.url}/connector-plugins/stuck_plugins.SlowValidateSourceConnector/config/validate",
            slow)), daemon=True)
        caller.start()
        wait_until(lambda: entered.exists() or answers, 30, message="validate() entered")
        assert not answers, answers
        assert http("GET", f"{worker.url}/connectors")[0] == 200
        code, body = http("PUT", f"{worker.url}/connectors/lines/config", {
            "connector.class": "FileStreamSource", "topic": "lines",
            "file": str(tmp_path / "in.txt")})
        assert code == 201, body
        wait_running(worker.url, "lines", tasks=1)
        assert not answers and not release.exists()  # the slow validation is still going on
        release.write_text("go")
        caller.join(60)
        assert answers and answers[0][0] == 200, answers
        errors = [e for c in answers[0][1]["configs"] for e in c["value"]["errors"]]
        assert answers[0][1]["error_count"] == 0, errors
    finally:
        release.write_text("go")
        worker.stop()
