"""Group APIs: FindCoordinator, Join/Sync/Heartbeat/LeaveGroup, OffsetCommit/OffsetFetch,
OffsetDelete, DescribeGroups, ListGroups, DeleteGroups.

Handlers only translate between wire versions and the coordinator (streams.broker.groups); all
rules live there. Fields a version lacks are read with getattr and dropped on the way out.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..groups import errors
from ..groups.coordinator import JoinRequest
from ..groups.offsets_codec import NO_LEADER_EPOCH, OffsetAndMetadata
from ..protocol import ms
from ..security.authorizer import (
    CLUSTER,
    CLUSTER_NAME,
    DELETE,
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
)
from . import handles
from .authorized import GROUP_OPERATIONS, NOT_REQUESTED

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def _group_ok(broker: Broker, ctx: RequestContext, operation: int, group_id: str) -> bool:
    return broker.security.allowed(ctx, operation, GROUP, group_id)


def _client_host(ctx: RequestContext) -> str:
    return ctx.client_host


# -- FindCoordinator ----------------------------------------------------------------------------


@handles(10, 0, 6)
async def find_coordinator(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    key_type = getattr(request, "key_type", KEY_TYPE_GROUP)
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [request.key]
    if key_type == KEY_TYPE_GROUP:
        broker.groups.offsets.ensure_topic()
    if key_type in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
        host, port = broker.advertised(ctx)
        found = {"error_code": errors.NONE, "error_message": None, "node_id": broker.node_id,
                 "host": host, "port": port}
    else:
        found = {"error_code": errors.INVALID_REQUEST,
                 "error_message": f"unknown coordinator key type {key_type}",
                 "node_id": -1, "host": "", "port": -1}
    def answer(key: str) -> dict[str, Any]:
        resource = GROUP if key_type == KEY_TYPE_GROUP else TRANSACTIONAL_ID
        if key_type in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION) and \
                not broker.security.allowed(ctx, DESCRIBE, resource, key):
            code = GROUP_AUTHORIZATION_FAILED if resource == GROUP else \
                TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return {"error_code": code, "error_message": None, "node_id": -1, "host": "",
                    "port": -1}
        return found

    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": [{"key": key, **answer(key)}
                                                     for key in keys]}
    return {"throttle_time": 0, **answer(keys[0])}


# -- membership ---------------------------------------------------------------------------------


@handles(11, 0, 9)
async def join_group(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not _group_ok(broker, ctx, READ, request.group_id):
        return {"throttle_time": 0, "error_code": GROUP_AUTHORIZATION_FAILED,
                "generation_id": -1, "leader": "", "member_id": request.member_id or "",
                "members": []}
    session_ms = ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    req = JoinRequest(
        group_id=request.group_id,
        member_id=request.member_id or "",
        group_instance_id=getattr(request, "group_instance_id", None),
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=ms(rebalance) if rebalance is not None else session_ms,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
        client_id=ctx.client_id or "",
        client_host=_client_host(ctx),
        require_known_member_id=ctx.api_version >= 4,
        reason=getattr(request, "reason", None),
    )
    result = await broker.groups.join_group(req)
    # A static leader that rejoins a Stable group gets the members too (KIP-814); before v9 it
    # cannot be told to skip assigning, but SyncGroup on a Stable group ignores its plan.
    members = result.members
    body: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        "leader": result.leader,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [
            {"member_id": mid, "group_instance_id": iid, "metadata": metadata}
            for mid, iid, metadata in members
        ],
    }
    # Left out when unknown: protocol.py then writes null (v7+) or "" (older versions).
    if result.protocol_type is not None:
        body["protocol_type"] = result.protocol_type
    if result.protocol_name is not None:
        body["protocol_name"] = result.protocol_name
    return body


@handles(14, 0, 5)
async def sync_group(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not _group_ok(broker, ctx, READ, request.group_id):
        return {"throttle_time": 0, "error_code": GROUP_AUTHORIZATION_FAILED,
                "assignment": b""}
    result = await broker.groups.sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        {a.member_id: bytes(a.assignment) for a in request.assignments},
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
    )
    body: dict[str, Any] = {"throttle_time": 0, "error_code": result.error,
                            "assignment": result.assignment}
    if result.protocol_type is not None:
        body["protocol_type"] = result.protocol_type
    if result.protocol_name is not None:
        body["protocol_name"] = result.protocol_name
    return body


@handles(12, 0, 4)
async def heartbeat(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not _group_ok(broker, ctx, READ, request.group_id):
        return {"throttle_time": 0, "error_code": GROUP_AUTHORIZATION_FAILED}
    error = broker.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                    getattr(request, "group_instance_id", None))
    return {"throttle_time": 0, "error_code": error}


@handles(13, 0, 5)
async def leave_group(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not _group_ok(broker, ctx, READ, request.group_id):
        return {"throttle_time": 0, "error_code": GROUP_AUTHORIZATION_FAILED, "members": []}
    if ctx.api_version >= 3:
        leaving = [(m.member_id or "", m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    top, per_member = broker.groups.leave_group(request.group_id, leaving)
    if ctx.api_version < 3 and top == errors.NONE and per_member:
        top = per_member[0]  # single-member versions report the member's error at the top
    return {
        "throttle_time": 0,
        "error_code": top,
        "members": [
            {"member_id": mid, "group_instance_id": iid, "error_code": error}
            for (mid, iid), error in zip(leaving, per_member, strict=False)
        ],
    }


# -- offsets ------------------------------------------------------------------------------------


@handles(8, 2, 9)
async def offset_commit(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    order: list[tuple[str, list[int]]] = []
    now = _now_ms()
    refused: dict[tuple[str, int], int] = {}
    group_ok = _group_ok(broker, ctx, READ, request.group_id)
    for topic in request.topics:
        indexes = []
        topic_ok = group_ok and broker.security.allowed(ctx, READ, TOPIC, topic.name)
        for p in topic.partitions:
            indexes.append(p.partition_index)
            if not topic_ok:
                refused[(topic.name, p.partition_index)] = TOPIC_AUTHORIZATION_FAILED \
                    if group_ok else GROUP_AUTHORIZATION_FAILED
                continue
            offsets[(topic.name, p.partition_index)] = OffsetAndMetadata(
                p.committed_offset,
                getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH),
                p.committed_metadata or "",
                now,
            )
        order.append((topic.name, indexes))
    results: dict[tuple[str, int], int] = dict(refused)
    if offsets or not refused:
        results.update(await broker.groups.commit_offsets(
            request.group_id,
            request.generation_id_or_member_epoch,
            request.member_id or "",
            getattr(request, "group_instance_id", None),
            offsets,
            errors.GROUP_ID_NOT_FOUND if ctx.api_version >= 9 else errors.ILLEGAL_GENERATION,
            ctx.api_version,
        ))
    return {
        "throttle_time": 0,
        "topics": [
            {"name": name, "partitions": [
                {"partition_index": index, "error_code": results[(name, index)]}
                for index in indexes
            ]}
            for name, indexes in order
        ],
    }


def _fetch_group(broker: Broker, ctx: RequestContext, group_id: str, topics: Any,
                 require_stable: bool) -> list[dict[str, Any]]:
    """One group's OffsetFetch answer, as the list of topics with their partitions. Topics
    need DESCRIBE: named ones are refused per partition, unnamed (all) ones left out."""
    wanted = None
    by_topic: dict[str, list[dict[str, Any]]] = {}
    if topics is not None:
        wanted = []
        for t in topics:
            if broker.security.allowed(ctx, DESCRIBE, TOPIC, t.name):
                wanted += [(t.name, index) for index in t.partition_indexes]
            else:
                by_topic[t.name] = [{"partition_index": index, "committed_offset": -1,
                                     "committed_leader_epoch": NO_LEADER_EPOCH, "metadata": "",
                                     "error_code": TOPIC_AUTHORIZATION_FAILED}
                                    for index in t.partition_indexes]
    for (topic, partition), value, error in broker.groups.fetch_offsets(
            group_id, wanted, require_stable):
        if wanted is None and not broker.security.allowed(ctx, DESCRIBE, TOPIC, topic,
                                                          audit=False):
            continue
        by_topic.setdefault(topic, []).append({
            "partition_index": partition,
            "committed_offset": value.offset if value else -1,
            "committed_leader_epoch": value.leader_epoch if value else NO_LEADER_EPOCH,
            "metadata": value.metadata if value else "",
            "error_code": error,
        })
    return [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


@handles(9, 1, 9)
async def offset_fetch(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    require_stable = bool(getattr(request, "require_stable", False))

    def one(group_id: str, topics: Any) -> tuple[int, list[dict[str, Any]]]:
        if not _group_ok(broker, ctx, DESCRIBE, group_id):
            return GROUP_AUTHORIZATION_FAILED, []
        return errors.NONE, _fetch_group(broker, ctx, group_id, topics, require_stable)

    if ctx.api_version >= 8:
        groups = []
        for g in request.groups:
            code, topics = one(g.group_id, g.topics)
            groups.append({"group_id": g.group_id, "error_code": code, "topics": topics})
        return {"throttle_time": 0, "groups": groups}
    code, topics = one(request.group_id, request.topics)
    return {"throttle_time": 0, "error_code": code, "topics": topics}


@handles(47, 0, 0)
async def offset_delete(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not _group_ok(broker, ctx, DELETE, request.group_id):
        return {"error_code": GROUP_AUTHORIZATION_FAILED, "throttle_time": 0, "topics": []}
    wanted, refused = [], {}
    for t in request.topics:
        readable = broker.security.allowed(ctx, READ, TOPIC, t.name)
        for p in t.partitions:
            if readable:
                wanted.append((t.name, p.partition_index))
            else:
                refused[(t.name, p.partition_index)] = TOPIC_AUTHORIZATION_FAILED
    error, results = await broker.groups.delete_group_offsets(request.group_id, wanted)
    results = {**refused, **results}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": code})
    return {"error_code": error, "throttle_time": 0,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}


# -- admin --------------------------------------------------------------------------------------


@handles(15, 0, 5)
async def describe_groups(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    groups = []
    requested = bool(getattr(request, "include_authorized_operations", False))
    for group_id in request.groups:
        if not _group_ok(broker, ctx, DESCRIBE, group_id):
            groups.append({"error_code": GROUP_AUTHORIZATION_FAILED, "group_id": group_id,
                           "group_state": "", "protocol_type": "", "protocol_data": "",
                           "members": [], "authorized_operations": NOT_REQUESTED})
            continue
        summary = broker.groups.describe(group_id)
        groups.append({
            "error_code": errors.NONE,
            "group_id": group_id,
            "group_state": summary.state,
            "protocol_type": summary.protocol_type,
            "protocol_data": summary.protocol_name,
            "members": [
                {"member_id": mid, "group_instance_id": iid, "client_id": client_id,
                 "client_host": host, "member_metadata": metadata,
                 "member_assignment": assignment}
                for mid, iid, client_id, host, metadata, assignment in summary.members
            ],
            "authorized_operations": broker.security.authorized_operations(
                ctx, GROUP, group_id, GROUP_OPERATIONS) if requested else NOT_REQUESTED,
        })
    return {"throttle_time": 0, "groups": groups}


@handles(16, 0, 5)
async def list_groups(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    states = {s.lower() for s in getattr(request, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(request, "types_filter", ()) or ()}
    groups = []
    # DESCRIBE on the cluster lists every group; otherwise only the describable ones.
    everything = broker.security.allowed(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME, audit=False)
    for listed in broker.groups.list_groups():
        if not everything and not broker.security.allowed(ctx, DESCRIBE, GROUP, listed.group_id,
                                                          audit=False):
            continue
        if states and listed.state.lower() not in states:
            continue
        if types and listed.group_type.value not in types:
            continue
        groups.append({"group_id": listed.group_id, "protocol_type": listed.protocol_type,
                       "group_state": listed.state, "group_type": listed.group_type.value})
    return {"throttle_time": 0, "error_code": errors.NONE, "groups": groups}


@handles(42, 0, 2)
async def delete_groups(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    names = list(request.groups_names)
    allowed = [gid for gid in names if _group_ok(broker, ctx, DELETE, gid)]
    results = await broker.groups.delete_groups(allowed) if allowed else {}
    return {
        "throttle_time": 0,
        "results": [{"group_id": gid, "error_code": results.get(gid, GROUP_AUTHORIZATION_FAILED)}
                    for gid in dict.fromkeys(names)],
    }


def _now_ms() -> int:
    return int(time.time() * 1000)
