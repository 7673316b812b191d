"""Child processes for the operations tests: an app instance, and HTTP GETs with polling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class AppProcess:
    """``tests/ops/ops_app.py`` in a child process; ``stop()`` closes it with SIGTERM."""

    def __init__(self, bootstrap: str, state_dir: Path, server: str, app_id: str = "ops-app",
                 log: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.env = env or {}
        self.args = [sys.executable, "-m", "tests.ops.ops_app", bootstrap, str(state_dir),
                     server, app_id]
        self.log = log or state_dir.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AppProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=env,
                                     stdout=open(self.log, "wb"),  # noqa: SIM115
                                     stderr=subprocess.STDOUT)
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def running(self) -> bool:
        return "STATE RUNNING" in self.output()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def http_get(url: str) -> tuple[int, Any]:
    """(status, JSON body); a refused connection is (0, None)."""
    try:
        with urllib.request.urlopen(url, timeout=15) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body or b"null")
        except ValueError:
            return exc.code, body.decode(errors="replace")  # not one of our JSON answers
    except (urllib.error.URLError, ConnectionError):
        return 0, None


def produce(bootstrap: str, topic: str,
            records: list[tuple[bytes | None, bytes | None, int]]) -> None:
    """Send (key, value, timestamp) records, keyed ones partitioned by murmur2; waits for acks."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for key, value, ts in records:
                await producer.send(topic, value, key=key, timestamp_ms=ts)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())
