"""Runs a SinkTask: consumer group ``connect-<name>`` -> converters -> transforms -> put.

Offsets are committed only as far as ``pre_commit`` (by default: ``flush`` then everything put)
says the task has durably written, using each record's *original* topic/partition/offset.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from bisect import bisect_left
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from aiokafka import ConsumerRebalanceListener
from aiokafka.structs import TopicPartition

from connect.api import (
    ErrantRecordReporter,
    RetriableException,
    SinkTask,
    SinkTaskContext,
)
from connect.config_def import ConfigException
from connect.converters.base import to_connect_batch
from connect.data import SchemaAndValue
from connect.records import ConnectHeaders, Header, SinkRecord, SinkRecordBatch, TimestampType
from connect.runtime import clients
from connect.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorConfig,
    ErrorHandler,
    Stage,
    ToleranceExceeded,
)
from connect.runtime.source_task import _client_overrides, _parse_connector_config
from connect.runtime.task_runner import TaskRunner
from connect.runtime.task_support import build_converters

log = logging.getLogger("connect.sink")
_OFFSET = attrgetter("offset")

_TS_TYPES = {0: TimestampType.CREATE_TIME, 1: TimestampType.LOG_APPEND_TIME}
_FAILED: Any = object()  # schema of a key or value whose conversion raised (redone in _convert)


def _try(convert: Callable[[str, Any], SchemaAndValue], topic: str, raw: Any) -> Any:
    try:
        return convert(topic, raw)
    except Exception:
        return (_FAILED, None)


def _find_message(batch: dict[TopicPartition, list[Any]], topic: str, partition: int,
                  offset: int) -> Any:
    """The consumed message at ``offset`` in ``batch`` (offset-ordered per partition), or None."""
    messages = batch.get(TopicPartition(topic, partition)) or []
    i = bisect_left(messages, offset, key=_OFFSET)
    if i < len(messages) and messages[i].offset == offset:
        return messages[i]
    return None


class _Listener(ConsumerRebalanceListener):
    def __init__(self, runner: WorkerSinkTask) -> None:
        self.runner = runner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.runner.partitions_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.runner.partitions_assigned(list(assigned))


class WorkerSinkTask(TaskRunner):
    interrupt_on_stop = False
    # Metrics (sink-task-metrics, read on scrape): plain counters, bumped per batch.
    records_read = records_sent = commits_ok = commits_failed = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current: dict[TopicPartition, int] = {}
        self.consumer: Any = None
        self.lock = asyncio.Lock()
        self.raw_batch: dict[TopicPartition, list[Any]] = {}
        self.fatal: BaseException | None = None
        self.context: SinkTaskContext | None = None
        self.started = False

    async def execute(self) -> None:
        from connect.transforms import TransformationChain

        name = self.id.connector
        parsed = _parse_connector_config(self.connector_config, "sink")
        self.converters = build_converters(self.env.worker, self.connector_config)
        self.chain = TransformationChain.from_config(self.connector_config)
        error_config = ErrorConfig.from_parsed(parsed)
        self.dlq_producer = None
        dlq = None
        if error_config.dlq_topic:
            await clients.ensure_topic(self.env.worker, error_config.dlq_topic,
                                       1, error_config.dlq_replication_factor,
                                       overrides=_client_overrides(self, "admin"))
            self.dlq_producer = clients.producer(self.env.worker.bootstrap_servers,
                                                 _client_overrides(self, "producer"))
            await self.dlq_producer.start()
            dlq = DeadLetterQueueReporter(self.dlq_producer, error_config, name, self.id.task)
        self.errors = ErrorHandler(error_config, name, self.id.task, dlq)
        task = self.task_class()
        if not isinstance(task, SinkTask):
            raise ConfigException(f"{self.task_class.__name__} is not a SinkTask")
        self.task = task
        self.version = str(await self.call(task.version))
        reporter = ErrantRecordReporter(self._report_errant) if (
            error_config.dlq_topic or error_config.tolerate_all) else None
        self.context = SinkTaskContext(dict(self.task_config), reporter)
        self.consumer = clients.consumer(
            self.env.worker.bootstrap_servers, _client_overrides(self, "consumer"),
            group_id=f"connect-{name}", client_id=f"connector-consumer-{self.id}")
        topics = [t for t in parsed.get("topics") or [] if t]
        try:
            task.initialize(self.context)
            await self.call(task.start, dict(self.task_config))
            self.started = True
            listener = _Listener(self)
            if topics:
                self.consumer.subscribe(topics, listener=listener)
            else:
                self.consumer.subscribe(pattern=re.compile(parsed["topics.regex"]).pattern,
                                        listener=listener)
            await self.consumer.start()
            self.running()
            await self._loop()
            async with self.lock:
                await self._commit(final=True)
        finally:
            try:
                if self.started and not self.abandoned:
                    await self.call(task.stop)
            finally:
                self.chain.close()
                await self.consumer.stop()
                if self.dlq_producer is not None:
                    await clients.close_producer(self.dlq_producer)

    async def on_pause(self) -> None:
        if self.consumer is not None:
            self.consumer.pause(*self.consumer.assignment())

    async def on_resume(self) -> None:
        if self.consumer is not None:
            paused = self.context.paused if self.context else set()
            self.consumer.resume(*[tp for tp in self.consumer.assignment() if tp not in paused])

    async def _loop(self) -> None:
        flush_every = self.env.worker.offset_flush_interval_ms / 1000
        next_commit = time.monotonic() + flush_every
        while not self.stopping:
            await self.wait_resumed()
            if self.stopping:
                break
            self._apply_context_requests()
            batch = await self.consumer.getmany(timeout_ms=200)
            if batch:
                async with self.lock:
                    await self._deliver_batch(batch)
            if self.fatal is not None:
                raise self.fatal
            if time.monotonic() >= next_commit or (self.context and self.context.commit_requested):
                async with self.lock:
                    await self._commit()
                next_commit = time.monotonic() + flush_every

    def _apply_context_requests(self) -> None:
        ctx = self.context
        assert ctx is not None
        assigned = self.consumer.assignment()
        for tp, offset in list(ctx.rewinds.items()):
            if tp in assigned:
                self.consumer.seek(tp, offset)
                self.current[tp] = offset
        ctx.rewinds.clear()
        to_pause = [tp for tp in assigned if tp in ctx.paused]
        if to_pause:
            self.consumer.pause(*to_pause)
        to_resume = [tp for tp in self.consumer.paused() if tp not in ctx.paused and tp in assigned]
        if to_resume and not self.paused:
            self.consumer.resume(*to_resume)

    async def _deliver_batch(self, batch: dict[TopicPartition, list[Any]]) -> None:
        self.raw_batch = batch  # what the errant reporter looks raw messages up in
        self.records_read += sum(len(messages) for messages in batch.values())
        next_offsets: dict[TopicPartition, int] = {}
        for tp, messages in batch.items():
            if messages:
                self.env.on_topic(self.id.connector, tp.topic)
                next_offsets[tp] = messages[-1].offset + 1
        columns = self._columns(batch) if self.columnar else None
        if columns is not None:
            await self._put(self.task.put_batches, columns)
            self.records_sent += sum(len(column) for column in columns)
        else:
            records: list[SinkRecord] = []
            for tp, messages in batch.items():
                if messages:
                    await self._convert_all(tp.topic, messages, records)
            await self._put(self.task.put, records)
            self.records_sent += len(records)
        self.current.update(next_offsets)

    @property
    def columnar(self) -> bool:
        """Records go to ``put_batches`` as columns: the task takes them so, and no transform
        needs them one by one (see :meth:`_columns`)."""
        return type(self.task).put_batches is not SinkTask.put_batches and not self.chain.stages

    def _columns(self, batch: dict[TopicPartition, list[Any]]) -> list[SinkRecordBatch] | None:
        """The fetch as one column batch per partition; None if any record needs the per-record
        path (headers, a converter failing, a negative timestamp), which then takes them all."""
        conv = self.converters
        out: list[SinkRecordBatch] = []
        for tp, messages in batch.items():
            if not messages:
                continue
            timestamps = [m.timestamp for m in messages]
            try:
                negative = min(timestamps) < 0
            except TypeError:  # None (no timestamp) among them
                negative = any(t is not None and t < 0 for t in timestamps)
            if negative or any(m.headers for m in messages):
                return None
            try:
                key_schemas, keys = to_connect_batch(conv.key, tp.topic, [m.key for m in messages])
                value_schemas, values = to_connect_batch(conv.value, tp.topic,
                                                         [m.value for m in messages])
            except Exception:
                return None
            ts_types, no_ts = _TS_TYPES, TimestampType.NO_TIMESTAMP_TYPE
            out.append(SinkRecordBatch(
                tp.topic, tp.partition, [m.offset for m in messages], timestamps,
                [ts_types.get(m.timestamp_type, no_ts) for m in messages],
                key_schemas, keys, value_schemas, values))
        return out

    async def _convert_all(self, topic: str, messages: list[Any], out: list[SinkRecord]) -> None:
        """Convert and transform one partition's messages, in order, into ``out``.

        Fast path: keys and values converted a whole fetch at a time, records built without
        per-stage bookkeeping. A message with headers, or one whose conversion or transform raises,
        is redone alone by :meth:`_convert`, where retries, tolerance and the DLQ apply.
        """
        key_schemas, keys, value_schemas, values = self._convert_keys_values(topic, messages)
        chain = self.chain
        apply = chain.apply if chain.stages else None
        make, ts_types, no_ts = SinkRecord._consumed, _TS_TYPES, TimestampType.NO_TIMESTAMP_TYPE
        append = out.append
        for msg, key_schema, key, value_schema, value in zip(
                messages, key_schemas, keys, value_schemas, values, strict=True):
            record: SinkRecord | None = None
            slow = msg.headers or key_schema is _FAILED or value_schema is _FAILED
            if not slow:
                try:
                    record = make(topic, msg.partition, key_schema, key, value_schema, value,
                                  msg.offset, msg.timestamp, ts_types.get(msg.timestamp_type, no_ts))
                    if apply is not None:
                        record = apply(record)  # type: ignore[assignment]
                except Exception:
                    slow = True
            if slow:  # outside the except block, so a reported error has no unrelated context
                record = await self._convert(msg)
            if record is not None:
                append(record)

    def _convert_keys_values(self, topic: str, messages: list[Any]) -> tuple[list[Any], ...]:
        """Key schemas, keys, value schemas and values of ``messages`` (parallel lists; the schema
        is ``_FAILED`` where conversion raised). One call per converter for the whole batch; value
        by value only when that call fails."""
        conv = self.converters
        try:
            return (*to_connect_batch(conv.key, topic, [m.key for m in messages]),
                    *to_connect_batch(conv.value, topic, [m.value for m in messages]))
        except Exception:
            pass
        keys = [_try(conv.key.to_connect_data, topic, m.key) for m in messages]
        values = [_try(conv.value.to_connect_data, topic, m.value) for m in messages]
        return ([k[0] for k in keys], [k[1] for k in keys],
                [v[0] for v in values], [v[1] for v in values])

    async def _convert(self, msg: Any) -> SinkRecord | None:
        conv, errors = self.converters, self.errors
        ok, key = await errors.run(Stage.KEY_CONVERTER, conv.key, conv.key.to_connect_data,
                                   msg.topic, msg.key, raw=msg)
        if not ok:
            return None
        ok, value = await errors.run(Stage.VALUE_CONVERTER, conv.value,
                                     conv.value.to_connect_data, msg.topic, msg.value, raw=msg)
        if not ok:
            return None
        headers = ConnectHeaders()
        for hkey, hvalue in msg.headers or ():
            ok, sv = await errors.run(Stage.HEADER_CONVERTER, conv.header,
                                      conv.header.to_connect_header, msg.topic, hkey, hvalue,
                                      raw=msg)
            if not ok:
                return None
            headers.add_header(Header(hkey, sv.schema, sv.value))
        record = SinkRecord(msg.topic, msg.partition, key.schema, key.value, value.schema,
                            value.value, msg.offset, msg.timestamp,
                            _TS_TYPES.get(msg.timestamp_type, TimestampType.NO_TIMESTAMP_TYPE),
                            headers)
        ok, out = await errors.run(Stage.TRANSFORMATION, self._transform_name, self.chain.apply,
                                   record, raw=msg)
        return out if ok else None

    @property
    def _transform_name(self) -> str:
        return "connect.transforms.TransformationChain"

    async def _put(self, put: Callable[[Any], Any], records: list[Any]) -> None:
        """``put`` (or ``put_batches``) the delivery; on RetriableException back off
        (``context.timeout``) and deliver it again."""
        assert self.context is not None
        while True:
            try:
                await self.call(put, records)
                return
            except RetriableException as exc:
                wait = (self.context.timeout_ms or 0) / 1000
                self.context.timeout_ms = None
                log.warning("task %s: retriable error from put, redelivering in %.3fs: %s",
                            self.id, wait, exc)
                assignment = self.consumer.assignment()
                self.consumer.pause(*assignment)
                try:
                    deadline = time.monotonic() + wait
                    while not self.stopping and time.monotonic() < deadline:
                        await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                finally:
                    if not self.paused:
                        self.consumer.resume(*[tp for tp in assignment
                                               if tp not in self.context.paused])
                if self.stopping:
                    raise

    async def _commit(self, final: bool = False, only: list[TopicPartition] | None = None) -> None:
        if self.context is not None:
            self.context.commit_requested = False
        if not self.current or self.task is None:
            return
        current = {tp: o for tp, o in self.current.items() if only is None or tp in only}
        if not current:
            return
        offsets = await self.call(self.task.pre_commit, dict(current))
        to_commit = {TopicPartition(*tp): int(o) for tp, o in (offsets or {}).items()
                     if TopicPartition(*tp) in current}
        if to_commit:
            try:
                await self.consumer.commit(to_commit)
                self.commits_ok += 1
            except Exception as exc:
                self.commits_failed += 1
                if final:
                    log.error("task %s: final offset commit failed: %s", self.id, exc)
                else:
                    log.warning("task %s: offset commit failed, will retry: %s", self.id, exc)

    async def partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        if not self.started or not revoked or self.abandoned:
            return
        async with self.lock:
            await self._commit(only=revoked)
            await self.call(self.task.close, revoked)
        for tp in revoked:
            self.current.pop(tp, None)
        if self.context is not None:
            self.context._assignment -= set(revoked)

    async def partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        if not self.started or self.abandoned:
            return
        if self.context is not None:
            self.context._assignment |= set(assigned)
        await self.call(self.task.open, assigned)
        if self.paused and assigned:
            self.consumer.pause(*assigned)

    # -- errant record reporter (called from put, maybe in another thread) ---------------------
    def _report_errant(self, record: SinkRecord, error: BaseException) -> Any:
        loop = self._loop_ref

        async def report() -> None:
            raw = _find_message(self.raw_batch, record.original_topic,
                                record.original_kafka_partition, record.original_kafka_offset)
            try:
                await self.errors.report(Stage.TASK_PUT, self.task_class, error, raw)
                if not self.errors.config.tolerate_all:
                    raise ToleranceExceeded("Tolerance exceeded in error handler") from error
            except BaseException as exc:
                self.fatal = exc
                raise

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return loop.create_task(report())
        return asyncio.run_coroutine_threadsafe(report(), loop)

    def start(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        super().start()
