"""``df.write.format("streams")`` / ``df.writeStream.format("streams")``: DataFrames into topics.

Options and columns are Spark's Kafka sink's (:mod:`streams.spark.sink_options`). Two modes:

**at_least_once** (default, as Spark's Kafka sink): every task sends its rows with an idempotent
producer and returns once all are acknowledged (``acks=all``). A task or batch that is retried
sends its rows again, so a crash can duplicate, never lose. A task that fails part way leaves
the rows it sent before the failure visible.

**exactly_once_v2** (``.option("processing.guarantee", "exactly_once_v2")``): a two-phase commit
with the driver as coordinator.

1. Task ``p`` of micro-batch ``N`` of query ``Q`` uses transactional id ``streams-spark-Q-p``
   (Q is Spark's query id, kept in the checkpoint across restarts). Its InitProducerId fences
   every earlier attempt of that task and aborts the transaction such an attempt left open.
   It sends its rows in a transaction, waits for every acknowledgement and leaves the
   transaction *open*, returning (transactional id, producer id, epoch) to the driver.
2. The driver's ``commit(N)`` first records those transactions in the checkpoint
   (``<checkpointLocation>/streams-sink/N.json``, :mod:`streams.spark.sink_commits`): this is
   the commit point of the batch. Then it sends ``EndTxn(commit)`` for each. Spark records
   batch N in its own commit log after ``commit`` returns.
3. If anything failed, Spark calls ``abort(N)``, which aborts the tasks' transactions.

Crashes: a task or executor dies -> Spark retries the task, whose InitProducerId aborts the dead
attempt's transaction. The driver dies before step 2's record -> the restarted query replays N;
each replayed task's InitProducerId aborts the old open transaction, and N is written anew.
The driver dies after the record (between or after the EndTxns, before Spark's commit log) ->
the replayed task ``p`` finds N's record, finishes its old transaction with ``EndTxn(commit)``
(a no-op if it was already committed) and writes nothing; only if that transaction can no
longer be committed (aborted by ``transaction.timeout.ms`` meanwhile) does it write its rows
again. Under ``read_committed`` every row of a batch is thus visible exactly once.

Where it ends: replays must produce the same rows in the same Spark partitions (deterministic
queries, as for Spark's own exactly-once sinks). A transaction open longer than
``kafka.transaction.timeout.ms`` (default 15 min, the broker's default maximum) is aborted by
the broker, so a micro-batch must be written and committed within it: if not, the commit fails
with :class:`SinkCommitError` and the restarted query writes that partition of the batch again
(nothing lost, nothing doubled, since the aborted rows were never visible). Speculative
execution (``spark.speculation``) must be off: a speculative attempt fences the other. Between
the driver's first and last ``EndTxn`` of a batch a read_committed reader can see some Spark
partitions of the batch before others; each row becomes visible once. Plain batch writes (``df.write``) commit all tasks'
transactions at the end of the job: nothing is visible if any task fails; if the driver dies
while committing, the part committed so far stays.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from streams.spark.kafka_write import (
    Transaction,
    WriteResult,
    end_transactions,
    topic_partitions,
    write_partition,
)
from streams.spark.sink_commits import SinkCommitLog
from streams.spark.sink_options import (
    ProducerSettings,
    SinkOptionError,
    SinkOptions,
    check_input_schema,
    parse_sink_options,
)

__all__ = ["SinkCommitError", "SinkCommitMessage", "SinkOptionError", "StreamsBatchWriter",
           "StreamsStreamWriter"]

log = logging.getLogger("streams.spark.sink")

QUERY_ID_PROPERTY = "sql.streaming.queryId"  # Spark's StreamExecution.QUERY_ID_KEY
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # Spark's MicroBatchExecution.BATCH_ID_KEY


class SinkCommitError(RuntimeError):
    """The driver could not commit a micro-batch's transactions."""


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """A task's report to the driver."""

    partition: int
    rows: int
    transaction: Transaction | None = None
    replayed: bool = False  # an already committed batch: nothing written


def _message(partition: int, result: WriteResult) -> SinkCommitMessage:
    return SinkCommitMessage(partition, result.rows, result.transaction)


def _transactions(messages: list[WriterCommitMessage | None]) -> dict[int, Transaction]:
    return {m.partition: m.transaction for m in messages
            if isinstance(m, SinkCommitMessage) and m.transaction is not None}


def _commit(settings: ProducerSettings, transactions: dict[int, Transaction],
            batch: str) -> None:
    codes = end_transactions(settings, transactions.values(), commit=True)
    failed = sorted(tid for tid, code in codes.items() if code != 0)
    if failed:
        raise SinkCommitError(
            f"{batch}: the transactions {', '.join(failed)} could not be committed (aborted "
            f"by the broker after kafka.transaction.timeout.ms, or fenced); their rows are "
            f"not visible to read_committed readers")


def _abort(settings: ProducerSettings, messages: list[WriterCommitMessage | None]) -> None:
    try:
        end_transactions(settings, _transactions(messages).values(), commit=False)
    except Exception:  # the broker aborts them after transaction.timeout.ms anyway
        log.warning("aborting the tasks' transactions failed", exc_info=True)


def new_writer(options: dict[str, str], schema: StructType) -> StreamsBatchWriter:
    parsed = parse_sink_options(options)
    check_input_schema(schema, parsed)
    if parsed.topic is not None:
        _check_topic(parsed)
    return StreamsBatchWriter(parsed)


def new_stream_writer(options: dict[str, str], schema: StructType) -> StreamsStreamWriter:
    parsed = parse_sink_options(options)
    check_input_schema(schema, parsed)
    if parsed.exactly_once and not parsed.checkpoint:
        raise SinkOptionError("processing.guarantee=exactly_once_v2 records each micro-batch's "
                              "commit in the checkpoint: set .option('checkpointLocation', ...) "
                              "on the writeStream")
    return StreamsStreamWriter(parsed)


def _check_topic(options: SinkOptions) -> None:
    """The 'topic' option names a topic the tasks can write (fail at save(), not in a task)."""
    from streams.kafka import clients

    assert options.topic is not None
    settings = options.producer.producer_kwargs()

    async def run() -> None:
        client = clients.network_client(settings)
        await client.bootstrap()
        try:
            await topic_partitions(client, options.topic or "", options.producer.max_block_ms)
        finally:
            await client.close()

    asyncio.run(run())


class StreamsBatchWriter(DataSourceArrowWriter):
    """``df.write``: one producer per task; in exactly-once mode the driver commits the job."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.job = uuid.uuid4().hex  # made on the driver, shipped to every task

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        partition = TaskContext.get().partitionId()
        tid = f"streams-spark-{self.job}-{partition}" if self.options.exactly_once else None
        return _message(partition, write_partition(iterator, self.options.producer,
                                                   self.options.topic, tid))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _commit(self.options.producer, _transactions(messages), "the batch write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _abort(self.options.producer, messages)


class StreamsStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream``: at-least-once, or the exactly-once protocol in the module docstring.

    Spark builds a new writer for every driver-side ``commit``/``abort`` call, so it keeps no
    state between them; everything durable is in the checkpoint and in the broker.
    """

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.log = SinkCommitLog(options.checkpoint) if options.exactly_once and \
            options.checkpoint else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        context = TaskContext.get()
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        return self.write_task(iterator, context.partitionId(),
                               context.getLocalProperty(QUERY_ID_PROPERTY) or "",
                               int(batch) if batch is not None else -1)

    def write_task(self, iterator: Iterator[pa.RecordBatch], partition: int, query: str,
                   batch: int) -> SinkCommitMessage:
        """Task ``partition`` of micro-batch ``batch`` of query ``query`` (what ``write`` reads
        from Spark's task context)."""
        opts = self.options
        if self.log is None:
            return _message(partition, write_partition(iterator, opts.producer, opts.topic, None))
        tid = f"streams-spark-{query}-{partition}"
        decided = self.log.read(batch)
        if decided is not None and partition in decided:
            # A replay of a batch whose commit was decided: finish it, write nothing.
            code = end_transactions(opts.producer, [decided[partition]], commit=True)
            if code.get(decided[partition][0]) == 0:
                log.info("micro-batch %d partition %d was committed before: not written again",
                         batch, partition)
                return SinkCommitMessage(partition, 0, None, replayed=True)
            log.warning("micro-batch %d partition %d: its transaction was aborted before the "
                        "commit finished (transaction.timeout.ms?): writing it again",
                        batch, partition)
        return _message(partition, write_partition(iterator, opts.producer, opts.topic, tid))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.log is None:
            return
        transactions = _transactions(messages)
        if transactions:
            decided = self.log.read(batchId) or {}
            self.log.write(batchId, {**decided, **transactions})  # the commit point
            _commit(self.options.producer, transactions, f"micro-batch {batchId}")
        self.log.prune(batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.log is not None:
            _abort(self.options.producer, messages)
