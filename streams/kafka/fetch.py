"""Reading exact offset ranges of partitions, and the offset lookups that plan them.

Two shapes, for the two callers a batch reader has (the Spark source is one):

* :class:`OffsetClient` answers synchronous planning calls (the topics and partitions of the
  cluster, log start offsets, end offsets) from one long-lived process, minutes apart. aiokafka
  clients are bound to the event loop they were created on and keep background tasks (metadata
  refresh, connection reaping), so the client lives on a private event loop in a daemon thread
  and every call is submitted to it.
* :func:`read_partition` reads ``[start, end)`` of one partition with raw Fetch requests and
  yields the records column by column (:class:`RecordColumns`). Decoding with aiokafka's C
  record parser without its per-record ConsumerRecord objects is where it wins over ``getmany``
  (about 1.4x). It stops on the fetch *position*, not on a record count: under
  ``read_committed`` aborted records and transaction markers occupy offsets that are never
  returned, and it filters aborted transactions as Kafka's consumer does.

Both take :class:`ReaderSettings`: plain values, so they pickle into another process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka import errors as Errors
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.control_record import ABORT_MARKER, ControlRecord
from aiokafka.record.memory_records import MemoryRecords

from . import clients
from .client_config import ALL_CONSUMER_KEYS, check_security, client_settings, security_kwargs
from .internals import client_of, cluster_metadata
from .loop_thread import LoopThread, RunTimeoutError

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
# How long the broker may hold a fetch that has nothing yet (only when data is missing).
_FETCH_MAX_WAIT_MS = 500


@dataclass(frozen=True)
class ReaderSettings:
    """What a reader's client needs: small and picklable (plain values; the security properties
    as strings) so it can travel to another process."""

    bootstrap_servers: str
    isolation_level: str = READ_COMMITTED
    client_id: str = "streams-reader"
    request_timeout_ms: int = 40_000
    max_partition_fetch_bytes: int = 8 * 1024 * 1024
    fetch_max_bytes: int = 64 * 1024 * 1024
    # How long a read may make no progress before it fails (Spark's kafkaConsumer.pollTimeoutMs).
    poll_timeout_ms: int = 120_000
    # Kafka's security keys (security.protocol, sasl.*, ssl.*: streams/kafka/client_config.py),
    # never in the repr.
    security: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    # How a caller's users name these settings, for messages: the prefix of the security keys
    # and the name of poll_timeout_ms (the Spark source: "kafka.", "kafkaConsumer.pollTimeoutMs").
    SECURITY_PREFIX: ClassVar[str] = ""
    POLL_TIMEOUT_NAME: ClassVar[str] = "poll_timeout_ms"

    def security_kwargs(self) -> dict[str, Any]:
        """aiokafka's security arguments (TLS context, SASL login); a bad key, file or JAAS
        entry raises ``ClientConfigError`` naming the key."""
        if not self.security:
            return {}
        where = self.SECURITY_PREFIX
        return security_kwargs(check_security(dict(self.security), where), where)

    def client_kwargs(self) -> dict[str, Any]:
        """The consumer arguments :data:`READER_KEYS` map onto (these settings' fields)."""
        return {name: getattr(self, name) for name, _convert in READER_KEYS.values()}

    def new_consumer(self) -> AIOKafkaConsumer:
        """A group-less consumer (call inside a coroutine: aiokafka binds the running loop)."""
        return clients.consumer(
            client_settings(self.bootstrap_servers, options=self.security_kwargs()),
            **self.client_kwargs(),
            enable_auto_commit=False,
            group_id=None,
            auto_offset_reset="none",
            fetch_max_wait_ms=100,
        )


# Kafka's consumer keys a reader honours, from the one client table (streams/kafka/
# client_config.py): each maps onto the ReaderSettings field named as aiokafka's argument.
READER_KEYS = {key: ALL_CONSUMER_KEYS[key] for key in (
    "client.id", "request.timeout.ms", "max.partition.fetch.bytes", "fetch.max.bytes",
    "isolation.level")}
assert {name for name, _ in READER_KEYS.values()} <= set(ReaderSettings.__dataclass_fields__)


# ---- planning ----------------------------------------------------------------------------------


class OffsetClient:
    """Metadata and offset lookups for planning, on a private event loop in a daemon thread.

    Started lazily on the first call; :meth:`close` stops the consumer and the thread (a later
    call starts them again). End offsets respect the isolation level: under ``read_committed``
    the broker answers "latest" with the last stable offset, so a range never ends inside an
    undecided transaction. Pickles as its settings alone.
    """

    def __init__(self, settings: ReaderSettings, thread_name: str = "streams-offsets") -> None:
        self.settings = settings
        self.thread_name = thread_name
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
                self._loop_thread = LoopThread(self.thread_name).start()
            loop_thread = self._loop_thread

        async def run() -> T:
            if self._consumer is None:
                consumer = self.settings.new_consumer()
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
        """{topic: partition ids} of every non-internal topic (one Metadata request, which
        never auto-creates a topic)."""

        async def fetch(consumer: AIOKafkaConsumer) -> dict[str, list[int]]:
            metadata = await cluster_metadata(consumer)
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
            except Exception:  # closing is best effort: the caller is ending anyway
                log.debug("closing the offset consumer failed", exc_info=True)
        loop_thread.stop(30)

    def __getstate__(self) -> dict[str, Any]:
        # Never ship a live client (thread, loop, sockets) to another process: it starts anew.
        return {"settings": self.settings, "thread_name": self.thread_name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"], state.get("thread_name", "streams-offsets"))  # type: ignore[misc]


# ---- reading a range ---------------------------------------------------------------------------


class RecordColumns:
    """Decoded records of one partition, column by column (what a columnar consumer, such as an
    Arrow batch, is built from). A record without a timestamp has -1; ``headers`` holds each
    record's (key, value) pairs as aiokafka decodes them."""

    __slots__ = ("keys", "values", "offsets", "timestamps", "timestamp_types", "headers")

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[Any] = []

    def __len__(self) -> int:
        return len(self.offsets)


def _is_abort_marker(batch: Any) -> bool:
    try:
        marker = next(iter(batch))
    except StopIteration:
        return False
    return ControlRecord.parse(marker.key) == ABORT_MARKER


def decode_record_set(raw: bytes, position: int, end: int, columns: RecordColumns,
                      aborted_transactions: list[tuple[int, int]] | None) -> int:
    """Append the records of one fetched record set in ``[position, end)`` to ``columns``.

    Returns the next position. Control batches are skipped; with ``aborted_transactions``
    ((producer id, first offset) pairs, given under ``read_committed``) so are batches of aborted
    transactions, exactly as aiokafka's and the Java consumer do it: a producer is aborted from
    its transaction's first offset until its abort marker. A batch with a bad CRC raises.
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


def read_partition(settings: ReaderSettings, topic: str, partition: int, start: int, end: int,
                   on_lost: Callable[[str], None], chunk_records: int
                   ) -> Iterator[RecordColumns]:
    """Yield the records of ``[start, end)`` of one partition, about ``chunk_records`` at a
    time (a chunk ends at a fetch boundary), for a synchronous caller.

    Runs its own event loop, and runs it only while fetching; the client is closed when the
    range is done or when the caller stops iterating early. Offsets that are gone (retention,
    deleteRecords, a recreated topic) are reported to ``on_lost`` with a sentence saying which:
    raise there to fail, return to skip them.
    """
    if end <= start:
        return
    with asyncio.Runner() as runner:
        reader = runner.run(PartitionReader.open(settings, topic, partition, start, end, on_lost))
        try:
            pending = RecordColumns()
            while True:
                more = runner.run(reader.next_chunk(pending))
                if len(pending) >= chunk_records or (not more and len(pending)):
                    yield pending
                    pending = RecordColumns()
                if not more:
                    break
        finally:
            runner.run(reader.close())


class PartitionReader:
    """Fetches one partition from ``start`` to ``end`` with raw Fetch requests.

    An aiokafka consumer provides the connection, metadata and offset lookups; the records are
    fetched and decoded here (see :func:`decode_record_set`), not by its fetcher.
    """

    def __init__(self, settings: ReaderSettings, consumer: AIOKafkaConsumer, topic: str,
                 partition: int, start: int, end: int, on_lost: Callable[[str], None]) -> None:
        self.settings = settings
        self.consumer = consumer
        self.client = client_of(consumer)
        self.tp = TopicPartition(topic, partition)
        self.position = start
        self.end = end
        self.on_lost = on_lost
        self.read_committed = settings.isolation_level == READ_COMMITTED

    @classmethod
    async def open(cls, settings: ReaderSettings, topic: str, partition: int, start: int,
                   end: int, on_lost: Callable[[str], None]) -> PartitionReader:
        consumer = settings.new_consumer()
        await consumer.start()
        reader = cls(settings, consumer, topic, partition, start, end, on_lost)
        try:
            log_start = (await consumer.beginning_offsets([reader.tp]))[reader.tp]
            if reader.position < log_start:
                on_lost(f"offsets {reader.position} to {log_start - 1} of {topic}-{partition} "
                        f"were to be read but the log now starts at {log_start}")
                reader.position = log_start
        except BaseException:
            await consumer.stop()
            raise
        return reader

    async def next_chunk(self, columns: RecordColumns) -> bool:
        """Fetch until some records landed in ``columns``; False once the range is done."""
        settings, tp = self.settings, self.tp
        timeout_s = settings.poll_timeout_ms / 1000
        last_position, deadline = -1, 0.0
        while self.position < self.end:
            if self.position != last_position:
                last_position, deadline = self.position, time.monotonic() + timeout_s
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"reading {tp.topic}-{tp.partition}: no progress at offset {self.position} "
                    f"for {timeout_s:.0f} s (range ends at {self.end}); see "
                    f"{settings.POLL_TIMEOUT_NAME}")
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
            self.position = decode_record_set(part_data[-1], self.position, self.end, columns,
                                              aborted)
            if len(columns.offsets) > before:
                return self.position < self.end
        return False

    async def _out_of_range(self) -> None:
        tp, position = self.tp, self.position
        log_start = (await self.consumer.beginning_offsets([tp]))[tp]
        log_end = (await self.consumer.end_offsets([tp]))[tp]
        if position < log_start:
            self.on_lost(f"offsets {position} to {log_start - 1} of {tp.topic}-{tp.partition} "
                         f"were deleted while being read")
            self.position = log_start
        else:
            self.on_lost(f"{tp.topic}-{tp.partition} now ends at offset {log_end}, before the "
                         f"offset {position} being read (range end {self.end})")
            self.end = position  # nothing more to read here

    async def close(self) -> None:
        await self.consumer.stop()
