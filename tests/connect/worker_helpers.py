"""Helpers for Connect tests: a worker on its own event loop in a thread, HTTP calls, a consumer."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from helpers import free_port, wait_until

from connect.runtime.background import BackgroundWorker

# A standalone or distributed Connect worker running in a background thread.
ThreadedWorker = BackgroundWorker


def standalone(tmp_path: Path, bootstrap: str, **extra: Any) -> ThreadedWorker:
    connectors = extra.pop("connectors", [])
    return ThreadedWorker.standalone(bootstrap, tmp_path / "connect.offsets", {
        "listeners": f"http://127.0.0.1:{free_port()}",
        "offset.flush.interval.ms": "200",
        **{k: str(v) for k, v in extra.items()},
    }, connectors)


def http(method: str, url: str, body: Any = None, timeout: float = 60) -> tuple[int, Any]:
    """(status, parsed JSON or None) for one request; errors are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, exc.read()
    return status, json.loads(payload) if payload else None


def connector_offsets(url: str, name: str) -> list[dict[str, Any]] | None:
    """``GET /connectors/{name}/offsets``, or None while the worker does not know the connector.

    A standalone worker answers REST before it has created the connectors of its command line
    (404 in that window, as Kafka's ConnectStandalone does).
    """
    status, body = http("GET", f"{url}/connectors/{name}/offsets")
    return body["offsets"] if status == 200 else None


def produce(bootstrap: str, topic: str, values: list[bytes | None],
            keys: list[bytes | None] | None = None,
            headers: list[list[tuple[str, bytes]]] | None = None) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for i, value in enumerate(values):
                await producer.send(topic, value=value, key=keys[i] if keys else None,
                                    headers=headers[i] if headers else None)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[Any]:
    """Read ``topic`` from the beginning until ``expected`` records (then a little more to catch
    duplicates: until the end offsets are reached)."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        records: list[Any] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline:
                batch = await consumer.getmany(timeout_ms=200)
                for msgs in batch.values():
                    records.extend(msgs)
                if len(records) >= expected:
                    ends = await consumer.end_offsets(list(consumer.assignment()))
                    positions = {tp: await consumer.position(tp) for tp in ends}
                    if all(positions[tp] >= end for tp, end in ends.items()):
                        break
            return records
        finally:
            await consumer.stop()

    return asyncio.run(run())


def status_state(url: str, name: str) -> tuple[str | None, list[str]]:
    code, body = http("GET", f"{url}/connectors/{name}/status")
    if code != 200:
        return None, []
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def wait_running(url: str, name: str, tasks: int | None = None, timeout: float = 60) -> None:
    def ok() -> bool:
        state, task_states = status_state(url, name)
        return state == "RUNNING" and bool(task_states) and all(
            s == "RUNNING" for s in task_states) and (tasks is None or len(task_states) == tasks)

    wait_until(ok, timeout, message=f"connector {name} RUNNING")


class WorkerProcess:
    """`streams connect ...` as a child process (for restart and SIGKILL tests)."""

    def __init__(self, args: list[str], log_path: Path, url: str,
                 pythonpath: list[str] | None = None) -> None:
        self.args = args
        self.log_path = log_path
        self.url = url
        self.pythonpath = list(pythonpath or [])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if self.pythonpath:  # where test plugins live
            env["PYTHONPATH"] = os.pathsep.join(
                [*self.pythonpath, *filter(None, [os.environ.get("PYTHONPATH")])])
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen([sys.executable, "-m", "streams.cli.main", "connect",
                                          *self.args], stdout=log_file, stderr=subprocess.STDOUT,
                                         env=env)
        wait_until(self._ready, 60, message=f"worker at {self.url}")
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited with {self.proc.returncode}: "
                                 f"{self.log_path.read_text(errors='replace')[-4000:]}")
        try:
            return http("GET", f"{self.url}/health", timeout=2)[0] == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
