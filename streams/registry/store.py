"""The ``_schemas`` topic: replayed into a :class:`State`, appended to by one writer at a time.

Every registry process reads the whole compacted topic (``read_committed``) into memory, so
all of them answer reads alike. Writes need more: two processes registering at once must not
both hand out id N, or version N of one subject. Confluent elects a leader and forwards writes
to it. We use Kafka's transactional producer instead: every registry on the topic uses the same
``transactional.id`` (``schema-registry-<topic>``), so initialising a producer bumps the
epoch and fences the previous holder (KIP-98). A write is: hold a producer (its epoch), read
the topic to its end, compute the records (next id = max id + 1, next version), write them in a
transaction and commit. If another registry started a producer meanwhile, ours is fenced and
the commit fails; we start a new producer (fencing theirs), read again and recompute. So a
commit succeeds only if no other writer obtained an epoch since we obtained ours, and we read
after obtaining it: nothing another registry committed can be missing from what we computed
from. The cost is a producer restart when two registries alternate writes, which is rare and
cheap next to a leader election.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from ..kafka import clients
from ..kafka.client_config import client_settings
from . import errors
from .state import State, encode

log = logging.getLogger("streams.registry")

T = TypeVar("T")
Records = list[tuple[dict[str, Any], dict[str, Any] | None]]


class SchemaStore:
    """State replayed from ``topic`` and serialized writes to it."""

    def __init__(self, bootstrap_servers: str, topic: str = "_schemas",
                 client_config: dict[str, Any] | None = None,
                 role_configs: dict[str, dict[str, Any]] | None = None) -> None:
        """``client_config``: aiokafka arguments for every client (e.g. security settings);
        ``role_configs``: more per client role, ``admin``/``consumer``/``producer``."""
        self.bootstrap = bootstrap_servers
        self.topic = topic
        self.client_config = dict(client_config or {})
        self.role_configs = {k: dict(v) for k, v in (role_configs or {}).items()}
        self.state = State()
        self.tp = TopicPartition(topic, 0)
        self.position = 0
        self._advanced = asyncio.Condition()
        self._write_lock = asyncio.Lock()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._task: asyncio.Task[None] | None = None

    def _settings(self, role: str) -> dict[str, Any]:
        """The user's settings for ``role`` (the bootstrap servers are the store's)."""
        options = {**self.client_config, **self.role_configs.get(role, {})}
        options.pop("bootstrap_servers", None)
        return client_settings(self.bootstrap, options=options)

    async def start(self) -> None:
        await self._ensure_topic()
        self._consumer = clients.consumer(
            self._settings("consumer"), enable_auto_commit=False,
            isolation_level="read_committed", auto_offset_reset="earliest",
            fetch_max_wait_ms=50)  # sync() waits for the fetch that passes a commit marker
        await self._consumer.start()
        self._consumer.assign([self.tp])
        await self._consumer.seek_to_beginning(self.tp)
        self._task = asyncio.get_running_loop().create_task(self._read_loop())
        await self.sync(timeout=60)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        for client in (self._producer, self._consumer):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.stop()
        self._producer = self._consumer = None

    async def _ensure_topic(self) -> None:
        """Create the topic compacted with one partition (one order for every record)."""
        from aiokafka.admin import NewTopic
        from aiokafka.errors import TopicAlreadyExistsError

        admin = clients.admin(self._settings("admin"))
        await admin.start()
        try:
            if self.topic in await admin.list_topics():
                await self._check_compacted(admin)
                return
            with contextlib.suppress(TopicAlreadyExistsError):
                result = await admin.create_topics([NewTopic(
                    self.topic, 1, 1, topic_configs={"cleanup.policy": "compact"})])
                for _, code, *rest in getattr(result, "topic_errors", []):
                    if code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
                        raise errors.store_error(f"cannot create topic {self.topic}: {rest}")
        finally:
            await admin.close()

    async def _check_compacted(self, admin: Any) -> None:
        """Refuse a topic that deletes by time: schemas would vanish (as Confluent refuses)."""
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, self.topic)])
        for response in responses:
            for resource in response.to_object()["resources"]:
                for entry in resource["config_entries"]:
                    if entry["config_names"] == "cleanup.policy" and \
                            "compact" not in str(entry["config_value"]):
                        raise errors.store_error(
                            f"topic {self.topic} has cleanup.policy={entry['config_value']}; "
                            "the schemas topic must be compacted (cleanup.policy=compact), or "
                            "schemas are deleted with old segments")

    async def _read_loop(self) -> None:
        assert self._consumer is not None
        while True:
            try:
                batch = await self._consumer.getmany(self.tp, timeout_ms=200)
                for record in batch.get(self.tp, ()):
                    self.state.apply(record.key, record.value)
                position = await self._consumer.position(self.tp)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broker restart: keep reading, readers wait
                log.warning("reading %s failed, retrying: %s", self.topic, exc)
                await asyncio.sleep(0.5)
                continue
            if position != self.position:
                self.position = position
                async with self._advanced:
                    self._advanced.notify_all()

    async def sync(self, timeout: float = 30) -> None:
        """Until every record committed to the topic before this call has been applied."""
        assert self._consumer is not None
        try:
            end = (await self._consumer.end_offsets([self.tp]))[self.tp]

            async def reached() -> None:
                async with self._advanced:
                    await self._advanced.wait_for(lambda: self.position >= end)

            await asyncio.wait_for(reached(), timeout)
        except (TimeoutError, KafkaError) as exc:
            raise errors.RegistryError(500, 50002, f"reading {self.topic} timed out: "
                                                   f"{exc or 'no progress'}") from None

    async def _writer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = clients.producer(
                self._settings("producer"), acks="all", enable_idempotence=True,
                transactional_id=f"schema-registry-{self.topic}")
            await producer.start()  # InitProducerId: fences the previous writer
            self._producer = producer
        return self._producer

    async def write(self, build: Callable[[State], tuple[Records, T]]) -> T:
        """Run ``build`` on fresh state and commit the records it returns, as the only writer.

        ``build`` may raise a RegistryError (nothing is written); it may run more than once.
        """
        async with self._write_lock:
            for attempt in range(20):
                producer = await self._writer()
                await self.sync()
                records, result = build(self.state)
                if not records:
                    return result
                try:
                    async with producer.transaction():
                        futures = [await producer.send(self.topic, key=encode(k), value=encode(v),
                                                       partition=0) for k, v in records]
                        for fut in futures:
                            await fut
                except KafkaError as exc:  # fenced by another registry, or a broker hiccup
                    log.info("write to %s failed (%s): retrying with a new producer",
                             self.topic, exc)
                    with contextlib.suppress(Exception):
                        await producer.stop()
                    self._producer = None
                    # Two registries fencing each other in turn could livelock: back off a
                    # random, growing while before taking the epoch back.
                    await asyncio.sleep(random.uniform(0, 0.01 * (attempt + 1)))
                    continue
                await self.sync()
                return result
            raise errors.store_error(f"could not write to {self.topic} after 20 attempts")
