"""Broker I/O of the ``streams`` Spark sink: producing a task's rows, ending transactions.

* :func:`write_partition` runs in a Spark task's Python worker. It turns the Arrow record batches
  Spark hands the writer into Kafka records (no per-row ``Row`` objects: columns are converted
  in bulk, records appended straight into per-partition record batches by
  :class:`~streams.kafka.batching.RecordCollector`, keyed records partitioned with Kafka's
  murmur2 like Spark's Kafka sink). Every Arrow batch is checked before any of its records is
  sent (null topics, unknown topics, partitions out of range, records over
  ``max.request.size``). With a transactional id the task's records go into one transaction
  that the task leaves *open*: the driver commits it (:func:`end_transactions`), see
  :mod:`streams.spark.sink` for the protocol.
* :func:`end_transactions` sends ``EndTxn`` for transactions other processes began. Kafka's
  transaction coordinator identifies a transaction by transactional id, producer id and epoch,
  not by connection, which is what lets a driver finish what its tasks began (KIP-98's EndTxn).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from aiokafka import AIOKafkaProducer
from aiokafka import errors as Errors

from streams.kafka import clients
from streams.kafka.batching import RecordCollector, record_size
from streams.kafka.internals import (
    client_of,
    end_transaction,
    producer_transaction,
    topic_metadata,
)
from streams.spark.sink_options import ProducerSettings, SinkOptionError

log = logging.getLogger("streams.spark.sink")

# (transactional id, producer id, producer epoch): enough for anyone to commit or abort it.
Transaction = tuple[str, int, int]

_NONE = 0
_UNKNOWN_TOPIC = 3
_LEADER_NOT_AVAILABLE = 5
_RETRIABLE_END = {14, 15, 16, 51}  # COORDINATOR_LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR,
#                                   CONCURRENT_TRANSACTIONS


@dataclass(frozen=True)
class WriteResult:
    """What one task wrote: rows sent and, in exactly-once mode, its open transaction."""

    rows: int
    transaction: Transaction | None


def write_partition(batches: Iterator[pa.RecordBatch], settings: ProducerSettings,
                    topic: str | None, transactional_id: str | None) -> WriteResult:
    """Send every row of ``batches``; all records are acknowledged when this returns.

    With ``transactional_id`` the records are in one open transaction, returned for the driver
    to commit; on any error it is aborted here and nothing of this task becomes visible to
    read_committed readers.
    """
    non_empty = (batch for batch in batches if batch.num_rows)
    first = next(non_empty, None)
    if first is None:  # nothing to send: no producer, no transaction
        return WriteResult(0, None)
    with asyncio.Runner() as runner:
        writer = runner.run(_TaskWriter.open(settings, topic, transactional_id))
        try:
            runner.run(writer.send(first))
            for batch in non_empty:
                runner.run(writer.send(batch))
            runner.run(writer.finish())
        except BaseException:
            runner.run(writer.fail())
            raise
        return runner.run(writer.close())


class _TaskWriter:
    def __init__(self, producer: AIOKafkaProducer, settings: ProducerSettings,
                 topic: str | None, transactional: bool) -> None:
        self.producer = producer
        self.settings = settings
        self.topic = topic
        self.transactional = transactional
        self.counts: dict[str, int] = {}
        self.collector = RecordCollector(producer, self.counts, None,
                                         max_request_size=settings.max_request_size)
        self.rows = 0

    @classmethod
    async def open(cls, settings: ProducerSettings, topic: str | None,
                   transactional_id: str | None) -> _TaskWriter:
        kwargs = settings.producer_kwargs()
        if transactional_id is not None:
            kwargs.update(transactional_id=transactional_id,
                          transaction_timeout_ms=settings.transaction_timeout_ms)
        producer = clients.producer(kwargs)
        try:
            # A transactional producer's InitProducerId fences any earlier attempt of this task
            # and aborts the transaction it left open.
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        writer = cls(producer, settings, topic, transactional_id is not None)
        if transactional_id is not None:
            await producer.begin_transaction()
        return writer

    async def send(self, batch: pa.RecordBatch) -> None:
        rows = await self._checked_rows(batch)
        send = self.collector.send
        for topic, key, value, timestamp, headers, partition in rows:
            send(topic, key, value, timestamp, headers, partition)
        self.rows += batch.num_rows
        await self.collector.flush()

    async def _checked_rows(self, batch: pa.RecordBatch) -> Iterable[tuple[Any, ...]]:
        """The batch's records as (topic, key, value, timestamp ms, headers, partition),
        after checking all of them: nothing of a bad batch is sent."""
        n = batch.num_rows
        columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        values = _as_bytes(columns["value"])
        keys = _as_bytes(columns["key"]) if "key" in columns else None
        if self.topic is not None:
            topics: list[str] = [self.topic] * n
            distinct = [self.topic]
        else:
            topic_column = columns["topic"]
            if topic_column.null_count:
                raise SinkOptionError("column 'topic' has a null value and there is no 'topic' "
                                      "option: every row needs a topic")
            topics = topic_column.to_pylist()
            distinct = pc.unique(topic_column).to_pylist()
        for name in distinct:
            if name not in self.counts:
                self.counts[name] = await topic_partitions(client_of(self.producer), name,
                                                           self.settings.max_block_ms)
        partitions: list[int | None]
        if "partition" in columns and columns["partition"].null_count < n:
            partitions = columns["partition"].to_pylist()
            for topic, partition in zip(topics, partitions, strict=True):
                if partition is not None and not 0 <= partition < self.counts[topic]:
                    raise SinkOptionError(
                        f"column 'partition' has {partition}, but topic '{topic}' has "
                        f"partitions 0 to {self.counts[topic] - 1}")
        else:
            partitions = [None] * n
        if "timestamp" in columns:
            micros = pc.cast(columns["timestamp"], pa.int64())
            now = int(time.time() * 1000)
            timestamps = pc.fill_null(pc.divide(micros, 1000), now).to_pylist()
        else:
            timestamps = [None] * n
        headers = _headers(columns["headers"]) if "headers" in columns else [()] * n
        self._check_sizes(keys, values, headers, topics, columns)
        return zip(topics, keys.to_pylist() if keys is not None else [None] * n,
                   values.to_pylist(),
                   timestamps, headers, partitions, strict=True)

    def _check_sizes(self, keys: pa.Array | None, values: pa.Array, headers: list[Any],
                     topics: list[str], columns: dict[str, pa.Array]) -> None:
        limit = self.settings.max_request_size
        lengths = pc.fill_null(pc.binary_length(values), 0)
        if keys is not None:
            lengths = pc.add(lengths, pc.fill_null(pc.binary_length(keys), 0))
        # Exact sizes only for the rows that might not fit (headers add a little).
        suspects = pc.indices_nonzero(pc.greater(lengths, max(0, limit - 4096))).to_pylist()
        for row in suspects:
            key = keys[row].as_py() if keys is not None else None
            value = values[row].as_py()
            size = record_size(key, value, list(headers[row]))
            if size > limit:
                raise SinkOptionError(
                    f"a record for topic '{topics[row]}' is {size} bytes, larger than "
                    f"kafka.max.request.size ({limit}): raise the option "
                    f"kafka.max.request.size (and the topic's max.message.bytes) or make the "
                    f"value smaller")

    async def finish(self) -> None:
        await self.collector.flush()
        await self.collector.wait_delivered()

    async def fail(self) -> None:
        self.collector.discard()
        if self.transactional:
            try:
                await self.producer.abort_transaction()
            except Exception:  # fenced or broker gone: the next attempt's InitProducerId aborts
                log.debug("aborting the task's transaction failed", exc_info=True)
        await self.producer.stop()

    async def close(self) -> WriteResult:
        transaction = None
        if self.transactional:
            transaction = producer_transaction(self.producer)
        # stop() flushes and closes; it never ends an open transaction.
        await self.producer.stop()
        return WriteResult(self.rows, transaction)


def _as_bytes(column: pa.Array) -> pa.Array:
    """A string or binary column as binary (zero-copy for strings)."""
    if pa.types.is_binary(column.type):
        return column
    if pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type):
        return pc.cast(column, pa.large_binary())
    return pc.cast(column, pa.binary())


def _headers(column: pa.Array) -> list[tuple[tuple[str, bytes | None], ...]]:
    return [tuple((h["key"], h["value"]) for h in row) if row else ()
            for row in column.to_pylist()]


async def topic_partitions(client: clients.NetworkClient, topic: str, wait_ms: int) -> int:
    """The partition count of ``topic``, letting the broker create it if it does that.

    A Metadata request that allows auto-creation answers UNKNOWN_TOPIC_OR_PARTITION only when
    the topic is missing and the broker does not create topics (auto.create.topics.enable=false):
    that is reported at once, by name, instead of after max.block.ms as Kafka's producer does.
    """
    deadline = time.monotonic() + wait_ms / 1000  # kafka.max.block.ms
    while True:
        code, partitions = await topic_metadata(client, topic)
        if code == _NONE and partitions:
            return partitions
        if code == _UNKNOWN_TOPIC:
            raise SinkOptionError(
                f"topic '{topic}' does not exist and the broker does not create topics "
                f"automatically (auto.create.topics.enable=false): create it first")
        if code not in (_NONE, _LEADER_NOT_AVAILABLE):
            raise SinkOptionError(f"topic '{topic}' cannot be written: "
                                  f"{Errors.for_code(code).__name__}")
        if time.monotonic() > deadline:
            raise SinkOptionError(f"topic '{topic}' has no partition leaders after "
                                  f"{wait_ms} ms (kafka.max.block.ms)")
        await asyncio.sleep(0.1)


# ---- ending transactions from another process ------------------------------------------------


def end_transactions(settings: ProducerSettings, transactions: Iterable[Transaction],
                     commit: bool) -> dict[str, int]:
    """Commit or abort ``transactions``; returns {transactional id: Kafka error code}.

    0 means the transaction is (now) complete that way, including a retry of an EndTxn that
    already completed it (the coordinator answers NONE for that). Anything else means it
    cannot end that way any more: INVALID_TXN_STATE (it completed the other way, e.g. aborted
    by transaction.timeout.ms) or PRODUCER_FENCED / INVALID_PRODUCER_EPOCH (a newer producer
    with the same id fenced it, which aborts it).
    """
    wanted = list(transactions)
    if not wanted:
        return {}
    return asyncio.run(_end_all(settings, wanted, commit))


async def _end_all(settings: ProducerSettings, wanted: list[Transaction],
                   commit: bool) -> dict[str, int]:
    client = clients.network_client(settings.producer_kwargs())
    await client.bootstrap()
    try:
        results = await asyncio.gather(*(_end_one(client, settings, txn, commit)
                                         for txn in wanted))
        return {txn[0]: code for txn, code in zip(wanted, results, strict=True)}
    finally:
        await client.close()


async def _end_one(client: clients.NetworkClient, settings: ProducerSettings, txn: Transaction,
                   commit: bool) -> int:
    transactional_id, producer_id, epoch = txn
    deadline = time.monotonic() + settings.request_timeout_ms / 1000
    while True:
        try:
            code = await end_transaction(client, transactional_id, producer_id, epoch, commit)
        except (Errors.KafkaConnectionError, Errors.NodeNotReadyError,
                Errors.RequestTimedOutError, Errors.CoordinatorNotAvailableError,
                Errors.CoordinatorLoadInProgressError) as exc:
            log.debug("EndTxn for %s: %r, retrying", transactional_id, exc)
            code = 15
        if code not in _RETRIABLE_END:
            return int(code)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the transaction coordinator did not end transaction "
                               f"{transactional_id} within {settings.request_timeout_ms} ms "
                               f"(last error {Errors.for_code(code).__name__})")
        await asyncio.sleep(settings.retry_backoff_ms / 1000)
