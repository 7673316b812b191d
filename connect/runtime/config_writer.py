"""The leader's fenceable writes to the config topic (KIP-618, Kafka's KafkaConfigBackingStore
with ``exactly.once.source.support`` ``preparing`` or ``enabled``).

A leader claims write privileges by starting a transactional producer whose
``transactional.id`` is ``connect-cluster-${group.id}``: its InitProducerId fences the producer
of any earlier leader. Every privileged write (connector configs, task configs, task-count
records, session keys, restart requests) is then one transaction. A zombie leader, paused
while the group elected another, can no longer change the cluster's configuration: its commit
fails with ProducerFenced, the worker gives its privileges up, and readers of the config topic
(``read_committed``) never see what it tried to write. Without exactly-once support Kafka
writes with a plain producer and fences nothing; so do we.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaProducer
from aiokafka.structs import RecordMetadata

from connect.api import ConnectException
from connect.runtime import clients
from streams.kafka import clients as kafka_clients

if TYPE_CHECKING:
    from connect.runtime.config import WorkerConfig

log = logging.getLogger("connect.distributed")


def transactional_id(group_id: str | None) -> str:
    """The config-topic producer's id (Kafka's DistributedConfig.transactionalProducerId)."""
    return f"connect-cluster-{group_id}"


class PrivilegedWriteError(Exception):
    """A fenceable write failed: this worker was fenced out by a newer leader (or the write
    failed otherwise); its privileges are given up until it claims them again."""


class FencedConfigWriter:
    """The transactional producer a leader writes the config topic with."""

    def __init__(self, config: WorkerConfig, topic: str) -> None:
        self.config = config
        self.topic = topic
        self.producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()  # one transaction at a time

    @property
    def claimed(self) -> bool:
        return self.producer is not None

    async def claim(self) -> None:
        """Start the transactional producer (fencing any earlier leader's); idempotent."""
        async with self._lock:
            if self.producer is not None:
                return
            producer = kafka_clients.producer(
                clients.base_kwargs(self.config), acks="all", enable_idempotence=True,
                transactional_id=transactional_id(self.config.group_id),
                client_id=f"connect-cluster-{self.config.group_id}-leader")
            await producer.start()
            self.producer = producer
            log.info("claimed write privileges for the config topic %s", self.topic)

    async def send(self, records: list[tuple[str, Any]]) -> RecordMetadata:
        """Write ``records`` (key, JSON value or None) in one transaction; the metadata of the
        last. Raises :class:`PrivilegedWriteError` (privileges given up) on any failure."""
        async with self._lock:
            producer = self.producer
            if producer is None:
                raise PrivilegedWriteError("this worker holds no write privileges for the config "
                                           "topic (it is not the leader, or was fenced out)")
            try:
                await producer.begin_transaction()
                futures = [await producer.send(
                    self.topic, key=key.encode(),
                    value=None if value is None else json.dumps(value, sort_keys=True).encode())
                    for key, value in records]
                await producer.commit_transaction()
                return await futures[-1]
            except Exception as exc:
                log.warning("Failed to perform fencable send to config topic: %s", exc)
                await self._relinquish(producer)
                raise PrivilegedWriteError(
                    f"Failed to perform fencable send to config topic: {exc}") from exc

    async def relinquish(self) -> None:
        async with self._lock:
            if self.producer is not None:
                await self._relinquish(self.producer)

    async def _relinquish(self, producer: AIOKafkaProducer) -> None:
        self.producer = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.stop(), 10)


async def forward_task_configs(leader_url: Callable[[], str | None], name: str,
                               configs: list[dict[str, str]], timeout: float = 60.0,
                               headers: Callable[[bytes], dict[str, str]] | None = None) -> None:
    """A worker that is not the leader hands its connector's task configs to the leader
    (``POST /connectors/{name}/tasks``, signed under KIP-507), retrying while the leader moves
    or a session key was just replaced (403), as Kafka's reconfigureConnector does."""
    await request_leader(leader_url, "POST", f"/connectors/{name}/tasks?forward=true",
                         json.dumps(configs).encode(),
                         f"Request to leader to reconfigure connector tasks for {name} failed",
                         timeout, headers, content_type="application/json")


async def request_leader(leader_url: Callable[[], str | None], method: str, path: str,
                         body: bytes, failure: str, timeout: float = 60.0,
                         headers: Callable[[bytes], dict[str, str]] | None = None,
                         content_type: str | None = None) -> None:
    """Send one request to the leader's REST API (signed by ``headers`` under KIP-507),
    retrying every 0.5 s until ``timeout`` while no leader is known, the leader moves, or it
    answers other than 2xx, 400 or 404; then raise ``failure`` with the last answer."""
    from aiohttp import ClientSession, ClientTimeout

    deadline = time.monotonic() + timeout
    last = "no leader known"
    while time.monotonic() < deadline:
        url = leader_url()
        if url:
            sent = {"Content-Type": content_type} if content_type else {}
            if headers:
                sent.update(headers(body))
            try:
                async with ClientSession(timeout=ClientTimeout(total=30)) as session, \
                        session.request(method, f"{url.rstrip('/')}{path}", data=body,
                                        headers=sent) as response:
                    if response.status < 300:
                        return
                    last = f"HTTP {response.status}: {(await response.text())[:300]}"
                    if response.status in (400, 404):
                        break
            except Exception as exc:  # the leader may be moving: retry until the deadline
                last = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(0.5)
    raise ConnectException(f"{failure}: {last}")
