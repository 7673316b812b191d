"""Broker I/O of the ``streams`` Spark source: offset lookups on the driver, range reads in tasks.

Two very different callers, hence two shapes:

* :class:`OffsetClient` serves the driver-side planning calls (``partitions``, ``initialOffset``,
  ``latestOffset``). Spark calls a stream reader's offset methods synchronously from one
  long-lived Python process, minutes apart, while aiokafka clients are bound to the event loop
  they were created on and keep background tasks (metadata refresh, connection reaping). So the
  client lives on a private event loop in a daemon thread and every call is submitted to it.
* :func:`read_range` runs inside a Spark task's Python worker: it opens its own client, reads
  ``[start, end)`` of one partition with raw Fetch requests and yields Arrow record batches
  (Spark turns tuples into Arrow anyway; building the columns ourselves is several times faster,
  and decoding with aiokafka's C record parser without its per-record ConsumerRecord objects
  makes reading about 1.4x faster than going through ``getmany``). It stops on the fetch
  *position*, not on a record count: under ``read_committed`` aborted records and transaction
  markers occupy offsets that are never returned.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka import errors as Errors
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.control_record import ABORT_MARKER, ControlRecord
from aiokafka.record.memory_records import MemoryRecords

from streams.kafka import clients
from streams.kafka.client_config import client_settings
from streams.kafka.internals import client_of, cluster_metadata
from streams.kafka.loop_thread import LoopThread, RunTimeoutError
from streams.spark.source_offsets import ClientSettings

log = logging.getLogger("streams.spark.source")

T = TypeVar("T")

# Arrow types Spark expects for the source's schema (pyspark's to_arrow_schema of SCHEMA, UTC).
TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER))
ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADERS),
])

# Rows per Arrow batch handed to Spark: big enough to amortise per-batch costs.
BATCH_ROWS = 32_768
# How long the broker may hold a fetch that has nothing yet (only when data is missing).
_FETCH_MAX_WAIT_MS = 500


class DataLossError(RuntimeError):
    """Records the query should read are gone (retention, deleteRecords, a recreated topic)."""


def data_loss_message(what: str) -> str:
    return (f"{what}. Some data may have been lost because it is no longer available in the "
            "broker (deleted by retention or deleteRecords, or the topic was deleted and "
            "recreated). If you want the query to go on past this, set the source option "
            "failOnDataLoss to 'false'.")


def new_consumer(settings: ClientSettings) -> AIOKafkaConsumer:
    """A group-less consumer for ``settings`` (call inside a coroutine: aiokafka binds the loop)."""
    return clients.consumer(
        client_settings(settings.bootstrap_servers, client_id=settings.client_id,
                        request_timeout_ms=settings.request_timeout_ms,
                        options=settings.security_kwargs()),
        isolation_level=settings.isolation_level,
        enable_auto_commit=False,
        group_id=None,
        auto_offset_reset="none",
        max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
        fetch_max_bytes=settings.fetch_max_bytes,
        fetch_max_wait_ms=100,
    )


# ---- driver side -----------------------------------------------------------------------------


class OffsetClient:
    """Metadata and offset lookups for planning, on a private event loop in a daemon thread.

    Started lazily on the first call; :meth:`close` stops the consumer and the thread. End offsets
    respect the isolation level: under ``read_committed`` the broker answers "latest" with the
    last stable offset, so a range never ends inside an undecided transaction.
    """

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._loop_thread: LoopThread | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> OffsetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, fn: Callable[[AIOKafkaConsumer], Awaitable[T]]) -> T:
        with self._lock:
            if self._loop_thread is None:
                self._loop_thread = LoopThread("streams-spark-offsets").start()
            loop_thread = self._loop_thread

        async def run() -> T:
            if self._consumer is None:
                consumer = new_consumer(self.settings)
                try:
                    await consumer.start()
                except BaseException:  # e.g. a refused SASL login: no half-open client left
                    await consumer.stop()
                    raise
                self._consumer = consumer
            return await fn(self._consumer)

        timeout = self.settings.request_timeout_ms / 1000 * 2 + 10
        try:
            return loop_thread.run(run(), timeout)
        except RunTimeoutError:
            raise TimeoutError(f"no answer from the broker at {self.settings.bootstrap_servers} "
                               f"within {timeout:.0f} s") from None

    def cluster(self) -> dict[str, list[int]]:
        """{topic: partition ids} of every non-internal topic (one Metadata request)."""

        async def fetch(consumer: AIOKafkaConsumer) -> dict[str, list[int]]:
            metadata = await cluster_metadata(consumer)  # never auto-creates a topic
            return {topic: sorted(metadata.partitions_for_topic(topic) or ())
                    for topic in metadata.topics(exclude_internal_topics=True)
                    if not topic.startswith("__")}

        return self._call(fetch)

    def earliest(self, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Log start offsets."""
        return self._offsets(tps, latest=False)

    def latest(self, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """High watermarks, or last stable offsets under ``read_committed``."""
        return self._offsets(tps, latest=True)

    def _offsets(self, tps: Iterable[tuple[str, int]], latest: bool) -> dict[tuple[str, int], int]:
        wanted = [TopicPartition(t, p) for t, p in tps]
        if not wanted:
            return {}

        async def fetch(consumer: AIOKafkaConsumer) -> dict[tuple[str, int], int]:
            if latest:
                found = await consumer.end_offsets(wanted)
            else:
                found = await consumer.beginning_offsets(wanted)
            return {(tp.topic, tp.partition): int(offset) for tp, offset in found.items()}

        return self._call(fetch)

    def close(self) -> None:
        with self._lock:
            loop_thread, consumer = self._loop_thread, self._consumer
            self._loop_thread = self._consumer = None
        if loop_thread is None:
            return
        if consumer is not None:
            try:
                loop_thread.run(consumer.stop(), 30)
            except Exception:  # closing is best effort: the query is ending anyway
                log.debug("closing the offset consumer failed", exc_info=True)
        loop_thread.stop(30)

    def __getstate__(self) -> dict[str, Any]:
        # Never ship a live client (thread, loop, sockets) to a worker: it starts anew there.
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"])  # type: ignore[misc]


# ---- task side -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """``[start, end)`` of one topic-partition plus what a task needs to read it."""

    topic: str
    partition: int
    start: int
    end: int
    settings: ClientSettings
    fail_on_data_loss: bool = True


def read_range(rng: Range) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as Arrow batches of :data:`ARROW_SCHEMA`.

    Runs its own event loop and runs it only while fetching; the client is closed when the
    range is done or when Spark stops consuming the iterator early (``LIMIT``).
    """
    if rng.end <= rng.start:
        return
    with asyncio.Runner() as runner:
        reader = runner.run(_RangeReader.open(rng))
        try:
            pending = _Columns()
            while True:
                more = runner.run(reader.next_chunk(pending))
                if len(pending.offsets) >= BATCH_ROWS or (not more and pending.offsets):
                    yield pending.to_batch(rng.topic, rng.partition)
                    pending = _Columns()
                if not more:
                    break
        finally:
            runner.run(reader.close())


class _Columns:
    """Decoded records of one partition, column by column, on their way into an Arrow batch."""

    __slots__ = ("keys", "values", "offsets", "timestamps", "timestamp_types", "headers")

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[Any] = []

    def to_batch(self, topic: str, partition: int) -> pa.RecordBatch:
        """One Arrow batch of :data:`ARROW_SCHEMA`; like Spark's Kafka source, a record without
        headers has a null ``headers`` value."""
        n = len(self.offsets)
        millis = pa.array(self.timestamps, pa.int64())
        return pa.RecordBatch.from_arrays([
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pc.multiply(millis, 1000).cast(TIMESTAMP),
            pa.array(self.timestamp_types, pa.int32()),
            _headers(self.headers),
        ], schema=ARROW_SCHEMA)


def _headers(per_record: list[Any]) -> pa.Array:
    if not any(per_record):
        return pa.nulls(len(per_record), HEADERS)
    starts = [0]
    names: list[str] = []
    contents: list[bytes | None] = []
    for headers in per_record:
        for name, content in headers or ():
            names.append(name)
            contents.append(content)
        starts.append(len(names))
    entries = pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(contents, pa.binary())],
        fields=list(HEADER))
    mask = pa.array([not headers for headers in per_record], pa.bool_())
    return pa.ListArray.from_arrays(pa.array(starts, pa.int32()), entries, type=HEADERS,
                                    mask=mask)


def _is_abort_marker(batch: Any) -> bool:
    try:
        marker = next(iter(batch))
    except StopIteration:
        return False
    return ControlRecord.parse(marker.key) == ABORT_MARKER


def decode_fetched(raw: bytes, position: int, end: int, columns: _Columns,
                   aborted_transactions: list[tuple[int, int]] | None) -> int:
    """Append the records of one fetched record set in ``[position, end)`` to ``columns``.

    Returns the next position. Control batches are skipped; with ``aborted_transactions`` (given
    under ``read_committed``) so are batches of aborted transactions, exactly as aiokafka's and
    the Java consumer do it: a producer is aborted from its transaction's first offset until its
    abort marker. We decode with aiokafka's C record parser but skip its per-record
    ConsumerRecord objects, which is where most of a consumer's time goes.
    """
    records = MemoryRecords(raw)
    pending_aborts = sorted(aborted_transactions or (), key=lambda item: item[1])
    aborted: set[int] = set()
    keys, values, offsets = columns.keys, columns.values, columns.offsets
    timestamps, ts_types, headers = columns.timestamps, columns.timestamp_types, columns.headers
    while position < end and records.has_next():
        batch = records.next_batch()
        if batch is None:  # a partial batch at the end of the fetch
            break
        next_offset = batch.next_offset
        producer_id = getattr(batch, "producer_id", None)  # None for v0/v1 message sets
        control = getattr(batch, "is_control_batch", False)
        if aborted_transactions is not None and producer_id is not None:
            while pending_aborts and pending_aborts[0][1] <= batch.base_offset:
                aborted.add(pending_aborts.pop(0)[0])
            if control and _is_abort_marker(batch):
                aborted.discard(producer_id)
            if batch.is_transactional and producer_id in aborted:
                position = max(position, next_offset)
                continue
        if control or next_offset <= position:
            position = max(position, next_offset)
            continue
        if not batch.validate_crc():
            raise RuntimeError(f"corrupt record batch at offset {batch.base_offset} (bad CRC)")
        for record in batch:
            offset = record.offset
            if offset < position:  # the head of a compressed batch we already have
                continue
            if offset >= end:
                break
            keys.append(record.key)
            values.append(record.value)
            offsets.append(offset)
            timestamps.append(record.timestamp if record.timestamp is not None else -1)
            ts_types.append(record.timestamp_type or 0)
            headers.append(record.headers)
        position = min(max(position, next_offset), end)
    return position


class _RangeReader:
    """Fetches one partition from the range's start with raw Fetch requests.

    An aiokafka consumer provides the connection, metadata and offset lookups; the records are
    fetched and decoded here (see :func:`decode_fetched`), not by its fetcher.
    """

    def __init__(self, rng: Range, consumer: AIOKafkaConsumer) -> None:
        self.rng = rng
        self.consumer = consumer
        self.client = client_of(consumer)
        self.tp = TopicPartition(rng.topic, rng.partition)
        self.position = rng.start
        self.end = rng.end
        self.read_committed = rng.settings.isolation_level == "read_committed"

    @classmethod
    async def open(cls, rng: Range) -> _RangeReader:
        consumer = new_consumer(rng.settings)
        await consumer.start()
        reader = cls(rng, consumer)
        try:
            log_start = (await consumer.beginning_offsets([reader.tp]))[reader.tp]
            if reader.position < log_start:
                reader._lost(f"offsets {reader.position} to {log_start - 1} of "
                             f"{rng.topic}-{rng.partition} were to be read but the log now "
                             f"starts at {log_start}")
                reader.position = log_start
        except BaseException:
            await consumer.stop()
            raise
        return reader

    def _lost(self, what: str) -> None:
        if self.rng.fail_on_data_loss:
            raise DataLossError(data_loss_message(what))
        log.warning("%s: skipping (failOnDataLoss=false)", what)

    async def next_chunk(self, columns: _Columns) -> bool:
        """Fetch until some records landed in ``columns``; False once the range is done."""
        settings, tp = self.rng.settings, self.tp
        timeout_s = settings.poll_timeout_ms / 1000
        last_position, deadline = -1, 0.0
        while self.position < self.end:
            if self.position != last_position:
                last_position, deadline = self.position, time.monotonic() + timeout_s
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"reading {tp.topic}-{tp.partition}: no progress at offset {self.position} "
                    f"for {timeout_s:.0f} s (range ends at {self.end}); see "
                    "kafkaConsumer.pollTimeoutMs")
            node = self.client.cluster.leader_for_partition(tp)
            if node is None or node < 0:
                await self.client.force_metadata_update()
                continue
            request = FetchRequest(_FETCH_MAX_WAIT_MS, 1, settings.fetch_max_bytes,
                                   1 if self.read_committed else 0,
                                   [(tp.topic, [(tp.partition, self.position,
                                                 settings.max_partition_fetch_bytes)])])
            response = await self.client.send(node, request)
            topic_data = [part for topic, parts in response.topics if topic == tp.topic
                          for part in parts if part[0] == tp.partition]
            if not topic_data:
                continue
            _, error_code, _highwater, *part_data = topic_data[0]
            error = Errors.for_code(error_code)
            if error is Errors.OffsetOutOfRangeError:
                await self._out_of_range()
                continue
            if error in (Errors.NotLeaderForPartitionError, Errors.UnknownTopicOrPartitionError,
                         Errors.LeaderNotAvailableError):
                await self.client.force_metadata_update()
                continue
            if error is not Errors.NoError:
                raise error(f"fetching {tp.topic}-{tp.partition} at offset {self.position}")
            aborted = None
            if self.read_committed:
                # v4-v10: [lso, (log_start,) aborted, records]; v11+: [..., aborted, replica, records]
                aborted = part_data[2] if response.API_VERSION >= 11 else part_data[-2]
                aborted = list(aborted or ())
            before = len(columns.offsets)
            self.position = decode_fetched(part_data[-1], self.position, self.end, columns,
                                           aborted)
            if len(columns.offsets) > before:
                return self.position < self.end
        return False

    async def _out_of_range(self) -> None:
        tp, position = self.tp, self.position
        log_start = (await self.consumer.beginning_offsets([tp]))[tp]
        log_end = (await self.consumer.end_offsets([tp]))[tp]
        if position < log_start:
            self._lost(f"offsets {position} to {log_start - 1} of {tp.topic}-{tp.partition} were "
                       f"deleted while being read")
            self.position = log_start
        else:
            self._lost(f"{tp.topic}-{tp.partition} now ends at offset {log_end}, before the "
                       f"offset {position} being read (range end {self.end})")
            self.end = position  # nothing more to read here

    async def close(self) -> None:
        await self.consumer.stop()
