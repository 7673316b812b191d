"""Produce and InitProducerId: validate batches, assign offsets, answer after the ack level."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records import BatchHeader, InvalidBatch, validate_produced
from ..security.authorizer import (
    CLUSTER,
    CLUSTER_NAME,
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from ..storage.log import StorageError
from ..storage.producer_state import ProducerError
from ..topics import INTERNAL_TOPICS, INVALID_TOPIC_EXCEPTION, TopicError
from ..validation import BatchRejected, check_client_batch, check_records
from . import handles, produce_order

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker
    from ..storage.log import PartitionLog

log = logging.getLogger(__name__)

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_REQUIRED_ACKS = 21
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
KAFKA_STORAGE_ERROR = 56
INVALID_RECORD = 87

# Uncompressed record sets with more records than this are checked in a worker thread, so one
# request never holds the event loop for more than a few milliseconds.
INLINE_RECORDS = 8192
# A compressed batch may decompress to at most this many times the topic's max.message.bytes
# (Kafka has no bound; without one a 32 KB zstd batch holding 1 GiB takes 1 GiB of memory).
DECOMPRESSED_LIMIT_FACTOR = 32


def _partition_result(index: int, code: int, message: str | None = None, **extra: Any) -> dict:
    return {
        "index": index,
        "error_code": code,
        "base_offset": extra.get("base_offset", -1),
        "log_append_time": extra.get("log_append_time", -1),
        "log_start_offset": extra.get("log_start_offset", -1),
        "record_errors": extra.get("record_errors", []),
        "error_message": message,
    }


@dataclass(slots=True)
class _Staged:
    """A partition's record set that passed the cheap checks and waits to be appended."""

    topic: str
    index: int
    partition: PartitionLog
    data: bytes
    batches: list[tuple[int, BatchHeader]]
    compacted: bool
    decompressed_limit: int
    in_worker: bool  # the record checks still have to run, in a worker thread


def _stage(broker: Broker, topic_name: str, index: int, records: bytes | None) -> _Staged | dict:
    """Framing, CRC and LogValidator's batch checks; the record walk too unless it is costly."""
    if topic_name in INTERNAL_TOPICS:
        # ReplicaManager.appendToLocalLog: only the coordinators write there (they append to the
        # log directly), or a client could leave records they cannot replay at start.
        return _partition_result(index, INVALID_TOPIC_EXCEPTION,
                                 f"Cannot append to internal topic {topic_name}")
    try:
        partition = broker.topics.partition(topic_name, index)
    except TopicError as exc:
        return _partition_result(index, exc.code, str(exc))
    topic = broker.topics.topics[topic_name]
    data = bytes(records or b"")
    limit = int(broker.topics.effective_config(topic, "max.message.bytes"))
    if len(data) > limit + 61:
        return _partition_result(
            index, MESSAGE_TOO_LARGE, f"record set of {len(data)} bytes exceeds {limit}"
        )
    try:
        batches = validate_produced(data)
        for _pos, header in batches:
            check_client_batch(header)
    except InvalidBatch as exc:
        log.warning("rejected batch for %s-%d: %s", topic_name, index, exc)
        return _partition_result(index, CORRUPT_MESSAGE, str(exc))
    except BatchRejected as exc:
        return _rejected(topic_name, index, exc, partition.log_start_offset)
    staged = _Staged(
        topic_name, index, partition, data, batches,
        "compact" in broker.topics.effective_config(topic, "cleanup.policy"),
        limit * DECOMPRESSED_LIMIT_FACTOR,
        any(h.compression for _, h in batches)
        or sum(h.record_count for _, h in batches) > INLINE_RECORDS,
    )
    if not staged.in_worker:
        rejected = _check_records(staged)
        if rejected is not None:
            return rejected
    return staged


def _check_records(staged: _Staged) -> dict | None:
    """Walk every record (decompressing first); an error result, or None when all are good."""
    try:
        for pos, header in staged.batches:
            check_records(staged.data, pos, header, staged.compacted, staged.decompressed_limit)
    except BatchRejected as exc:
        return _rejected(staged.topic, staged.index, exc, staged.partition.log_start_offset)
    return None


def _rejected(topic: str, index: int, exc: BatchRejected, log_start_offset: int) -> dict:
    """A record validation failure; like Kafka's ReplicaManager it names the log start offset
    (only framing, size and unknown-partition errors answer -1)."""
    log.warning("rejected batch for %s-%d: %s", topic, index, exc.message)
    errors = [{"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors]
    return _partition_result(index, exc.code, exc.message, record_errors=errors,
                             log_start_offset=log_start_offset)


def append_partition(
    broker: Broker, topic_name: str, index: int, records: bytes | None
) -> tuple[dict[str, Any], PartitionLog | None]:
    """Validate and append one partition's record set right now (every check inline);
    returns (result, log or None)."""
    staged = _stage(broker, topic_name, index, records)
    if isinstance(staged, dict):
        return staged, None
    if staged.in_worker:
        rejected = _check_records(staged)
        if rejected is not None:
            return rejected, None
    return _append(broker, staged)


def _append(broker: Broker, staged: _Staged) -> tuple[dict[str, Any], PartitionLog | None]:
    """Producer-state checks, then the append; returns (result, log or None)."""
    partition, index = staged.partition, staged.index
    for _pos, header in staged.batches:
        if header.is_transactional:
            code = broker.transactions.verify_produce(
                header.producer_id, header.producer_epoch, staged.topic, index
            )
            if code:  # refused before the log is asked (KIP-890 verification): offsets -1
                return _partition_result(
                    index, code, "transactional batch rejected by the coordinator"), None
    try:
        for _pos, header in staged.batches:
            duplicate = partition.producer_state.check(header)
            if duplicate is not None:
                if len(staged.batches) == 1:
                    return _partition_result(
                        index,
                        0,
                        base_offset=duplicate.base_offset,
                        log_start_offset=partition.log_start_offset,
                    ), None
                raise ProducerError(45, "duplicate batch inside a multi-batch record set")
    except ProducerError as exc:
        return _partition_result(index, exc.code, str(exc),
                                 log_start_offset=partition.log_start_offset), None
    try:
        result = partition.append(bytearray(staged.data), staged.batches)
    except StorageError as exc:  # logged once by the log, not per request
        return _partition_result(index, KAFKA_STORAGE_ERROR, str(exc)), None
    stats = broker.metrics.topic(staged.topic)  # BrokerTopicMetrics MessagesIn / BytesIn
    stats.messages_in += sum(header.record_count for _pos, header in staged.batches)
    stats.bytes_in += len(staged.data)
    return (
        _partition_result(
            index,
            0,
            base_offset=result.base_offset,
            log_append_time=result.log_append_time,
            log_start_offset=result.log_start_offset,
        ),
        partition,
    )


async def _append_in_turn(
    broker: Broker,
    staged: _Staged,
    result: dict[str, Any],
    previous: asyncio.Future[None] | None,
    mine: asyncio.Future[None],
) -> PartitionLog | None:
    """Check in a worker if needed, then append once the requests before this one have."""
    try:
        if staged.in_worker:
            rejected = await produce_order.in_worker(_check_records, staged)
            if rejected is not None:
                result.update(rejected)
                return None
        await produce_order.wait_turn(previous)
        outcome, partition = _append(broker, staged)
        result.update(outcome)
        return partition
    finally:
        produce_order.leave(staged.partition, mine)


async def _flush(partition: PartitionLog, result: dict[str, Any]) -> None:
    try:
        await partition.flush_to(partition.next_offset)
    except StorageError as exc:
        result.update(error_code=KAFKA_STORAGE_ERROR, error_message=str(exc))


def _refuse_request(request: Any) -> dict[str, Any] | None:
    """Kafka's request-level refusals (KafkaApis.handleProduceRequest, ReplicaManager.
    appendRecords): every partition gets the same error and nothing is appended."""
    if request.transactional_id is None and any(
        _first_batch_transactional(p.records)
        for t in request.topic_data for p in t.partition_data
    ):
        code = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif request.acks not in (-1, 0, 1):
        code = INVALID_REQUIRED_ACKS
    else:
        return None
    return _refusal(request, code)


def _refusal(request: Any, code: int) -> dict[str, Any]:
    return {"throttle_time": 0, "responses": [
        {"name": t.name, "partition_responses": [_partition_result(p.index, code)
                                                 for p in t.partition_data]}
        for t in request.topic_data
    ]}


def _first_batch_transactional(records: bytes | None) -> bool:
    """The transactional flag of the first batch (attributes, bytes 21-22, after baseOffset,
    length, leaderEpoch, magic and crc), control batches included as in Kafka's
    ProduceRequest.hasTransactionalRecords: without a transactional id such a request fails
    authorization before any record is validated."""
    return records is not None and len(records) >= 23 and bool(records[22] & 0x10)


@handles(0, 3, 9)
async def produce(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    refused = _refuse_request(request)
    if refused is None and request.transactional_id is not None and \
            not broker.security.allowed(ctx, WRITE, TRANSACTIONAL_ID, request.transactional_id):
        refused = _refusal(request, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if refused is not None:
        return None if request.acks == 0 else refused
    responses = []
    appended: list[tuple[PartitionLog, dict[str, Any]]] = []
    queued: list[tuple[_Staged, dict[str, Any], tuple[Any, asyncio.Future[None]]]] = []
    for topic in request.topic_data:
        partition_results = []
        writable = broker.security.allowed(ctx, WRITE, TOPIC, topic.name)
        for pdata in topic.partition_data:
            if not writable:  # before existence: an unauthorized caller learns nothing
                partition_results.append(_partition_result(pdata.index,
                                                           TOPIC_AUTHORIZATION_FAILED))
                continue
            staged = _stage(broker, topic.name, pdata.index, pdata.records)
            if isinstance(staged, dict):
                result = staged
            elif staged.in_worker or produce_order.busy(staged.partition):
                # Our place in the partition's queue is taken now, before the first await.
                result = _partition_result(pdata.index, 0)
                queued.append((staged, result, produce_order.enter(staged.partition)))
            else:
                result, partition = _append(broker, staged)
                if partition is not None:
                    appended.append((partition, result))
            partition_results.append(result)
        responses.append({"name": topic.name, "partition_responses": partition_results})
    if queued:
        try:
            logs = await asyncio.gather(*(
                _append_in_turn(broker, staged, result, *place)
                for staged, result, place in queued
            ))
        finally:
            for staged, _result, (_previous, mine) in queued:
                produce_order.leave(staged.partition, mine)
        appended += [
            (plog, result) for plog, (_s, result, _p) in zip(logs, queued, strict=True) if plog
        ]
    if request.acks == -1 and appended:
        await asyncio.gather(*(_flush(plog, result) for plog, result in appended))
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time": 0}


@handles(22, 0, 4)
async def init_producer_id(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    security = broker.security
    if request.transactional_id is not None:
        if not security.allowed(ctx, WRITE, TRANSACTIONAL_ID, request.transactional_id):
            return {"throttle_time": 0, "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "producer_id": -1, "producer_epoch": -1}
        return await broker.transactions.init_producer_id(ctx.api_version, request)
    # KIP-679: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic, allows idempotence.
    if not (security.allowed(ctx, IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME, audit=False)
            or security.any_allowed(ctx, WRITE, TOPIC)):
        return {"throttle_time": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    return {
        "throttle_time": 0,
        "error_code": 0,
        "producer_id": broker.producer_ids.new_producer_id(),
        "producer_epoch": 0,
    }
