"""Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn
(InitProducerId lives with Produce)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..groups.offsets_codec import NO_LEADER_EPOCH, OffsetAndMetadata
from ..security.authorizer import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
OPERATION_NOT_ATTEMPTED = 55


def _txn_ok(broker: Broker, ctx: RequestContext, transactional_id: str) -> bool:
    return broker.security.allowed(ctx, WRITE, TRANSACTIONAL_ID, transactional_id)


@handles(24, 0, 3)
async def add_partitions_to_txn(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    denied = {t.name for t in request.v3_and_below_topics
              if not broker.security.allowed(ctx, WRITE, TOPIC, t.name)}
    if not _txn_ok(broker, ctx, request.v3_and_below_transactional_id):
        codes = dict.fromkeys(wanted, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif denied:  # Kafka adds nothing then; the authorized partitions were not attempted
        codes = {(name, p): TOPIC_AUTHORIZATION_FAILED if name in denied
                 else OPERATION_NOT_ATTEMPTED for name, p in wanted}
    else:
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
    if not _txn_ok(broker, ctx, request.transactional_id):
        return {"throttle_time": 0, "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not broker.security.allowed(ctx, READ, GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": GROUP_AUTHORIZATION_FAILED}
    code = await broker.transactions.add_offsets(
        ctx.api_version, request.transactional_id, request.producer_id, request.producer_epoch,
        request.group_id,
    )
    return {"throttle_time": 0, "error_code": code}


@handles(26, 0, 3)
async def end_txn(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    if not _txn_ok(broker, ctx, request.transactional_id):
        return {"throttle_time": 0, "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
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
    refused: dict[tuple[str, int], int] = {}
    code = 0
    if not _txn_ok(broker, ctx, request.transactional_id):
        code = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not broker.security.allowed(ctx, READ, GROUP, request.group_id):
        code = GROUP_AUTHORIZATION_FAILED
    else:
        denied = {t.name for t in request.topics
                  if not broker.security.allowed(ctx, READ, TOPIC, t.name)}
        refused = {(name, p.partition_index): TOPIC_AUTHORIZATION_FAILED
                   for name, p in wanted if name in denied}
        wanted = [(name, p) for name, p in wanted if name not in denied]
        code = broker.transactions.check_offsets_commit(
            request.transactional_id, request.producer_id, request.producer_epoch,
            request.group_id)
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
        ) if offsets else {}
    results.update(refused)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for name, p in [(t.name, p) for t in request.topics for p in t.partitions]:
        by_topic.setdefault(name, []).append(
            {"partition_index": p.partition_index, "error_code": results[(name, p.partition_index)]}
        )
    return {
        "throttle_time": 0,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }
