"""Fetch (with long-polling) and ListOffsets."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from ..protocol import ms
from ..records import iter_batches
from ..security.authorizer import DESCRIBE, READ, TOPIC
from ..storage.files import FILES, LOG
from ..storage.slices import FileSlice, Frame
from ..storage.timestamps import record_with_timestamp
from ..topics import TopicError
from . import handles
from .fetch_response import encode_fetch

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker
    from ..storage.log import PartitionLog

OFFSET_OUT_OF_RANGE = 1
TOPIC_AUTHORIZATION_FAILED = 29
READ_COMMITTED = 1
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


# Record sets at least this big go out with sendfile(2) straight from the segment file; smaller
# ones are copied, which costs less than the extra system calls (Kafka sends every one through
# FileChannel.transferTo).
ZERO_COPY_MIN_BYTES = 16 * 1024


def _read_partitions(
    broker: Broker, request: Any, denied: frozenset[str] = frozenset()
) -> tuple[list[dict[str, Any]], int, list[PartitionLog]]:
    """Every partition's answer; its ``records`` are located, not read: (segment, start, stop)
    or b"", so that a long poll that wakes up reads no record bytes until it answers."""
    budget = request.max_bytes if request.max_bytes > 0 else 1 << 62
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    total = 0
    responses = []
    logs = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition,
                "error_code": 0,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if read_committed else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            partitions.append(entry)
            if topic.topic in denied:  # READ refused: checked before existence, as Kafka
                entry["error_code"] = TOPIC_AUTHORIZATION_FAILED
                continue
            try:
                log = broker.topics.partition(topic.topic, p.partition)
            except TopicError as exc:
                entry["error_code"] = exc.code
                continue
            logs.append(log)
            hw = log.next_offset
            lso = log.last_stable_offset
            entry.update(high_watermark=hw, last_stable_offset=lso,
                         log_start_offset=log.log_start_offset)
            if p.fetch_offset < log.log_start_offset or p.fetch_offset > hw:
                # Kafka answers an error partition with unknown (-1) offsets.
                entry.update(error_code=OFFSET_OUT_OF_RANGE, high_watermark=-1,
                             last_stable_offset=-1, log_start_offset=-1)
                continue
            upper = lso if read_committed else hw
            # KIP-74: the first partition with data may exceed max_bytes by one whole batch.
            limit = min(p.partition_max_bytes, budget - total)
            if limit <= 0 and total > 0:
                continue
            found = log.locate(p.fetch_offset, max(limit, 1), upper)
            if found is None:
                continue
            if read_committed:
                entry["aborted_transactions"] = log.aborted_transactions(p.fetch_offset, upper)
            entry["records"] = found
            total += found[2] - found[1]
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total, logs


def _materialize(responses: list[dict[str, Any]], metrics: Any = None) -> None:
    """Turn located record sets into pinned file slices (big ones) or bytes (small ones).
    A connection that cannot use sendfile (TLS) reads the slices when it writes them.

    Runs right after the last ``_read_partitions`` with no await in between, so no segment
    was deleted since it was located; from here the pins keep the files readable.
    """
    for topic in responses:
        for entry in topic["partitions"]:
            found = entry["records"]
            if type(found) is not tuple:
                continue
            segment, start, stop = found
            if metrics is not None:  # BrokerTopicMetrics BytesOut
                metrics.topic(topic["topic"]).bytes_out += stop - start
            if stop - start >= ZERO_COPY_MIN_BYTES:
                entry["records"] = FileSlice(FILES.acquire(segment, LOG), start, stop - start)
            else:
                entry["records"] = segment.read_range(start, stop)


@handles(1, 4, 12)
async def fetch(broker: Broker, ctx: RequestContext, request: Any) -> Frame:
    """Long-polls until min_bytes are there (or max_wait passes), then answers with a Frame:
    the connection sends big record sets from the segment files with sendfile(2)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms(request.max_wait) / 1000
    denied = frozenset(t.topic for t in request.topics
                       if not broker.security.allowed(ctx, READ, TOPIC, t.topic))
    while True:
        responses, total, logs = _read_partitions(broker, request, denied)
        remaining = deadline - loop.time()
        errors = any(p["error_code"] for t in responses for p in t["partitions"])
        satisfied = request.min_bytes <= 0 or (total > 0 and total >= request.min_bytes)
        if satisfied or remaining <= 0 or errors or not logs:
            break
        waiters = []
        for log in logs:
            waiter = loop.create_future()
            log.data_waiters.append(waiter)
            waiters.append((log, waiter))
        try:
            await asyncio.wait([w for _, w in waiters], timeout=remaining,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for log, waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
                    with contextlib.suppress(ValueError):
                        log.data_waiters.remove(waiter)
    _materialize(responses, broker.metrics)
    return encode_fetch(ctx.api_version, ctx.correlation_id,
                        {"throttle_time": 0, "error_code": 0, "session_id": 0,
                         "responses": responses})


def _max_timestamp_offset(log: PartitionLog, batch_offset: int, timestamp: int) -> int:
    """The exact record: the time index knows only the batch that reached the maximum."""
    if batch_offset < 0:
        return batch_offset
    segment = log.segment_for(batch_offset)
    data = segment.read(batch_offset, 1) if segment is not None else b""
    for pos, header in iter_batches(data):
        if header.base_offset <= batch_offset <= header.last_offset:
            return record_with_timestamp(data[pos : pos + header.size], timestamp)
    return batch_offset


@handles(2, 1, 7)
async def list_offsets(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    topics = []
    for topic in request.topics:
        partitions = []
        describable = broker.security.allowed(ctx, DESCRIBE, TOPIC, topic.name)
        for p in topic.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1,
                     "offset": -1, "leader_epoch": 0}
            partitions.append(entry)
            if not describable:
                entry.update(error_code=TOPIC_AUTHORIZATION_FAILED, leader_epoch=-1)
                continue
            try:
                log = broker.topics.partition(topic.name, p.partition_index)
            except TopicError as exc:
                entry["error_code"] = exc.code
                continue
            if p.timestamp == LATEST:
                entry["offset"] = log.last_stable_offset if read_committed else log.next_offset
            elif p.timestamp == EARLIEST:
                entry["offset"] = log.log_start_offset
            elif p.timestamp == MAX_TIMESTAMP:
                offset, ts = log.max_timestamp()
                entry.update(offset=_max_timestamp_offset(log, offset, ts), timestamp=ts)
            else:
                found = log.offset_for_timestamp(p.timestamp)
                if found is not None:
                    entry.update(offset=found[0], timestamp=found[1])
            if entry["offset"] == -1:
                entry["leader_epoch"] = -1  # no offset found: no epoch either (as Kafka)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
