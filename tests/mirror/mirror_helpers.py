"""Helpers for the MirrorMaker 2 tests: `streams mirror` as a child process, an mm2.properties
writer, and Kafka clients for producing, reading and committing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import wait_until


def write_mm2(path: Path, clusters: dict[str, str], lines: list[str]) -> Path:
    text = [f"clusters = {', '.join(clusters)}"]
    text += [f"{alias}.bootstrap.servers = {bootstrap}" for alias, bootstrap in clusters.items()]
    # Quick rounds for tests (Kafka's defaults are minutes).
    text += ["replication.factor = 1", "checkpoints.topic.replication.factor = 1",
             "heartbeats.topic.replication.factor = 1",
             "offset-syncs.topic.replication.factor = 1",
             "offset.storage.replication.factor = 1", "config.storage.replication.factor = 1",
             "status.storage.replication.factor = 1", "offset.storage.partitions = 3",
             "status.storage.partitions = 1", "offset.flush.interval.ms = 500",
             "session.timeout.ms = 6000", "heartbeat.interval.ms = 500",
             # a killed process's tasks move after 2 s (KIP-415's default waits 5 minutes)
             "scheduled.rebalance.max.delay.ms = 2000",
             "refresh.topics.interval.seconds = 2", "refresh.groups.interval.seconds = 2",
             "emit.checkpoints.interval.seconds = 1", "sync.topic.configs.interval.seconds = 2",
             "emit.heartbeats.interval.seconds = 1"]
    text += lines
    path.write_text("\n".join(text) + "\n")
    return path


class MirrorProcess:
    """`streams mirror mm2.properties` in a child process (stop: SIGTERM; kill: SIGKILL)."""

    def __init__(self, config: Path, log_path: Path, extra: list[str] | None = None) -> None:
        self.config = config
        self.log_path = log_path
        self.extra = extra or []
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorProcess:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streams.cli.main", "mirror", str(self.config),
                 *self.extra], stdout=log_file, stderr=subprocess.STDOUT, env=env)
        wait_until(lambda: "running flows" in self.log() or self._exited(), 90,
                   message="streams mirror started")
        if self._exited():
            raise AssertionError(f"streams mirror exited: {self.log()[-3000:]}")
        return self

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def pause(self) -> None:
        """SIGSTOP: the process stops dead (no heartbeats, no clean-up) until ``resume``."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused process cannot handle SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def run_mirror(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", "mirror", *args],
                          capture_output=True, text=True, timeout=timeout)


def admin_call(bootstrap: str, fn: Any) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await fn(admin)
        finally:
            await admin.close()

    return asyncio.run(run())


def create_topic(bootstrap: str, name: str, partitions: int,
                 configs: dict[str, str] | None = None) -> None:
    from aiokafka.admin import NewTopic

    admin_call(bootstrap, lambda a: a.create_topics(
        [NewTopic(name, partitions, 1, topic_configs=configs or {})]))


def list_topics(bootstrap: str) -> set[str]:
    return set(admin_call(bootstrap, lambda a: a.list_topics()))


def partition_count(bootstrap: str, topic: str) -> int:
    async def describe(admin: Any) -> int:
        for t in await admin.describe_topics([topic]):
            return len(t.get("partitions") or [])
        return 0

    return admin_call(bootstrap, describe)


def topic_overrides(bootstrap: str, topic: str) -> dict[str, str]:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def describe(admin: Any) -> dict[str, str]:
        out = {}
        for response in await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)]):
            for resource in response.to_object()["resources"]:
                for e in resource["config_entries"]:
                    if e.get("config_source") == 1 and e["config_value"] is not None:
                        out[e["config_names"]] = e["config_value"]
        return out

    return admin_call(bootstrap, describe)


def produce(bootstrap: str, records: list[tuple[str, int, bytes | None, bytes | None,
                                                 int, list[tuple[str, bytes]]]]) -> None:
    """(topic, partition, key, value, timestamp_ms, headers) each."""
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(t, v, key=k, partition=p, timestamp_ms=ts,
                                           headers=h or None)
                       for t, p, k, v, ts, h in records]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


async def _partitions(bootstrap: str, topic: str) -> int:
    """The topic's partition count through the admin API (0 if it does not exist): a bare
    consumer's metadata would not list it on Apache Kafka."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        if topic not in await admin.list_topics():
            return 0
        for t in await admin.describe_topics([topic]):
            return len(t.get("partitions") or [])
        return 0
    finally:
        await admin.close()


def read_all(bootstrap: str, topic: str, timeout: float = 60,
             isolation: str = "read_uncommitted") -> list[Any]:
    """Every record of ``topic`` up to its end offsets now (all partitions); an error, never a
    partial answer, when the end is not reached within ``timeout``."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    isolation_level=isolation)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(await _partitions(bootstrap, topic))]
            if not tps:
                return []
            consumer.assign(tps)
            # Metadata of the assigned topic before seeking (a topic created a moment ago).
            await consumer._client.force_metadata_update()  # noqa: SLF001 - test helper
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            out: list[Any] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not all([await consumer.position(tp) >= ends[tp] for tp in tps]):
                if loop.time() > deadline:
                    raise AssertionError(f"read_all({topic}): {len(out)} records, end offsets "
                                         f"{ends} not reached within {timeout} s")
                batch = await consumer.getmany(timeout_ms=200)
                for msgs in batch.values():
                    out.extend(msgs)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())


def consume_group(bootstrap: str, topic: str, group: str, count: int | None,
                  commit: bool = True, timeout: float = 30) -> list[Any]:
    """Read with ``group`` (subscribe) from its committed offsets (earliest if none): ``count``
    records, or all up to the current end when count is None; commit what was read."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_poll_records=50 if count else 500)
        await consumer.start()
        out: list[Any] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            positions: dict[Any, int] = {}
            while loop.time() < deadline:
                batch = await consumer.getmany(timeout_ms=300)
                for tp, msgs in batch.items():
                    for m in msgs:
                        if count is not None and len(out) >= count:
                            break
                        out.append(m)
                        positions[tp] = m.offset + 1
                if count is not None and len(out) >= count:
                    break
                if count is None and consumer.assignment():
                    ends = await consumer.end_offsets(list(consumer.assignment()))
                    if all([await consumer.position(tp) >= e for tp, e in ends.items()]):
                        break
            if commit and positions:
                await consumer.commit(positions)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())
