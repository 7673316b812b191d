"""Test helpers: an embedded broker on a free port, a broker subprocess, and polling waits."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.broker import Broker, BrokerConfig

DAY_MS = 86_400_000
# Record timestamps for broker-backed tests: midnight UTC of the day before the run, so every
# record is within retention as a real app's are. Apache Kafka's first retention pass runs 30 s
# after it starts (log.initial.task.delay.ms) and deletes whole segments whose newest record is
# older than retention.ms (7 days): timestamps near 0 lose input and output mid-test. Aligned
# to a day so that window boundaries fall where they would from 0.
RECENT_TS = (int(time.time() * 1000) // DAY_MS - 1) * DAY_MS


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05,
               message: str = "condition") -> Any:
    """Poll ``condition`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def create_topics(bootstrap: str, topics: dict[str, int], replication: int = 1) -> None:
    """Create ``{topic: partitions}`` through the Kafka admin API."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(t, n, replication) for t, n in topics.items()])
        finally:
            await admin.close()

    asyncio.run(run())


def list_topics(bootstrap: str, **admin_kwargs: Any) -> list[str]:
    """The broker's topic names, sorted, as the Kafka admin API lists them (``admin_kwargs``:
    further AIOKafkaAdminClient arguments, e.g. a secured connection's)."""
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> list[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **admin_kwargs)
        await admin.start()
        try:
            return sorted(await admin.list_topics())
        finally:
            await admin.close()

    return asyncio.run(run())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    """A Broker running on its own event loop in a background thread."""

    def __init__(self, data_dir: Path, **overrides: Any) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = {"group_initial_rebalance_delay_ms": 0, **overrides}
        self.port = overrides.pop("port", 0) or free_port()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.broker: Broker | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> EmbeddedBroker:
        config = BrokerConfig.from_mapping(
            {"data_dir": self.data_dir, "port": self.port, **self.overrides}
        )
        self.loop = asyncio.new_event_loop()
        self.broker = Broker(config)
        self.loop.run_until_complete(self.broker.start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the broker's loop and return its result."""
        assert self.loop is not None

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(30)

    def stop(self) -> None:
        if self.loop is None or self.broker is None:
            return
        asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        assert self.thread is not None
        self.thread.join(30)
        self.loop.close()
        self.loop = None
        self.broker = None

    def restart(self) -> EmbeddedBroker:
        self.stop()
        return self.start()


class BrokerProcess:
    """`streams broker start` in a child process, for crash (SIGKILL) tests."""

    def __init__(self, data_dir: Path, port: int | None = None, extra: list[str] | None = None):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.extra = extra or []
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BrokerProcess:
        cmd = [sys.executable, "-m", "streams.cli.main", "broker", "start",
               "--data-dir", str(self.data_dir), "--port", str(self.port), *self.extra]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The log goes to a file beside the data: a pipe nobody reads could fill and block it.
        self.log_path = self.data_dir.parent / f"broker-{self.port}.log"
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        wait_until(self._accepting, 30, message=f"broker on port {self.port}")
        return self

    def _accepting(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            out = self.log_path.read_text(errors="replace")[-4000:]
            raise AssertionError(f"broker exited with {self.proc.returncode}: {out}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class ReferenceKafka:
    """Apache Kafka (tests/reference/kafka.py's KRaft node) with EmbeddedBroker's and
    BrokerProcess's surface: ``bootstrap``, ``port``, ``data_dir``, ``start``, ``stop`` (clean),
    ``kill`` (SIGKILL) and ``restart``. Every start reuses the port and the data directory
    (formatted once), so a restart is a restart of the same cluster. ``properties`` are appended
    to the generated server.properties (the later line wins)."""

    def __init__(self, data_dir: Path, port: int | None = None,
                 properties: dict[str, object] | None = None) -> None:
        from reference import kafka  # tests/reference: imported only when Kafka is wanted

        extra = "".join(f"{k}={v}\n" for k, v in (properties or {}).items())

        class Node(kafka.KafkaNode):
            def configure(self) -> Path:
                props = super().configure()
                with open(props, "a") as out:
                    out.write(extra)
                return props

        self.node = Node(port or free_port(), Path(data_dir))

    @property
    def port(self) -> int:
        return self.node.port

    @property
    def data_dir(self) -> Path:
        return self.node.data_dir

    @property
    def bootstrap(self) -> str:
        return self.node.bootstrap

    @property
    def log_file(self) -> Path:
        return self.node.log_file

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.node.proc

    def start(self) -> ReferenceKafka:
        self.node.start()
        return self

    def stop(self) -> None:
        self.node.stop()

    def kill(self) -> None:
        proc = self.node.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)

    def restart(self) -> ReferenceKafka:
        self.stop()
        return self.start()


def free_port_block(size: int) -> int:
    """A base port P with P .. P+size-1 all free, below Linux's ephemeral range (32768+), so
    that no client connection takes one of them between this check and the bind."""
    import random

    for _ in range(200):
        base = random.randrange(20_000, 32_000 - size)
        try:
            for port in range(base, base + size):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no block of {size} free ports")


class ReferenceCluster:
    """A 3-node Apache Kafka cluster (tests/reference/kafka.py's KafkaCluster) with
    ReferenceKafka's surface, plus ``kill_node``/``start_node`` for the broker-kill fault.
    Topics default to replication factor 3, ``min.insync.replicas`` 2."""

    replication = 3

    def __init__(self, data_dir: Path, nodes: int = 3,
                 properties: dict[str, object] | None = None) -> None:
        from reference import kafka

        self.cluster = kafka.KafkaCluster(nodes, free_port_block(2 * nodes), Path(data_dir),
                                          {k: str(v) for k, v in (properties or {}).items()})

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def nodes(self) -> int:
        return len(self.cluster.nodes)

    def start(self) -> ReferenceCluster:
        self.cluster.start()
        return self

    def stop(self) -> None:
        self.cluster.stop()

    def kill(self) -> None:
        self.cluster.kill()

    def restart(self) -> ReferenceCluster:
        self.stop()
        return self.start()

    def kill_node(self, index: int) -> None:
        self.cluster.nodes[index].kill()

    def start_node(self, index: int) -> None:
        self.cluster.start_node(index)


def reference_unavailable(who: str = "--kafka=reference") -> str | None:
    """Why Apache Kafka cannot run here (no java, no jars and no mvn, a failed download), as a
    skip reason that starts with ``who``; None when it can (its jars are then prepared)."""
    import shutil

    from reference import kafka

    if shutil.which("java") is None:
        return f"{who} needs java on PATH"
    if not kafka.prepared() and shutil.which("mvn") is None:
        return f"{who} needs mvn on PATH (or jars from `make kafka-reference`)"
    try:
        kafka.prepare()
    except kafka.PrepareError as exc:
        return f"{who}: Apache Kafka's jars cannot be prepared: {exc}"
    return None
