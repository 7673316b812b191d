"""Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (InitProducerId lives with
Produce; TxnOffsetCommit with the group APIs' offset store)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker


@handles(24, 0, 3)
async def add_partitions_to_txn(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    codes = await broker.transactions.add_partitions(
        ctx.api_version,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        wanted,
    )
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": code}
        )
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": [
            {"name": name, "results_by_partition": results} for name, results in by_topic.items()
        ],
    }


@handles(25, 0, 3)
async def add_offsets_to_txn(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    code = await broker.transactions.add_offsets(
        ctx.api_version, request.transactional_id, request.producer_id, request.producer_epoch,
        request.group_id,
    )
    return {"throttle_time": 0, "error_code": code}


@handles(26, 0, 3)
async def end_txn(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    code = await broker.transactions.end_txn(
        ctx.api_version, request.transactional_id, request.producer_id, request.producer_epoch,
        request.committed,
    )
    return {"throttle_time": 0, "error_code": code}
