"""Exactly-once source connectors (KIP-618) with distributed workers in separate processes.

Input flows while workers are killed (SIGKILL) or paused past their session timeout (SIGSTOP);
a ``read_committed`` reader must then see every source record exactly once: FileStreamSource's
lines in file order, DataGen's order ids 1..N. Settings the worker cannot honour are refused with
one line. ``--kafka=reference`` runs the same workers against Apache Kafka instead of our broker.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers import create_topics, free_port, wait_until
from worker_helpers import WorkerProcess, http, standalone

pytestmark = pytest.mark.slow


def worker_properties(tmp_path: Path, bootstrap: str, name: str, **extra: str) -> tuple[Path, str]:
    port = free_port()
    path = tmp_path / f"{name}.properties"
    settings = {
        "bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{port}",
        "group.id": "eos-cluster", "config.storage.topic": "eos-configs",
        "offset.storage.topic": "eos-offsets", "status.storage.topic": "eos-status",
        "config.storage.replication.factor": "1", "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1", "offset.storage.partitions": "3",
        "status.storage.partitions": "2", "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500", "exactly.once.source.support": "enabled",
        # a killed or paused worker's tasks move after 3 s (KIP-415's default: 5 minutes)
        "scheduled.rebalance.max.delay.ms": "3000",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter", **extra}
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path, f"http://127.0.0.1:{port}"


def read_committed(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[Any]:
    """Every committed record of ``topic`` once at least ``expected`` are there and the reader
    reached the end (so duplicates past ``expected`` are seen too)."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    isolation_level="read_committed")
        await consumer.start()
        records: list[Any] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline:
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    records.extend(batch)
                if len(records) >= expected:
                    ends = await consumer.end_offsets(list(consumer.assignment()))
                    positions = {tp: await consumer.position(tp) for tp in ends}
                    if all(positions[tp] >= end for tp, end in ends.items()):
                        break
            return records
        finally:
            await consumer.stop()

    return asyncio.run(run())


def metrics_text(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        return response.read().decode()


def running_tasks(url: str, name: str) -> dict[int, str]:
    code, status = http("GET", f"{url}/connectors/{name}/status")
    if code != 200:
        return {}
    return {t["id"]: t["worker_id"] for t in status["tasks"] if t["state"] == "RUNNING"}


def committed_count(bootstrap: str, topic: str) -> int:
    return len(read_committed(bootstrap, topic, 0, timeout=5))


def test_file_source_exactly_once_through_sigkill(tmp_path: Path, broker) -> None:
    """Lines are appended while the worker runs; it is killed mid-stream and restarted."""
    create_topics(broker.bootstrap, {"lines": 1})
    source = tmp_path / "input.txt"
    source.write_text("")
    total = 30_000
    lines = [f"line-{i:06d}-{'x' * (i % 17)}" for i in range(total)]
    stop_writing = threading.Event()

    def writer() -> None:
        with open(source, "a") as handle:
            for start in range(0, total, 500):
                if stop_writing.is_set():
                    return
                handle.write("".join(line + "\n" for line in lines[start:start + 500]))
                handle.flush()
                time.sleep(0.05)

    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url).start()
    thread = threading.Thread(target=writer, daemon=True)
    try:
        # What the worker cannot honour is refused with Kafka's messages.
        stdin_source = {"connector.class": "FileStreamSource", "topic": "lines",
                        "exactly.once.support": "required"}
        code, body = http("PUT", f"{url}/connectors/stdin/config", stdin_source)
        assert code == 400, body
        assert "does not support exactly-once semantics" in body["message"]
        code, body = http("PUT", f"{url}/connectors/bounded/config",
                          {"connector.class": "FileStreamSource", "topic": "lines",
                           "file": str(source), "transaction.boundary": "connector"})
        assert code == 400 and "connector-defined transaction boundaries" in body["message"]
        code, body = http("PUT", f"{url}/connectors/bounded/config",
                          {"connector.class": "FileStreamSource", "topic": "lines",
                           "file": str(source), "transaction.boundary": "sometimes"})
        assert code == 400 and "transaction.boundary" in body["message"]
        code, body = http("PUT", f"{url}/connectors/bounded/config",
                          {"connector.class": "FileStreamSource", "topic": "lines",
                           "file": str(source), "transaction.boundary.interval.ms": "100"})
        assert code == 400 and "only with transaction.boundary=interval" in body["message"]
        assert http("GET", f"{url}/connectors")[1] == []

        config = {"connector.class": "FileStreamSource", "topic": "lines", "file": str(source),
                  "batch.size": "300", "exactly.once.support": "required"}
        code, body = http("PUT", f"{url}/connectors/file/config", config)
        assert code == 201, body
        thread.start()
        wait_until(lambda: committed_count(broker.bootstrap, "lines") >= total // 4, 90,
                   interval=0.2, message="a quarter of the lines committed")
        metrics = metrics_text(url)
        assert 'kafka_connect_source_task_metrics_transaction_size_avg{connector="file"' \
            in metrics, metrics[-2000:]
        worker.kill()  # mid-stream: the writer goes on, a transaction may be open
        assert committed_count(broker.bootstrap, "lines") < total
        worker.start()
        thread.join(120)
        values = [r.value.decode() for r in read_committed(broker.bootstrap, "lines", total,
                                                           timeout=120)]
        assert len(values) == total and values == lines
    finally:
        stop_writing.set()
        worker.stop()


def test_datagen_exactly_once_through_sigkill_and_sigstop(tmp_path: Path, broker) -> None:
    """Two workers, two tasks: one worker is killed, later one is paused past its session
    timeout so its tasks move while its transactions are open; the zombie is fenced."""
    create_topics(broker.bootstrap, {"orders": 3})
    props_a, url_a = worker_properties(tmp_path, broker.bootstrap, "a")
    props_b, url_b = worker_properties(tmp_path, broker.bootstrap, "b")
    a = WorkerProcess(["distributed", str(props_a)], tmp_path / "a.log", url_a).start()
    b = WorkerProcess(["distributed", str(props_b)], tmp_path / "b.log", url_b).start()
    stopped = None
    try:
        total = 12_000
        config = {"connector.class": "DataGen", "quickstart": "orders", "kafka.topic": "orders",
                  "tasks.max": "2", "iterations": str(total), "max.rate": "600",
                  "exactly.once.support": "required", "transaction.boundary": "interval",
                  "transaction.boundary.interval.ms": "1500",
                  "offsets.storage.topic": "gen-offsets"}
        code, body = http("PUT", f"{url_b}/connectors/gen/config", config)
        assert code == 201, body
        ids_a, ids_b = url_a.removeprefix("http://"), url_b.removeprefix("http://")
        wait_until(lambda: set(running_tasks(url_a, "gen").values()) == {ids_a, ids_b}, 60,
                   message="one task on each worker")
        wait_until(lambda: committed_count(broker.bootstrap, "orders") >= 1500, 60,
                   interval=0.2, message="orders flowing")
        b.kill()
        wait_until(lambda: running_tasks(url_a, "gen") == {0: ids_a, 1: ids_a}, 90,
                   message="both tasks on worker a")
        b.start()
        wait_until(lambda: set(running_tasks(url_a, "gen").values()) == {ids_a, ids_b}, 90,
                   message="the tasks spread again")
        wait_until(lambda: committed_count(broker.bootstrap, "orders") >= total // 2, 90,
                   interval=0.2, message="half of the orders")
        # SIGSTOP b inside a transaction interval: its open transaction must never show.
        assert b.proc is not None
        os.kill(b.proc.pid, signal.SIGSTOP)
        stopped = b
        wait_until(lambda: running_tasks(url_a, "gen") == {0: ids_a, 1: ids_a}, 90,
                   message="the paused worker's task moved")
        os.kill(b.proc.pid, signal.SIGCONT)
        stopped = None
        records = read_committed(broker.bootstrap, "orders", total, timeout=180)
        ids = sorted(json.loads(r.value)["orderid"] for r in records)
        assert len(ids) == total and ids == list(range(1, total + 1))
        code, offsets = http("GET", f"{url_a}/connectors/gen/offsets")
        assert code == 200 and sum(o["offset"]["count"] for o in offsets["offsets"]) == total
        fenced = (tmp_path / "b.log").read_text(errors="replace")
        # Either the zombie was fenced, or it noticed at its rejoin that the group had dropped
        # it and stopped its task before the new owner fenced it (read_committed above shows
        # each order once either way).
        assert "Fenced" in fenced or "fenced" in fenced or "missed rebalances" in fenced, \
            fenced[-3000:]
    finally:
        if stopped is not None and stopped.proc is not None:
            os.kill(stopped.proc.pid, signal.SIGCONT)
        b.stop()
        a.stop()


def test_connector_defined_transaction_boundaries(tmp_path: Path, broker) -> None:
    """transaction.boundary=connector: the task commits after every hundredth record and aborts
    one transaction; readers see exactly the records of committed transactions, and the
    transaction-size metrics count them."""
    import eos_plugins

    create_topics(broker.bootstrap, {"seq": 1})
    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url).start()
    try:
        total = 2000
        code, body = http("PUT", f"{url}/connectors/seq/config", {
            "connector.class": "tests.connect.eos_plugins.BoundarySource", "topic": "seq",
            "count": str(total), "transaction.boundary": "connector",
            "exactly.once.support": "required"})
        assert code == 201, body
        aborted = set(range(eos_plugins.ABORT_AT - 49, eos_plugins.ABORT_AT + 1))
        wanted = [str(n) for n in range(total) if n not in aborted]
        values = [r.value.decode() for r in read_committed(broker.bootstrap, "seq", len(wanted),
                                                           timeout=90)]
        assert values == wanted

        def sizes_metrics() -> dict[str, float]:
            found = {}
            for line in metrics_text(url).splitlines():
                for stat in ("avg", "min", "max"):
                    if line.startswith(f"kafka_connect_source_task_metrics_transaction_size_"
                                       f"{stat}{{"):
                        found[stat] = float(line.rsplit(" ", 1)[1])
            return found

        # Committed: 4 x 100, the aborted transaction's offsets alone (0), 450..499 (50),
        # 15 x 100 (as Kafka's sensor: an abort resets the size, the offsets commit records it).
        # The worker counts a commit just after the broker made it visible: poll.
        sizes = [100] * 4 + [0, 50] + [100] * 15
        wanted_sizes = {"avg": sum(sizes) / len(sizes), "min": 0, "max": 100}
        wait_until(lambda: sizes_metrics() == wanted_sizes, 30,
                   message=f"transaction sizes {wanted_sizes}")
    finally:
        worker.stop()


def _start_line(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_settings_that_cannot_be_honoured_are_refused(tmp_path: Path, broker) -> None:
    props, _url = worker_properties(tmp_path, broker.bootstrap, "bogus",
                                    **{"exactly.once.source.support": "bogus"})
    result = _start_line(["distributed", str(props)])
    assert result.returncode != 0
    assert "exactly.once.source.support" in result.stderr and "Traceback" not in result.stderr

    standalone_props = tmp_path / "standalone.properties"
    standalone_props.write_text(f"bootstrap.servers={broker.bootstrap}\n"
                                f"listeners=http://127.0.0.1:{free_port()}\n"
                                f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
                                "exactly.once.source.support=enabled\n")
    result = _start_line(["standalone", str(standalone_props)])
    assert result.returncode != 0
    assert "exactly-once source connectors need distributed mode" in result.stderr
    assert "Traceback" not in result.stderr

    worker = standalone(tmp_path, broker.bootstrap)
    try:
        for key, value, expected in (
                ("exactly.once.support", "required", "needs exactly.once.source.support"),
                ("transaction.boundary", "poll", "applies only with"),
                ("offsets.storage.topic", "mine", "applies only in distributed mode")):
            code, body = http("PUT", f"{worker.url}/connectors/src/config", {
                "connector.class": "DataGen", "kafka.topic": "t", key: value})
            assert code == 400 and expected in body["message"], body
        assert http("PUT", f"{worker.url}/connectors/src/fence")[0] == 400
    finally:
        worker.stop()


def test_a_transaction_with_a_refused_batch_fails_the_task(tmp_path: Path, broker) -> None:
    """A batch the broker refuses (larger than the topic's max.message.bytes) fails the
    transaction, also with errors.tolerance=all, as Kafka's producer makes it abortable:
    aiokafka would commit the transaction, and with it the offsets of the refused lines,
    without their records."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("small", 1, 1, topic_configs={
                "max.message.bytes": "4096"})])
        finally:
            await admin.close()

    asyncio.run(create())
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line-{i}\n" for i in range(20)) + "x" * 8000 + "\n" +
                      "".join(f"after-{i}\n" for i in range(20)))
    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url).start()
    try:
        code, body = http("PUT", f"{url}/connectors/src/config", {
            "connector.class": "FileStreamSource", "file": str(source), "topic": "small",
            "errors.tolerance": "all"})
        assert code == 201, body

        def failed_trace() -> str | None:
            code, status = http("GET", f"{url}/connectors/src/status")
            tasks = status.get("tasks", []) if code == 200 else []
            return next((t.get("trace", "") for t in tasks if t["state"] == "FAILED"), None)

        wait_until(lambda: failed_trace() is not None, 60, message="the task failed")
        assert "was not written" in failed_trace()
        committed = [r.value.decode() for r in read_committed(broker.bootstrap, "small", 0,
                                                              timeout=5)]
        assert not any(v.startswith(("x", "after-")) for v in committed), committed
    finally:
        worker.stop()


def committed_offsets(bootstrap: str, topic: str, expected: int) -> dict[str, int]:
    """value -> offset of every committed record of partition 0 of ``topic``."""
    return {r.value.decode(): r.offset for r in read_committed(bootstrap, topic, expected,
                                                               timeout=120)}


def test_poll_transactions_through_a_kill_after_a_commit(tmp_path: Path, broker) -> None:
    """transaction.boundary=poll: each poll's records (several producer batches) are one
    transaction, and the next poll's records, polled and converted while a commit runs, go
    out only after it. The worker is killed (SIGKILL) while the task's commit() after a
    transaction runs, with the next poll's records sent in a transaction not committed yet
    and the poll after that waiting: the restarted task resumes from the offsets that
    committed with the records. Every record once, in order, and in the partition each poll's
    records sit together, with at least a commit marker between two polls."""
    import eos_plugins

    create_topics(broker.bootstrap, {"polls": 1})
    size, total, marker = eos_plugins.POLL_SIZE, eos_plugins.POLL_SIZE * 24, tmp_path / "marker"
    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url).start()
    try:
        code, body = http("PUT", f"{url}/connectors/polls/config", {
            "connector.class": "tests.connect.eos_plugins.PollSource", "topic": "polls",
            "count": str(total), "block.at": "10", "marker": str(marker),
            "exactly.once.support": "required", "transaction.boundary": "poll"})
        assert code == 201, body
        wait_until(marker.exists, 60, message="the tenth commit")
        assert 0 < committed_count(broker.bootstrap, "polls") < total
        worker.kill()
        worker.start()
        offsets = committed_offsets(broker.bootstrap, "polls", total)
        numbers = sorted(int(v.split(":")[0]) for v in offsets)
        assert numbers == list(range(total))
        at = {int(v.split(":")[0]): o for v, o in offsets.items()}
        for n in range(1, total):
            if n % size:  # within a poll: one transaction, nothing between its records
                assert at[n] == at[n - 1] + 1, (n, at[n - 1], at[n])
            else:  # a new poll: a new transaction, its marker (at least) in between
                assert at[n] >= at[n - 1] + 2, (n, at[n - 1], at[n])
    finally:
        worker.stop()
