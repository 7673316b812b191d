"""Batched producing for aiokafka, shared by the streams runtime and the Connect worker.

``RecordCollector``: what tasks produce, batched per (topic, partition). Tasks call ``send`` synchronously on the hot path; records are appended to one aiokafka
``BatchBuilder`` per partition (no await, no future per record). The runtime hands full and
open batches to the producer with ``flush`` once per poll loop, and collects delivery results
(the offsets checkpoints need) in ``wait_delivered`` at commit. Keyed records are partitioned
with Kafka's murmur2 like the Java client, so repartition topics co-partition with Java apps.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka.errors import KafkaTimeoutError, MessageSizeTooLargeError
from aiokafka.partitioner import murmur2
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from .internals import delivery_timeout_ms

# (name, value) pairs as the processor API and aiokafka take them; any iterable of pairs works.
Headers = tuple[tuple[str, bytes | None], ...]

_CACHE_LIMIT = 100_000


def record_size(key: bytes | None, value: bytes | None, headers: list[Any]) -> int:
    """The bytes one record takes in a batch of its own (what Kafka checks against the
    producer's max.request.size)."""
    return int(DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, headers))


def default_partition(key: bytes, partitions: int) -> int:
    """Kafka's ``Utils.toPositive(Utils.murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _interleaved(batches: list[tuple[tuple[str, int], Any]]) -> list[tuple[tuple[str, int], Any]]:
    """The batches in hand-over order: the first of every partition, then the second, ...

    aiokafka queues one batch per partition (``add_batch`` waits until the partition's previous
    batch went into a request) and sends one request at a time per broker, taking one batch of
    each partition that has one. Handed over partition by partition, every request would carry a
    single batch; interleaved, a request carries a batch of each partition, as the Java
    producer's requests do. The order within a partition is kept."""
    by_partition: dict[tuple[str, int], list[Any]] = {}
    for tp, batch in batches:
        by_partition.setdefault(tp, []).append(batch)
    if len(by_partition) < 2:
        return batches
    out = []
    queues = [(tp, iter(queue)) for tp, queue in by_partition.items()]
    while queues:
        remaining = []
        for tp, queue in queues:
            batch = next(queue, None)
            if batch is not None:
                out.append((tp, batch))
                remaining.append((tp, queue))
        queues = remaining
    return out


async def hand_over(producer: Any, batch: Any, topic: str, partition: int) -> asyncio.Future[Any]:
    """``producer.send_batch``, waiting for the partition's queue as long as Kafka's
    ``delivery.timeout.ms`` allows when the producer has one (KIP-91).

    aiokafka queues one batch per partition and waits at most ``request.timeout.ms`` for
    the one before it to go out, then raises KafkaTimeoutError without taking the batch.
    A partition without a leader for longer than that (a cluster electing leaders after
    a broker outage) would fail here although the producer still retries what it holds:
    the batch is offered again until the delivery timeout has passed."""
    timeout_ms = delivery_timeout_ms(producer)
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    while True:
        try:
            return await producer.send_batch(batch, topic, partition=partition)
        except KafkaTimeoutError:
            if deadline is None or time.monotonic() >= deadline:
                raise


class RecordCollector:
    def __init__(self, producer: Any, partition_counts: dict[str, int],
                 before_first_send: Callable[[], Awaitable[None]] | None = None,
                 max_request_size: int = 1_048_576) -> None:
        self.producer = producer
        self.max_request_size = max_request_size  # aiokafka's default max_request_size
        self.counts = partition_counts
        self.before_first_send = before_first_send
        self.offsets: dict[tuple[str, int], int] = {}  # next offset after the last delivered
        self._open: dict[tuple[str, int], Any] = {}
        self._ready: list[tuple[tuple[str, int], Any]] = []
        self._unknown: list[tuple[str, bytes | None, bytes | None, int, Headers]] = []
        self._in_flight: list[tuple[tuple[str, int], asyncio.Future[Any], int]] = []
        self._hash_cache: dict[bytes, int] = {}
        self._round_robin = itertools.count()
        self.sent = 0

    # -- the hot path (synchronous) -----------------------------------------------------------

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Headers, partition: int | None) -> tuple[str, int] | None:
        """Buffer one record; return its (topic, partition), None while the topic's partition
        count is unknown (the record is partitioned at ``flush``)."""
        if partition is None:
            count = self.counts.get(topic) or self._cluster_count(topic)
            if not count:  # sent at flush() once metadata is known; refuse oversize now
                self._check_size(topic, key, value, list(headers) if headers else [])
                self._unknown.append((topic, key, value, timestamp, headers))
                return None
            if key is None:
                partition = next(self._round_robin) % count
            else:
                hashed = self._hash_cache.get(key)
                if hashed is None:
                    if len(self._hash_cache) > _CACHE_LIMIT:
                        self._hash_cache.clear()
                    hashed = self._hash_cache[key] = murmur2(key) & 0x7FFFFFFF
                partition = hashed % count
        tp = (topic, partition)
        batch = self._open.get(tp)
        hdrs = list(headers) if headers else []
        if batch is None or batch.append(timestamp=timestamp, key=key, value=value,
                                         headers=hdrs) is None:
            # A record opening a batch may be oversized (a batch always takes its first
            # record): refuse it here, synchronously, as the Java producer does, so the
            # production exception handler sees it with its context.
            self._check_size(topic, key, value, hdrs)
            if batch is not None:
                self._ready.append((tp, batch))
            batch = self._open[tp] = self.producer.create_batch()
            if batch.append(timestamp=timestamp, key=key, value=value, headers=hdrs) is None:
                raise ValueError(f"record for {topic} is larger than max.batch.size")
        self.sent += 1
        return tp

    def _check_size(self, topic: str, key: bytes | None, value: bytes | None,
                    headers: list[Any]) -> None:
        size = record_size(key, value, headers)
        if size > self.max_request_size:
            raise MessageSizeTooLargeError(
                f"the record for {topic} is {size} bytes when serialized, larger than "
                f"max.request.size ({self.max_request_size})")

    def partitions_for(self, topic: str) -> int:
        count = self.counts.get(topic) or self._cluster_count(topic)
        if not count:
            raise RuntimeError(f"no metadata for topic {topic!r}: partition count unknown")
        return count

    def _cluster_count(self, topic: str) -> int:
        parts = self.producer.client.cluster.partitions_for_topic(topic)
        if parts:
            self.counts[topic] = len(parts)
            return len(parts)
        return 0

    # -- the loop edges (async) ---------------------------------------------------------------

    def pending(self) -> bool:
        return bool(self._open or self._ready or self._unknown)

    async def flush(self) -> None:
        """Hand every buffered batch to the producer (does not wait for delivery)."""
        if not self.pending():
            return
        if self.before_first_send is not None:
            await self.before_first_send()
        if self._unknown:
            unknown, self._unknown = self._unknown, []
            for topic, key, value, timestamp, headers in unknown:
                if not self.counts.get(topic):
                    self.counts[topic] = len(await self.producer.partitions_for(topic))
                self.send(topic, key, value, timestamp, headers, None)
        self._ready = _interleaved(self._ready + list(self._open.items()))
        self._open = {}
        # Handed over one by one, each leaving _ready only once the producer took it: if a
        # hand-over fails, what was not taken stays here (discard() drops it on an abort).
        while self._ready:
            (topic, partition), batch = self._ready[0]
            count = batch.record_count()
            if count:
                future = await self._hand_over(batch, topic, partition)
                self._in_flight.append(((topic, partition), future, count))
            self._ready.pop(0)

    async def _hand_over(self, batch: Any, topic: str, partition: int) -> asyncio.Future[Any]:
        return await hand_over(self.producer, batch, topic, partition)

    def take_batches(self) -> list[tuple[tuple[str, int], Any]]:
        """Every buffered batch, taken out of the collector in hand-over order (partitions
        interleaved), for a caller that hands them to the producer itself. Only for records
        whose partition was known at ``send`` (``send`` did not return None)."""
        if self._unknown:
            raise RuntimeError("records of a topic with an unknown partition count are buffered")
        ready = _interleaved(self._ready + list(self._open.items()))
        self._ready = []
        self._open = {}
        return [(tp, batch) for tp, batch in ready if batch.record_count()]

    def has_closed_batches(self) -> bool:
        """Whether a batch filled up since the last ``take_batches``/``take_closed``."""
        return bool(self._ready)

    def take_closed(self) -> list[tuple[tuple[str, int], Any]]:
        """The batches that filled up (no record can join them any more), in the order they
        closed; the open ones stay. For a caller that hands batches over while it is still
        adding records, so the first requests go out before the last record is converted.
        Per partition the order is kept: ``take_batches`` later returns what came after."""
        ready, self._ready = self._ready, []
        return [(tp, batch) for tp, batch in ready if batch.record_count()]

    def take_in_flight(self) -> list[tuple[tuple[str, int], asyncio.Future[Any], int]]:
        """Batches handed over by ``flush`` since the last call, in hand-over order:
        ((topic, partition), future of the batch's base RecordMetadata, record count). For
        callers that track delivery themselves instead of ``wait_delivered``."""
        in_flight, self._in_flight = self._in_flight, []
        return in_flight

    async def wait_delivered(
            self, on_failure: Callable[[tuple[str, int], int, BaseException], None] | None = None
    ) -> None:
        """Wait for every batch handed over so far; remember the offsets they got.

        A batch the producer gave up on raises its error, or, with ``on_failure``, is handed
        to it as ((topic, partition), record count, error): it raises to stop, or returns to
        drop the batch and go on with the rest."""
        in_flight, self._in_flight = self._in_flight, []
        for index, (tp, future, count) in enumerate(in_flight):
            try:
                metadata = await future
            except Exception as exc:
                if on_failure is None:
                    self._in_flight = in_flight[index + 1:] + self._in_flight
                    raise
                try:
                    on_failure(tp, count, exc)
                except BaseException:
                    self._in_flight = in_flight[index + 1:] + self._in_flight
                    raise
                continue
            end = metadata.offset + count
            if end > self.offsets.get(tp, -1):
                self.offsets[tp] = end

    def discard(self) -> None:
        """Drop what was not handed over yet (the transaction is being aborted)."""
        self._open.clear()
        self._ready.clear()
        self._unknown.clear()
        for _tp, future, _count in self._in_flight:
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # mark retrieved
        self._in_flight.clear()
