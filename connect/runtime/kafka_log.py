"""A compacted topic read from the beginning into memory, plus a producer to append to it.

The distributed worker keeps connector configs, source offsets and statuses this way (Kafka's
``KafkaBasedLog``): every worker reads every record, so every worker has the same view, and a
writer can wait until its own write has been read back (read-your-writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from connect.runtime import clients
from connect.runtime.offsets import OffsetStore, offset_key, parse_key
from streams.kafka import clients as kafka_clients
from streams.kafka.internals import client_of, fetch_position, list_end_offsets, refresh_metadata

if TYPE_CHECKING:
    from connect.runtime.config import WorkerConfig

log = logging.getLogger("connect.kafkalog")


class KafkaLog:
    def __init__(self, bootstrap: str | WorkerConfig, topic: str,
                 on_records: Callable[[list[Any]], Any],
                 isolation_level: str = "read_uncommitted") -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        # read_committed for source offsets (as Kafka's offset consumers): offsets written in an
        # exactly-once task's aborted transaction must never count.
        self.isolation_level = isolation_level
        self.on_records = on_records
        self.positions: dict[TopicPartition, int] = {}
        self._advanced = asyncio.Condition()
        self._task: asyncio.Task | None = None
        self.consumer: AIOKafkaConsumer | None = None
        self.producer: AIOKafkaProducer | None = None
        self.failed: BaseException | None = None

    async def start(self) -> None:
        self.producer = kafka_clients.producer(clients.base_kwargs(self.bootstrap), acks="all",
                                         enable_idempotence=False)
        await self.producer.start()
        # The producer's client asks the end offsets (read_to_end): its metadata must hold the topic.
        await self.producer.partitions_for(self.topic)
        self.consumer = kafka_clients.consumer(clients.base_kwargs(self.bootstrap),
                                         enable_auto_commit=False, auto_offset_reset="earliest",
                                         isolation_level=self.isolation_level)
        await self.consumer.start()
        partitions = self.consumer.partitions_for_topic(self.topic)
        if not partitions:
            await refresh_metadata(self.consumer)
            partitions = self.consumer.partitions_for_topic(self.topic) or {0}
        tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
        self.consumer.assign(tps)
        await self.consumer.seek_to_beginning(*tps)
        self.positions = dict.fromkeys(tps, 0)
        self._task = asyncio.get_running_loop().create_task(self._loop())
        await self.read_to_end()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self.consumer is not None:
            await self.consumer.stop()
        if self.producer is not None:
            await self.producer.stop()

    async def _loop(self) -> None:
        assert self.consumer is not None
        while True:
            try:
                batch = await self.consumer.getmany(timeout_ms=200)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep reading; a transient broker error must not kill us
                log.warning("reading %s failed, retrying: %s", self.topic, exc)
                await asyncio.sleep(0.5)
                continue
            for tp, records in batch.items():
                if records:
                    try:
                        result = self.on_records(records)
                        if inspect.isawaitable(result):
                            await result
                    except Exception:
                        log.exception("applying records of %s failed", self.topic)
                    self.positions[tp] = records[-1].offset + 1
            advanced = bool(batch)
            # The fetch position also moves past transaction markers and aborted records, which
            # no batch shows: read_to_end's target (the last stable offset) is reached this way.
            for tp in self.positions:
                position = fetch_position(self.consumer, tp)
                if position is not None and position > self.positions[tp]:
                    self.positions[tp] = position
                    advanced = True
            if advanced:
                async with self._advanced:
                    self._advanced.notify_all()

    async def wait_for(self, tp: TopicPartition, offset: int, timeout: float = 30) -> None:
        """Until every record before ``offset`` of ``tp`` has been applied."""
        async def reached() -> None:
            async with self._advanced:
                await self._advanced.wait_for(lambda: self.positions.get(tp, 0) >= offset)

        await asyncio.wait_for(reached(), timeout)

    async def read_to_end(self, timeout: float = 60) -> None:
        """Until every record up to the end offsets asked now has been applied. The end offsets
        are asked on the producer's connection: on the consumer's, the ListOffsets would wait
        behind its fetch, which the broker holds up to fetch.max.wait.ms (500 ms) when no record
        comes, and every task start (reading the offsets topic to its end) would wait with it.
        The isolation level is the consumer's: read_committed stops at the last stable offset."""
        assert self.consumer is not None and self.producer is not None
        level = 1 if self.isolation_level == "read_committed" else 0
        ends = await list_end_offsets(client_of(self.producer), list(self.positions), level)
        for tp, end in ends.items():
            await self.wait_for(tp, end, timeout)

    async def send(self, key: str, value: Any, wait: bool = True) -> None:
        """Append ``key -> value`` (JSON; None = tombstone); with ``wait`` block until read back."""
        assert self.producer is not None
        payload = None if value is None else json.dumps(value, sort_keys=True).encode()
        meta = await self.producer.send_and_wait(self.topic, key=key.encode(), value=payload)
        if wait:
            await self.wait_for(TopicPartition(meta.topic, meta.partition), meta.offset + 1)


class KafkaOffsetStore(OffsetStore):
    """Source offsets in ``offset.storage.topic``: key ``["<connector>", {partition}]``."""

    def __init__(self, bootstrap: str | WorkerConfig, topic: str) -> None:
        super().__init__()
        self.log = KafkaLog(bootstrap, topic, self._apply_records, "read_committed")

    def _apply_records(self, records: list[Any]) -> None:
        with self._lock:
            for record in records:
                if record.key is None or parse_key(record.key) is None:
                    continue
                key = offset_key(*parse_key(record.key))  # type: ignore[misc]
                if record.value is None:
                    self._data.pop(key, None)
                else:
                    try:
                        value = json.loads(record.value)
                    except ValueError:
                        continue
                    if isinstance(value, dict):
                        self._data[key] = value

    async def start(self) -> None:
        await self.log.start()

    async def stop(self) -> None:
        await self.log.stop()

    async def sync(self) -> None:
        await self.log.read_to_end()

    async def put(self, connector: str,
                  offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        items = list(offsets)
        self._apply(connector, items)
        assert self.log.producer is not None
        futures = []
        for partition, offset in items:
            key = offset_key(connector, partition).encode()
            value = None if offset is None else json.dumps(dict(offset), sort_keys=True).encode()
            futures.append(await self.log.producer.send(self.log.topic, key=key, value=value))
        if futures:
            await asyncio.gather(*futures)
