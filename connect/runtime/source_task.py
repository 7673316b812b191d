"""Runs a SourceTask: poll -> transforms -> converters -> producer; offsets after acks.

Source offsets are committed only for a prefix of records that Kafka has acknowledged, in the
order the task returned them, so after a crash the task resumes at or before the first record
that might not have been written: records are never lost (they may repeat after a crash; a clean
stop flushes first, so a clean restart repeats nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
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
from streams.kafka.batching import RecordCollector, hand_over

log = logging.getLogger("connect.source")


def _timestamp(ts: int | None) -> int:
    """A record without a timestamp gets the send time, as the producer would give it."""
    return int(time.time() * 1000) if ts is None else ts


# Kafka's producer default buffer.memory: how many bytes of batches may wait for the producer
# before the task's loop waits (instead of polling more).
DEFAULT_BUFFER_MEMORY = 33_554_432


def _record_metadata(base: RecordMetadata, index: int) -> RecordMetadata:
    """The metadata of the ``index``-th record of a batch whose base metadata is ``base``
    (built directly: ``_replace`` costs several times more, and this runs per record)."""
    return RecordMetadata(base.topic, base.partition, base.topic_partition, base.offset + index,
                          base.timestamp, base.timestamp_type, base.log_start_offset)


def _settle(placeholder: asyncio.Future, future: asyncio.Future) -> None:
    """Pass the producer's outcome of a batch on to the future the task runner holds."""
    if placeholder.done():
        return
    if future.cancelled():
        placeholder.cancel()
    elif future.exception() is not None:
        placeholder.set_exception(future.exception())  # type: ignore[arg-type]
        placeholder.exception()  # reported by _collect_acked; not again when a task is dropped
    else:
        placeholder.set_result(future.result())


class BatchSender:
    """Hands a source task's batches to the producer in the background.

    aiokafka's ``send_batch`` waits until the partition's previous batch went into a request
    (and a broker gets one request at a time), so handing batches over in the task's loop would
    stop it polling for a request round trip per batch. Kafka's ``producer.send()`` instead
    returns at once while its accumulator has room (``buffer.memory``); here batches wait in
    this queue, up to ``limit`` bytes, and the loop polls again meanwhile. Each batch gets a
    future at once (settled with the producer's outcome), so acks are tracked as before.
    """

    def __init__(self, producer: Any, limit: int) -> None:
        self.producer = producer
        self.limit = limit
        self.queue: deque[tuple[tuple[str, int], Any, asyncio.Future, int]] = deque()
        self.queued_bytes = 0
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task | None = None

    def submit(self, batches: list[tuple[tuple[str, int], Any]]
               ) -> list[tuple[tuple[str, int], asyncio.Future, int]]:
        """Queue ``batches`` (in hand-over order); returns (tp, future, record count) each."""
        loop = asyncio.get_running_loop()
        out = []
        for tp, batch in batches:
            future = loop.create_future()
            size = batch.size()
            self.queue.append((tp, batch, future, size))
            self.queued_bytes += size
            out.append((tp, future, batch.record_count()))
        if self.queue:
            self._idle.clear()
            self._wake.set()
            if self.queued_bytes >= self.limit:
                self._room.clear()
            if self._task is None:
                self._task = loop.create_task(self._run(), name="source-batch-sender")
        return out

    async def wait_for_room(self) -> None:
        """Wait while more than ``limit`` bytes are queued (Kafka's send blocking on a full
        buffer.memory)."""
        await self._room.wait()

    async def drained(self) -> None:
        """Wait until every queued batch was handed to the producer."""
        await self._idle.wait()

    async def _run(self) -> None:
        producer = self.producer
        while True:
            await self._wake.wait()
            while self.queue:
                (topic, partition), batch, future, size = self.queue[0]
                try:
                    # Waits for the partition's queue up to the producer's delivery.timeout.ms.
                    sent = await hand_over(producer, batch, topic, partition)
                except Exception as exc:  # noqa: BLE001 - the batch's records see it at ack time
                    if not future.done():
                        future.set_exception(exc)
                        future.exception()  # as in _settle
                else:
                    sent.add_done_callback(functools.partial(_settle, future))
                self.queue.popleft()
                self.queued_bytes -= size
                if self.queued_bytes < self.limit:
                    self._room.set()
            self._wake.clear()
            self._idle.set()

    async def close(self) -> None:
        """Stop handing over; batches not handed over yet are never acked (never committed)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        while self.queue:
            self.queue.popleft()[2].cancel()
        self._room.set()
        self._idle.set()


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
        self.sender: BatchSender | None = None  # None: batches handed over in the loop
        self._commit_record: Any = None
        self._committing: asyncio.Task | None = None  # the offsets write in progress

    # Hand a poll's full batches to the sender as they fill, not once the whole poll is
    # converted: worth it where the loop waits for them to be delivered (a transaction's commit).
    hand_over_while_converting = False

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
        started = False
        try:
            self.sender = self._make_sender()
            await self._open_offsets(parsed.get(OFFSETS_TOPIC))
            view = self.offsets
            reader = OffsetStorageReader(lambda p: view.get(name, p))
            task.initialize(SourceTaskContext(dict(self.task_config), reader,
                                              self._transaction_context()))
            await self.call(task.start, dict(self.task_config))
            started = True
            self.running()
            await self._loop(task, chain, converters, errors)
        finally:
            try:
                await self._final_flush(task)
            finally:
                if started and not self.stopping:
                    await self._stop_failed(task)
                chain.close()
                if self.sender is not None:
                    await self.sender.close()
                await clients.close_producer(self.producer)
                if self.offsets is not None:
                    await self.offsets.close()

    async def _stop_failed(self, task: SourceTask) -> None:
        """A task that failed by itself is stopped too (Kafka's close() calls stop() on a started
        task once), so it closes what it opened (a MirrorSourceTask's consumer and producer).
        A stop asked for from outside has called it already."""
        if self.task_stopped:
            return
        self.task_stopped = True
        timeout = self.env.worker.task_shutdown_graceful_timeout_ms / 1000
        try:
            await asyncio.wait_for(self.call(task.stop), timeout)
        except Exception as exc:  # noqa: BLE001 - the task failed already; this is its clean-up
            log.error("task %s: stop() after its failure failed: %r", self.id, exc)

    def _make_producer(self) -> Any:
        return clients.producer(
            self.env.worker.bootstrap_servers, _client_overrides(self, "producer"),
            client_id=f"connector-producer-{self.id}")

    def _make_sender(self) -> BatchSender | None:
        """Batches go to the producer in the background, at most ``producer.buffer.memory``
        bytes of them waiting (exactly-once tasks hand them over in the loop instead: a
        transaction commits what was handed over)."""
        raw = _client_overrides(self, "producer").get("buffer.memory", DEFAULT_BUFFER_MEMORY)
        try:
            limit = int(raw)
        except ValueError:
            raise ConfigException(f"Invalid value {raw} for configuration buffer.memory: "
                                  "Not a number of type LONG") from None
        if limit < 0:
            raise ConfigException(f"Invalid value {raw} for configuration buffer.memory: "
                                  "Value must be at least 0")
        return BatchSender(self.producer, limit)

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
            # commit_record as acks arrive (Kafka calls it from the producer's callback); the
            # offsets of the acked prefix wait for the next offset flush.
            self._collect_acked()
            committing = self._committing
            if committing is not None and committing.done():
                self._committing = None
                committing.result()  # a failed offsets write fails the task
                if not self.abandoned:
                    await self.call(task.commit)
            if time.monotonic() >= next_flush and self._committing is None:
                # Written in the background (Kafka commits source offsets on a thread of its
                # own), so polling goes on while the offsets topic acks; task.commit() follows
                # in this loop, between polls, once they are stored.
                self._committing = asyncio.ensure_future(self._put_offsets())
                next_flush = time.monotonic() + flush_every

    async def _send_all(self, records: list, chain: Any, converters: Any,
                        errors: ErrorHandler) -> int:
        """Convert a poll's records into per-partition batches, hand them to the producer, and
        queue each record with the future of the batch it went into (acks are checked later).
        Returns how many were handed to the producer (the others were dropped)."""
        early = self.hand_over_while_converting and self.sender is not None
        placed, handed = await self._convert_all(records, chain, converters, errors, early)
        return await self._hand_over_converted(placed, handed)

    async def _convert_all(self, records: list, chain: Any, converters: Any,
                           errors: ErrorHandler, early: bool, yield_every: int = 0
                           ) -> tuple[list[tuple[Any, tuple[str, int] | None]],
                                      list[tuple[tuple[str, int], asyncio.Future, int]]]:
        """Convert records into the collector's batches: (record, its partition or None when
        dropped) each, and the batches handed to the sender on the way. ``early``: a batch
        that fills up goes to the sender at once (and the loop lets it go out); otherwise
        nothing is handed over here. ``yield_every`` records the loop lets other tasks run
        (a commit going on beside the conversion)."""
        placed: list[tuple[Any, tuple[str, int] | None]] = []
        collector, sender = self.collector, self.sender
        handed: list[tuple[tuple[str, int], asyncio.Future, int]] = []
        for i, record in enumerate(records):
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
            placed.append((record, collector.send(topic, key, value, timestamp, headers,
                                                  partition)))
            if early:
                if collector.has_closed_batches():
                    # A batch filled up: it goes out while the rest of the poll is converted.
                    handed.extend(sender.submit(collector.take_closed()))
                    await asyncio.sleep(0)
            elif yield_every and i % yield_every == yield_every - 1:
                await asyncio.sleep(0)
        return placed, handed

    async def _hand_over_converted(self, placed: list[tuple[Any, tuple[str, int] | None]],
                                   handed: list[tuple[tuple[str, int], asyncio.Future, int]],
                                   start_sending: bool = False) -> int:
        """Hand the collector's batches over (after ``handed``, those given to the sender
        already) and queue each placed record with its batch's future; returns how many
        records went to the producer. ``start_sending``: let the sender start on them before
        the records are queued (a transaction waits for them)."""
        batches: dict[tuple[str, int], deque[tuple[asyncio.Future, int]]] = {}
        handed = handed + await self._hand_over()
        if start_sending and self.sender is not None:
            await asyncio.sleep(0)
        for tp, future, count in handed:
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
        if self.sender is not None:
            await self.sender.wait_for_room()
        return sent

    async def _hand_over(self) -> list[tuple[tuple[str, int], asyncio.Future, int]]:
        """The collector's batches, handed to the producer (or queued for the sender):
        ((topic, partition), future of the batch's base metadata, record count) in order."""
        if self.sender is None:
            await self.collector.flush()
            return self.collector.take_in_flight()
        return self.sender.submit(self.collector.take_batches())

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
        present = out._headers  # noqa: SLF001 - None or empty for most records: no copy made
        headers = [(h.key, converters.header.from_connect_header(topic, h.key, h.schema,
                                                                 h.value))
                   for h in present] if present else None
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
        """Move the acknowledged prefix of outstanding records into the offsets to commit
        (and tell the task, ``commit_record``). Runs per record: a batch's outcome is looked
        at once for all of its records."""
        outstanding, acked, commit_record = self.outstanding, self.acked, self._commit_record
        key_of = self._key_of
        last: Any = None
        base: Any = None
        failed: BaseException | None = None
        written = 0
        try:
            while outstanding:
                record, future, index = outstanding[0]
                metadata = None
                if future is not None:
                    if future is not last:
                        if not future.done() or future.cancelled():
                            break  # cancelled: never handed over, so never acked
                        last = future
                        failed = future.exception()
                        base = None if failed is not None else future.result()
                    if failed is not None:
                        errors = self._errors
                        if errors is None or not errors.config.tolerate_all:
                            raise failed
                        log.error("task %s: failed to send a record, skipped: %s", self.id,
                                  failed)
                    else:
                        written += 1
                        if commit_record is not None:
                            metadata = _record_metadata(base, index)
                outstanding.popleft()
                partition, offset = record.source_partition, record.source_offset
                if partition is not None and offset is not None:
                    acked[key_of(partition)] = (partition, offset)
                if commit_record is not None:
                    commit_record(record, metadata)
        finally:
            self.records_written += written

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

    async def _put_offsets(self) -> None:
        """Store the offsets of the records acked so far (one write at a time)."""
        if self.acked:
            batch, self.acked = list(self.acked.values()), {}
            assert self.offsets is not None
            try:
                await self.offsets.put(self.id.connector, batch)
            except BaseException:
                self.commits_failed += 1
                raise
            self.commits_ok += 1

    async def commit_offsets(self, task: SourceTask) -> None:
        """Store every acked offset now (after any write in progress), then ``task.commit()``."""
        committing, self._committing = self._committing, None
        if committing is not None:
            await committing
        self._collect_acked()
        await self._put_offsets()
        if not self.abandoned:
            await self.call(task.commit)

    async def _drain(self) -> None:
        """Every batch handed to the producer and delivered (or failed)."""
        if self.sender is not None:
            await self.sender.drained()
        await self.producer.flush()

    async def _final_flush(self, task: SourceTask) -> None:
        if self.producer is None:
            return
        try:
            timeout = max(self.env.worker.offset_flush_timeout_ms / 1000, 1.0)
            if not self.abandoned:  # abandoned: commit what is acked, close at once
                await asyncio.wait_for(self._drain(), timeout)
        except Exception as exc:
            log.error("task %s: producer flush failed at stop: %s", self.id, exc)
        await self.commit_offsets(task)
