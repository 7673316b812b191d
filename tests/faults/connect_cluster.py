"""The processes of one Connect fault run: a broker and distributed Connect workers, each an OS
process (``streams connect distributed``), plus REST calls that ride out rebalances.

Every process started here is stopped by ``ConnectCluster.close()`` (paused ones get SIGCONT
first), which the harness calls in a ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import BrokerProcess, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "connect"  # stuck_plugins.py: the stuck-task fault's connectors
SESSION_TIMEOUT_MS = 6000
# A departed worker's tasks move after 3 s (KIP-415's default waits 5 minutes for it).
REBALANCE_DELAY_MS = 3000
GRACEFUL_MS = 3000  # task.shutdown.graceful.timeout.ms: a stuck task is abandoned after 3 s
START_TIMEOUT = 90.0  # a loaded 2-core machine starts a process slowly; success ends it early


def http(method: str, url: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
    """(status, parsed JSON or None); HTTP errors are returned, connection errors give 0."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, exc.read()
    except (OSError, TimeoutError):
        return 0, None
    try:
        return status, json.loads(payload) if payload else None
    except ValueError:
        return status, payload.decode(errors="replace")


class ConnectWorker:
    """One distributed worker process with its properties file and log."""

    def __init__(self, name: str, workdir: Path, settings: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.worker_id = f"127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.log"
        self.properties = workdir / f"{name}.properties"
        self.properties.write_text("".join(
            f"{k}={v}\n" for k, v in {**settings, "listeners": self.url}.items()))
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        self.stopped = False  # stopped on purpose (a worker removed): not expected to run
        self.starts = 0

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(PLUGINS),
                                                          env.get("PYTHONPATH")]))
        self.starts += 1
        self.stopped = False
        with open(self.log, "ab") as out:
            out.write(f"=== start {self.starts}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                 str(self.properties)], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        def ready() -> bool:
            if not self.alive():
                raise AssertionError(f"worker {self.name} exited: {self.tail()}")
            return http("GET", f"{self.url}/health", timeout=2)[0] == 200

        wait_until(ready, timeout, interval=0.2, message=f"worker {self.name} ready")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.resume()
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.proc is not None and self.paused and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def terminate(self) -> None:
        """SIGTERM (a worker leaving the group cleanly); ``wait_stopped`` collects it."""
        self.stopped = True
        if self.alive():
            assert self.proc is not None
            self.resume()
            self.proc.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float = 60.0) -> bool:
        """True if the process ended by itself within ``timeout`` (else it is killed)."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            self.kill()
            return False


@dataclass
class ConnectCluster:
    workdir: Path
    exactly_once: bool
    broker: BrokerProcess = field(init=False)
    workers: list[ConnectWorker] = field(default_factory=list)

    def __post_init__(self) -> None:
        config = self.workdir / "broker.properties"
        config.write_text("group.initial.rebalance.delay.ms=0\n")
        self.broker = BrokerProcess(self.workdir / "broker-data",
                                    extra=["--config", str(config)])

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def settings(self) -> dict[str, str]:
        return {
            "bootstrap.servers": self.bootstrap, "group.id": "faults-connect",
            "config.storage.topic": "faults-configs", "offset.storage.topic": "faults-offsets",
            "status.storage.topic": "faults-status", "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
            "offset.storage.partitions": "3", "status.storage.partitions": "2",
            "offset.flush.interval.ms": "500", "session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "heartbeat.interval.ms": "500",
            "scheduled.rebalance.max.delay.ms": str(REBALANCE_DELAY_MS),
            "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
            "exactly.once.source.support": "enabled" if self.exactly_once else "disabled",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}

    def add_worker(self, wait: bool = True) -> ConnectWorker:
        worker = ConnectWorker(f"worker{len(self.workers)}", self.workdir, self.settings())
        self.workers.append(worker)
        worker.start()
        if wait:
            worker.wait_ready()
        return worker

    def live(self) -> list[ConnectWorker]:
        """Workers that run and are meant to (killed ones are restarted by their fault)."""
        return [w for w in self.workers if w.alive() and not w.stopped]

    def reachable(self) -> list[ConnectWorker]:
        return [w for w in self.live() if not w.paused]

    def rest(self, method: str, path: str, body: Any = None, timeout: float = 90.0,
             ok: tuple[int, ...] = (200, 201, 202, 204)) -> tuple[int, Any]:
        """A REST call through any reachable worker, retried while the group rebalances (409),
        the leader is unknown or away (5xx, no answer) until ``timeout``."""
        deadline = time.monotonic() + timeout
        attempt = 0
        last: tuple[int, Any] = (0, None)
        while True:
            workers = self.reachable()
            if workers:
                worker = workers[attempt % len(workers)]
                last = http(method, worker.url + path, body)
                if last[0] in ok:
                    return last
                if last[0] not in (0, 409, 500, 503, 504):
                    raise AssertionError(f"{method} {path} -> {last}")
            attempt += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path} still failing after {timeout}s: {last}")
            time.sleep(0.3)

    def statuses(self, names: list[str]) -> dict[str, Any] | None:
        """Each connector's status as one reachable worker answers it (None: no answer)."""
        workers = self.reachable()
        if not workers:
            return None
        out = {}
        for name in names:
            code, body = http("GET", f"{workers[0].url}/connectors/{name}/status", timeout=10)
            if code != 200:
                return None
            out[name] = body
        return out

    def wait_running(self, names: list[str], timeout: float = 120.0) -> None:
        """Until every connector and its tasks are RUNNING on live workers, as each reachable
        worker reports it (statuses travel through the status topic)."""
        def settled() -> bool:
            live_ids = {w.worker_id for w in self.reachable()}
            for worker in self.reachable():
                for name in names:
                    code, body = http("GET", f"{worker.url}/connectors/{name}/status",
                                      timeout=10)
                    if code != 200 or body["connector"]["state"] != "RUNNING" \
                            or not body["tasks"]:
                        return False
                    if any(t["state"] != "RUNNING" or t["worker_id"] not in live_ids
                           for t in body["tasks"]):
                        return False
            return True

        wait_until(settled, timeout, interval=0.3,
                   message=f"connectors {names} RUNNING on live workers")

    def stop_workers(self) -> list[str]:
        """SIGTERM every worker (SIGCONT first if paused); the ones that did not end by
        themselves within the timeout (those are killed)."""
        unclean: list[str] = []
        try:
            for worker in self.workers:
                if worker.alive():
                    worker.terminate()
            for worker in self.workers:
                if worker.proc is not None and not worker.wait_stopped(60):
                    unclean.append(worker.name)
        finally:
            for worker in self.workers:
                worker.kill()
        return unclean

    def close(self) -> None:
        """Every worker, then the broker."""
        try:
            self.stop_workers()
        finally:
            self.broker.stop()
            self.broker.kill()
