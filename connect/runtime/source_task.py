"""Runs a SourceTask: poll -> transforms -> converters -> producer; offsets after acks.

Source offsets are committed only for a prefix of records that Kafka has acknowledged, in the
order the task returned them, so after a crash the task resumes at or before the first record
that might not have been written: records are never lost (they may repeat after a crash; a clean
stop flushes first, so a clean restart repeats nothing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

from aiokafka.structs import RecordMetadata

from connect.api import OffsetStorageReader, SourceTask, SourceTaskContext
from connect.config_def import ConfigException
from connect.runtime import clients
from connect.runtime.config import OFFSETS_TOPIC, connector_config_def, override_errors
from connect.runtime.errors import ErrorConfig, ErrorHandler, Stage
from connect.runtime.offsets import offset_key
from connect.runtime.source_offsets import ConnectorOffsets
from connect.runtime.task_runner import TaskRunner
from connect.runtime.task_support import build_converters
from streams.kafka.batching import RecordCollector

log = logging.getLogger("connect.source")


def _timestamp(ts: int | None) -> int:
    """A record without a timestamp gets the send time, as the producer would give it."""
    return int(time.time() * 1000) if ts is None else ts


def _record_metadata(base: RecordMetadata, index: int) -> RecordMetadata:
    """The metadata of the ``index``-th record of a batch whose base metadata is ``base``."""
    return base._replace(offset=base.offset + index)


def _parse_connector_config(config: dict[str, str], kind: str) -> dict[str, Any]:
    definition = connector_config_def(kind)
    return definition.parse({k: v for k, v in config.items() if k in definition.names()})


def _client_overrides(runner: TaskRunner, client: str) -> dict[str, str]:
    """The worker's ``<client>.*`` keys, then the connector's ``<client>.override.*`` ones
    (checked against connector.client.config.override.policy, as Kafka's Worker does)."""
    problems = override_errors(runner.env.worker.connector_client_config_override_policy,
                               runner.connector_config)
    if problems:
        raise ConfigException(" ".join(problems))
    merged = {k: v for k, v in runner.env.worker.prefixed(f"{client}.").items()
              if not k.startswith("override.")}
    prefix = f"{client}.override."
    merged.update({k[len(prefix):]: v for k, v in runner.connector_config.items()
                   if k.startswith(prefix)})
    return merged


class WorkerSourceTask(TaskRunner):
    # Metrics (source-task-metrics, read on scrape): plain counters, bumped per batch.
    records_polled = records_written = commits_ok = commits_failed = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (record, future of its batch or None when dropped, index of the record in the batch)
        self.outstanding: deque[tuple[Any, asyncio.Future | None, int]] = deque()
        self.collector: Any = None
        self._topics: set[str] = set()
        self.acked: dict[str, tuple[dict, dict]] = {}
        self.producer: Any = None
        self._errors: ErrorHandler | None = None
        self._key_cache: dict[int, tuple[dict, dict, str]] = {}
        self.offsets: ConnectorOffsets | None = None

    async def execute(self) -> None:
        from connect.transforms import TransformationChain

        name = self.id.connector
        parsed = _parse_connector_config(self.connector_config, "source")
        converters = build_converters(self.env.worker, self.connector_config)
        chain = TransformationChain.from_config(self.connector_config)
        errors = ErrorHandler(ErrorConfig.from_parsed(parsed), name, self.id.task)
        self._errors = errors
        await self._before_producer()
        self.producer = self._make_producer()
        task: SourceTask = self.task_class()
        if not isinstance(task, SourceTask):
            raise ConfigException(f"{self.task_class.__name__} is not a SourceTask")
        self.task = task
        self.version = str(await self.call(task.version))
        await self.producer.start()
        self.collector = RecordCollector(self.producer, {},
                                         max_request_size=getattr(self.producer, "_max_request_size",
                                                                  1_048_576))
        try:
            await self._open_offsets(parsed.get(OFFSETS_TOPIC))
            view = self.offsets
            reader = OffsetStorageReader(lambda p: view.get(name, p))
            task.initialize(SourceTaskContext(dict(self.task_config), reader,
                                              self._transaction_context()))
            await self.call(task.start, dict(self.task_config))
            self.running()
            await self._loop(task, chain, converters, errors)
        finally:
            try:
                await self._final_flush(task)
            finally:
                chain.close()
                await self.producer.stop()
                if self.offsets is not None:
                    await self.offsets.close()

    def _make_producer(self) -> Any:
        return clients.producer(
            self.env.worker.bootstrap_servers, _client_overrides(self, "producer"),
            client_id=f"connector-producer-{self.id}")

    async def _before_producer(self) -> None:
        """Exactly-once tasks fence their connector's older task generation here."""

    def _transaction_context(self) -> Any:
        return None

    async def _open_offsets(self, topic: str | None) -> None:
        """The connector's offsets: its own ``offsets.storage.topic`` (read to its end) in front
        of the worker's store, or the worker's store alone (caught up with other workers)."""
        self.offsets = await ConnectorOffsets.open(self.env.worker, self.env.offsets, topic)

    async def _loop(self, task: SourceTask, chain: Any, converters: Any,
                    errors: ErrorHandler) -> None:
        flush_every = self.env.worker.offset_flush_interval_ms / 1000
        next_flush = time.monotonic() + flush_every
        wants_commit_record = type(task).commit_record is not SourceTask.commit_record
        self._commit_record = task.commit_record if wants_commit_record else None
        while not self.stopping:
            await self.wait_resumed()
            if self.stopping:
                break
            records = await self.call(task.poll)
            if records:
                self.records_polled += len(records)
                await self._send_all(records, chain, converters, errors)
            elif not self.stopping:
                await asyncio.sleep(0.01)  # a poll that returns at once must not spin the loop
            if time.monotonic() >= next_flush:
                await self.commit_offsets(task)
                next_flush = time.monotonic() + flush_every

    async def _send_all(self, records: list, chain: Any, converters: Any,
                        errors: ErrorHandler) -> int:
        """Convert a poll's records into per-partition batches, hand them to the producer, and
        queue each record with the future of the batch it went into (acks are checked later).
        Returns how many were handed to the producer (the others were dropped)."""
        placed: list[tuple[Any, tuple[str, int] | None]] = []
        for record in records:
            # Fast path: synchronous, no per-stage bookkeeping. Any exception redoes the record
            # stage by stage in _convert_slow, where retries, tolerance and error reporting apply.
            try:
                converted = self._convert(record, chain, converters)
            except Exception:
                converted = await self._convert_slow(record, chain, converters, errors)
            if converted is None:
                placed.append((record, None))
                continue
            topic, key, value, partition, timestamp, headers = converted
            if topic not in self._topics:
                await self._learn_topic(topic)
            placed.append((record, self.collector.send(topic, key, value, timestamp, headers,
                                                       partition)))
        await self.collector.flush()
        batches: dict[tuple[str, int], deque[tuple[asyncio.Future, int]]] = {}
        for tp, future, count in self.collector.take_in_flight():
            batches.setdefault(tp, deque()).append((future, count))
        used: dict[tuple[str, int], int] = {}
        outstanding = self.outstanding
        sent = 0
        for record, tp in placed:
            if tp is None:
                outstanding.append((record, None, 0))
                continue
            sent += 1
            index = used.get(tp, 0)
            queue = batches[tp]
            future, count = queue[0]
            if index == count - 1:  # the batch's last record: the next one opens the next batch
                queue.popleft()
                used[tp] = 0
            else:
                used[tp] = index + 1
            outstanding.append((record, future, index))
        return sent

    async def _learn_topic(self, topic: str) -> None:
        """Fetch the topic's partition count once, so ``send`` partitions without waiting."""
        self.collector.counts[topic] = len(await self.producer.partitions_for(topic))
        self._topics.add(topic)
        self.env.on_topic(self.id.connector, topic)

    @staticmethod
    def _convert(record: Any, chain: Any, converters: Any) -> tuple | None:
        out = chain.apply(record)
        if out is None:
            return None
        topic = out.topic
        key = converters.key.from_connect_data(topic, out.key_schema, out.key)
        value = converters.value.from_connect_data(topic, out.value_schema, out.value)
        headers = [(h.key, converters.header.from_connect_header(topic, h.key, h.schema,
                                                                 h.value))
                   for h in out.headers] if len(out.headers) else None
        return topic, key, value, out.kafka_partition, _timestamp(out.timestamp), headers

    async def _convert_slow(self, record: Any, chain: Any, converters: Any,
                            errors: ErrorHandler) -> tuple | None:
        ok, out = await errors.run(Stage.TRANSFORMATION, chain, chain.apply, record)
        if not ok or out is None:
            return None
        topic = out.topic
        ok, key = await errors.run(Stage.KEY_CONVERTER, converters.key,
                                   converters.key.from_connect_data, topic, out.key_schema, out.key)
        if not ok:
            return None
        ok, value = await errors.run(Stage.VALUE_CONVERTER, converters.value,
                                     converters.value.from_connect_data, topic, out.value_schema,
                                     out.value)
        if not ok:
            return None
        headers = []
        for header in out.headers:
            ok, raw = await errors.run(Stage.HEADER_CONVERTER, converters.header,
                                       converters.header.from_connect_header, topic, header.key,
                                       header.schema, header.value)
            if not ok:
                return None
            headers.append((header.key, raw))
        return (topic, key, value, out.kafka_partition, _timestamp(out.timestamp),
                headers or None)

    def _collect_acked(self) -> None:
        """Move the acknowledged prefix of outstanding records into the offsets to commit."""
        while self.outstanding:
            record, future, index = self.outstanding[0]
            metadata = None
            if future is not None:
                if not future.done():
                    break
                exc = future.exception()
                if exc is not None:
                    errors = self._errors
                    if errors is None or not errors.config.tolerate_all:
                        raise exc
                    log.error("task %s: failed to send a record, skipped: %s", self.id, exc)
                else:
                    self.records_written += 1
                    if self._commit_record is not None:
                        metadata = _record_metadata(future.result(), index)
            self.outstanding.popleft()
            partition, offset = record.source_partition, record.source_offset
            if partition is not None and offset is not None:
                self.acked[self._key_of(partition)] = (partition, offset)
            if self._commit_record is not None:
                self._commit_record(record, metadata)

    def _key_of(self, partition: dict) -> str:
        """The offset key; tasks usually reuse one partition dict, so cache by identity."""
        cached = self._key_cache.get(id(partition))
        if cached is not None and cached[0] is partition and cached[1] == partition:
            return cached[2]
        if len(self._key_cache) > 10_000:
            self._key_cache.clear()
        key = offset_key(self.id.connector, partition)
        self._key_cache[id(partition)] = (partition, dict(partition), key)
        return key

    async def commit_offsets(self, task: SourceTask) -> None:
        self._collect_acked()
        if self.acked:
            batch, self.acked = list(self.acked.values()), {}
            assert self.offsets is not None
            try:
                await self.offsets.put(self.id.connector, batch)
            except BaseException:
                self.commits_failed += 1
                raise
            self.commits_ok += 1
        if not self.abandoned:
            await self.call(task.commit)

    async def _final_flush(self, task: SourceTask) -> None:
        if self.producer is None:
            return
        try:
            timeout = max(self.env.worker.offset_flush_timeout_ms / 1000, 1.0)
            if not self.abandoned:  # abandoned: commit what is acked, close at once
                await asyncio.wait_for(self.producer.flush(), timeout)
        except Exception as exc:
            log.error("task %s: producer flush failed at stop: %s", self.id, exc)
        self._commit_record = getattr(self, "_commit_record", None)
        await self.commit_offsets(task)
