"""Produce and InitProducerId: validate batches, assign offsets, answer after the ack level."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..compression import CodecError
from ..records import BatchHeader, InvalidBatch, decode_records, validate_produced
from ..storage.producer_state import ProducerError
from ..topics import TopicError
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

log = logging.getLogger(__name__)

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TRANSACTION_TIMEOUT = 50
UNKNOWN_SERVER_ERROR = -1
INVALID_RECORD = 87


def _partition_result(index: int, code: int, message: str | None = None, **extra: Any) -> dict:
    result = {
        "index": index,
        "error_code": code,
        "base_offset": extra.get("base_offset", -1),
        "log_append_time": extra.get("log_append_time", -1),
        "log_start_offset": extra.get("log_start_offset", -1),
        "record_errors": [],
        "error_message": message,
    }
    return result


def append_partition(
    broker: Broker, topic_name: str, index: int, records: bytes | None
) -> tuple[dict[str, Any], Any]:
    """Validate and append one partition's record set; returns (result, log or None)."""
    try:
        partition = broker.topics.partition(topic_name, index)
    except TopicError as exc:
        return _partition_result(index, exc.code, str(exc)), None
    topic = broker.topics.topics[topic_name]
    data = bytes(records or b"")
    limit = int(broker.topics.effective_config(topic, "max.message.bytes"))
    if len(data) > limit + 61:
        return _partition_result(
            index, MESSAGE_TOO_LARGE, f"record set of {len(data)} bytes exceeds {limit}"
        ), None
    try:
        batches = validate_produced(data)
    except InvalidBatch as exc:
        log.warning("rejected batch for %s-%d: %s", topic_name, index, exc)
        return _partition_result(index, CORRUPT_MESSAGE, str(exc)), None
    if "compact" in broker.topics.effective_config(topic, "cleanup.policy"):
        problem = _keyless_record(data, batches)
        if problem:
            return _partition_result(index, INVALID_RECORD, problem), None
    try:
        for _pos, header in batches:
            if header.is_transactional:
                code = broker.transactions.verify_produce(
                    header.producer_id, header.producer_epoch, topic_name, index
                )
                if code:
                    raise ProducerError(code, "transactional batch rejected by the coordinator")
            duplicate = partition.producer_state.check(header)
            if duplicate is not None:
                if len(batches) == 1:
                    return _partition_result(
                        index,
                        0,
                        base_offset=duplicate.base_offset,
                        log_start_offset=partition.log_start_offset,
                    ), None
                raise ProducerError(45, "duplicate batch inside a multi-batch record set")
    except ProducerError as exc:
        return _partition_result(index, exc.code, str(exc)), None
    result = partition.append(bytearray(data), batches)
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


def _keyless_record(data: bytes, batches: list[tuple[int, BatchHeader]]) -> str | None:
    """Compacted topics need a key on every record (Kafka answers INVALID_RECORD)."""
    for pos, header in batches:
        if header.is_control:
            continue
        try:
            records = decode_records(data[pos : pos + header.size])
        except (CodecError, IndexError, ValueError) as exc:
            return f"cannot read records to check keys: {exc}"
        if any(r.key is None for r in records):
            return "compacted topic requires a non-null key on every record"
    return None


@handles(0, 3, 9)
async def produce(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    responses = []
    to_flush = []
    for topic in request.topic_data:
        partition_results = []
        for pdata in topic.partition_data:
            result, partition = append_partition(broker, topic.name, pdata.index, pdata.records)
            partition_results.append(result)
            if partition is not None and request.acks == -1:
                to_flush.append(partition.flush_to(partition.next_offset))
        responses.append({"name": topic.name, "partition_responses": partition_results})
    if to_flush:
        await asyncio.gather(*to_flush)
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time": 0}


@handles(22, 0, 4)
async def init_producer_id(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if request.transactional_id is not None:
        return await broker.transactions.init_producer_id(ctx.api_version, request)
    return {
        "throttle_time": 0,
        "error_code": 0,
        "producer_id": broker.producer_ids.new_producer_id(),
        "producer_epoch": 0,
    }
