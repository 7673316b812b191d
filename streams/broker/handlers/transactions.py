"""Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn
(InitProducerId lives with Produce)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..groups.offsets_codec import NO_LEADER_EPOCH, OffsetAndMetadata
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


@handles(28, 0, 3)
async def txn_offset_commit(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    """Offsets committed inside a transaction: checked against the producer and (v3+, KIP-447)
    the group member, then written transactionally; visible once the COMMIT marker lands."""
    wanted = [(t.name, p) for t in request.topics for p in t.partitions]
    code = broker.transactions.check_offsets_commit(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
    )
    if not code:
        code = broker.groups.validate_member(
            request.group_id,
            getattr(request, "generation_id", -1),
            getattr(request, "member_id", "") or "",
            getattr(request, "group_instance_id", None),
        )
    results: dict[tuple[str, int], int] = {}
    if code:
        results = {(name, p.partition_index): code for name, p in wanted}
    else:
        now = int(time.time() * 1000)
        offsets = {
            (name, p.partition_index): OffsetAndMetadata(
                p.committed_offset,
                getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH),
                p.committed_metadata or "",
                now,
            )
            for name, p in wanted
        }
        results = await broker.groups.stage_transactional_offsets(
            request.producer_id, request.producer_epoch, request.group_id, offsets
        )
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for name, p in wanted:
        by_topic.setdefault(name, []).append(
            {"partition_index": p.partition_index, "error_code": results[(name, p.partition_index)]}
        )
    return {
        "throttle_time": 0,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }
