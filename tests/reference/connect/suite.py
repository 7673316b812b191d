"""Apache Kafka's own Connect 4.3.1 and MirrorMaker 2 against our broker (regression tests).

Kafka's ConnectStandalone and ConnectDistributed run FileStreamSource/FileStreamSink against our
broker while lines are appended; a worker is killed with SIGKILL and restarted (standalone) or
rejoins (distributed): every line reaches the topic (at least once, as Kafka Connect promises
without exactly-once support). Kafka's MirrorMaker 2 replicates a topic between two of our
brokers. Without java or mvn every test skips with one line.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EmbeddedBroker, create_topics, free_port, wait_until

from .. import connect as kconnect

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def connect_jars() -> None:
    reason = kconnect.unavailable()
    if reason:
        pytest.skip(reason)


def http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, exc.read()
    return status, json.loads(payload) if payload else None


def topic_values(bootstrap: str, topic: str, timeout: float = 5.0) -> list[bytes]:
    """Every value in ``topic`` up to its end offsets now."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[bytes]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        values: list[bytes] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline:
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    values.extend(r.value for r in batch)
                assigned = list(consumer.assignment())
                if assigned:
                    ends = await consumer.end_offsets(assigned)
                    positions = {tp: await consumer.position(tp) for tp in ends}
                    if all(positions[tp] >= end for tp, end in ends.items()):
                        break
            return values
        finally:
            await consumer.stop()

    return asyncio.run(run())


class Appender:
    """Appends ``total`` numbered lines to a file in chunks while the test goes on."""

    def __init__(self, path: Path, total: int, chunk: int = 200, pause: float = 0.05) -> None:
        self.path = path
        self.lines = [f"line-{i:06d}" for i in range(total)]
        self.chunk, self.pause = chunk, pause
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with open(self.path, "a") as handle:
            for start in range(0, len(self.lines), self.chunk):
                handle.write("".join(f"{line}\n" for line in
                                     self.lines[start:start + self.chunk]))
                handle.flush()
                time.sleep(self.pause)

    def __enter__(self) -> Appender:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(120)


def worker_settings(bootstrap: str, rest_port: int, **extra: object) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{rest_port}",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms": 500, **extra}


def test_kafka_connect_standalone_file_connectors_through_sigkill(tmp_path: Path,
                                                                  bundled: EmbeddedBroker) -> None:
    create_topics(bundled.bootstrap, {"lines": 1})
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("")
    port = free_port()
    worker = kconnect.write_properties(tmp_path / "worker.properties", worker_settings(
        bundled.bootstrap, port, **{"offset.storage.file.filename": tmp_path / "offsets"}))
    src = kconnect.write_properties(tmp_path / "source.properties", {
        "name": "src", "connector.class": "FileStreamSource", "file": source, "topic": "lines"})
    snk = kconnect.write_properties(tmp_path / "sink.properties", {
        "name": "snk", "connector.class": "FileStreamSink", "file": sink, "topics": "lines"})
    url = f"http://127.0.0.1:{port}"

    def run() -> kconnect.JavaProcess:
        return kconnect.JavaProcess("standalone", tmp_path,
                                    "org.apache.kafka.connect.cli.ConnectStandalone",
                                    str(worker), str(src), str(snk), rest_url=url).start()

    process = run()
    try:
        with Appender(source, 6000) as appender:
            wait_until(lambda: sink.exists() and len(sink.read_text().splitlines()) >= 1500, 90,
                       interval=0.2, message="Kafka's sink writing")
            process.kill()  # mid-stream
            process = run()
        wanted = set(appender.lines)
        wait_until(lambda: set(sink.read_text().splitlines()) >= wanted, 120, interval=0.5,
                   message="every line in the sink file after the restart")
        in_topic = [v.decode() for v in topic_values(bundled.bootstrap, "lines")]
        assert set(in_topic) == wanted and len(in_topic) >= len(wanted)
        assert set(sink.read_text().splitlines()) == wanted
    finally:
        process.stop()


def test_kafka_connect_distributed_worker_killed_and_rejoining(tmp_path: Path,
                                                               bundled: EmbeddedBroker) -> None:
    create_topics(bundled.bootstrap, {"lines": 2})
    source = tmp_path / "in.txt"
    source.write_text("")
    common = {"group.id": "kafka-connect", "config.storage.topic": "kc-configs",
              "offset.storage.topic": "kc-offsets", "status.storage.topic": "kc-status",
              "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
              "status.storage.replication.factor": 1, "scheduled.rebalance.max.delay.ms": 3000,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    workers = []
    for i, port in enumerate(ports):
        props = kconnect.write_properties(tmp_path / f"w{i}.properties",
                                          worker_settings(bundled.bootstrap, port, **common))
        workers.append(kconnect.JavaProcess(f"w{i}", tmp_path,
                                            "org.apache.kafka.connect.cli.ConnectDistributed",
                                            str(props), rest_url=urls[i]))
    try:
        for worker in workers:
            worker.start()
        code, body = http("PUT", f"{urls[1]}/connectors/src/config", {
            "connector.class": "FileStreamSource", "file": str(source), "topic": "lines"})
        assert code == 201, body

        def task_worker() -> str | None:
            code, status = http("GET", f"{urls[0]}/connectors/src/status")
            tasks = status.get("tasks", []) if code == 200 else []
            running = [t["worker_id"] for t in tasks if t["state"] == "RUNNING"]
            return running[0] if running else None

        owner = wait_until(task_worker, 90, interval=0.3, message="the source task RUNNING")
        victim = next(i for i, u in enumerate(urls) if owner in u)
        survivor = 1 - victim
        with Appender(source, 6000) as appender:
            wait_until(lambda: len(topic_values(bundled.bootstrap, "lines", 2)) >= 1500, 90,
                       interval=0.3, message="lines flowing")
            workers[victim].kill()
            wait_until(lambda: http("GET", f"{urls[survivor]}/connectors/src/status")[1]
                       .get("tasks", [{}])[0].get("worker_id", "") in urls[survivor], 120,
                       interval=0.5, message="the task moved to the surviving worker")
            workers[victim].start()  # rejoins the group
        wanted = set(appender.lines)
        wait_until(lambda: {v.decode() for v in topic_values(bundled.bootstrap, "lines")}
                   == wanted, 120, interval=1.0, message="every line in the topic")
        code, offsets = http("GET", f"{urls[victim]}/connectors/src/offsets")
        assert code == 200 and offsets["offsets"], offsets
    finally:
        for worker in workers:
            worker.stop()


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[tuple[EmbeddedBroker, EmbeddedBroker]]:
    a = EmbeddedBroker(tmp_path / "a").start()
    try:
        b = EmbeddedBroker(tmp_path / "b").start()
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def test_kafka_mirror_maker_2_between_two_of_our_brokers(
        tmp_path: Path, two_brokers: tuple[EmbeddedBroker, EmbeddedBroker]) -> None:
    from aiokafka import AIOKafkaProducer

    a, b = two_brokers
    create_topics(a.bootstrap, {"orders": 2})
    total = 3000

    async def produce(start: int, end: int) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=a.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(start, end):
                await producer.send("orders", key=f"k{i % 50}".encode(),
                                    value=f"order-{i}".encode())
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(produce(0, total // 2))
    factor = {key: 1 for key in (
        "replication.factor", "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
        "offset.storage.replication.factor", "status.storage.replication.factor",
        "config.storage.replication.factor")}
    props = kconnect.write_properties(tmp_path / "mm2.properties", {
        "clusters": "A, B", "A.bootstrap.servers": a.bootstrap,
        "B.bootstrap.servers": b.bootstrap, "A->B.enabled": "true", "A->B.topics": "orders",
        "B->A.enabled": "false", "sync.topic.acls.enabled": "false",
        "refresh.topics.interval.seconds": 2, "emit.heartbeats.interval.seconds": 1,
        **factor})
    mm2 = kconnect.JavaProcess("mm2", tmp_path, "org.apache.kafka.connect.mirror.MirrorMaker",
                               str(props)).start()
    try:
        wait_until(lambda: len(topic_values(b.bootstrap, "A.orders", 2)) >= total // 2, 180,
                   interval=1.0, message="the first half replicated to B as A.orders")
        asyncio.run(produce(total // 2, total))  # while MirrorMaker runs
        wanted = sorted(f"order-{i}" for i in range(total))
        wait_until(lambda: sorted(v.decode() for v in topic_values(b.bootstrap, "A.orders"))
                   == wanted, 120, interval=1.0, message="every record replicated once")
        assert mm2.proc is not None and mm2.proc.poll() is None, mm2.tail()
    finally:
        mm2.stop()
