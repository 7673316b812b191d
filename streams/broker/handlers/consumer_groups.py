"""KIP-848 consumer-group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Handlers translate topic ids and versions; the rules live in streams.broker.groups.consumer.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..groups import errors
from ..groups.consumer import ConsumerGroups, HeartbeatRequest
from ..groups.protocols import GroupType
from ..protocol import ms
from ..security.authorizer import DESCRIBE, GROUP, READ
from . import handles
from .authorized import GROUP_OPERATIONS, NOT_REQUESTED

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

GROUP_AUTHORIZATION_FAILED = 30
# ConsumerGroupDescribe v1's MemberType: the member uses the consumer (1) or classic (0) protocol
MEMBER_TYPE_CONSUMER = 1
MEMBER_TYPE_CLASSIC = 0


def _consumer_groups(broker: Broker) -> ConsumerGroups:
    protocol = broker.groups.protocol(GroupType.CONSUMER)
    assert isinstance(protocol, ConsumerGroups)
    return protocol


def _names_by_id(broker: Broker) -> dict[uuid.UUID, str]:
    return {t.topic_id: name for name, t in broker.topics.topics.items()}


def _by_topic_id(broker: Broker, partitions: Any) -> list[dict[str, Any]]:
    ids = {name: t.topic_id for name, t in broker.topics.topics.items()}
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic_id": ids[topic], "partitions": sorted(parts)}
            for topic, parts in sorted(by_topic.items()) if topic in ids]


@handles(68, 0, 1)
async def consumer_group_heartbeat(broker: Broker, ctx: RequestContext, request: Any
                                   ) -> dict[str, Any]:
    def refuse(code: int, message: str | None = None) -> dict[str, Any]:
        return {"throttle_time": 0, "error_code": code, "error_message": message,
                "member_id": request.member_id or None, "member_epoch": 0,
                "heartbeat_interval": 0, "assignment": None}

    if not broker.security.allowed(ctx, READ, GROUP, request.group_id):
        return refuse(GROUP_AUTHORIZATION_FAILED)
    member_id = request.member_id
    if ctx.api_version == 0 and not member_id and request.member_epoch == 0:
        member_id = str(uuid.uuid4())  # v0: the coordinator names new members
    owned = None
    if request.topic_partitions is not None:
        names = _names_by_id(broker)
        owned = frozenset((names[t.topic_id], p) for t in request.topic_partitions
                          if t.topic_id in names for p in t.partitions)
    req = HeartbeatRequest(
        group_id=request.group_id, member_id=member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=ms(request.rebalance_timeout),
        subscribed_topic_names=tuple(request.subscribed_topic_names)
        if request.subscribed_topic_names is not None else None,
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=owned,
        client_id=ctx.client_id or "", client_host=ctx.client_host)
    result = _consumer_groups(broker).heartbeat(req)
    return {
        "throttle_time": 0, "error_code": result.error, "error_message": result.message,
        "member_id": result.member_id or None, "member_epoch": result.member_epoch,
        "heartbeat_interval": result.heartbeat_interval_ms,
        "assignment": None if result.assignment is None else
        {"topic_partitions": _by_topic_id(broker, result.assignment)},
    }


@handles(69, 0, 1)
async def consumer_group_describe(broker: Broker, ctx: RequestContext, request: Any
                                  ) -> dict[str, Any]:
    consumer = _consumer_groups(broker)
    requested = bool(request.include_authorized_operations)
    ids = {name: t.topic_id for name, t in broker.topics.topics.items()}

    def assignment(partitions: Any) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        return {"topic_partitions": [
            {"topic_id": ids[t], "topic_name": t, "partitions": sorted(p)}
            for t, p in sorted(by_topic.items()) if t in ids]}

    groups = []
    for group_id in request.group_ids:
        empty = {"group_id": group_id, "group_state": "", "group_epoch": 0,
                 "assignment_epoch": 0, "assignor_name": "", "members": [],
                 "authorized_operations": NOT_REQUESTED}
        if not broker.security.allowed(ctx, DESCRIBE, GROUP, group_id):
            groups.append({**empty, "error_code": GROUP_AUTHORIZATION_FAILED,
                           "error_message": None})
            continue
        group = consumer.groups.get(group_id)
        if group is None:
            kind = broker.groups.group_type(group_id)
            message = f"Group {group_id} not found." if kind is None else \
                f"Group {group_id} is not a consumer group."
            groups.append({**empty, "error_code": errors.GROUP_ID_NOT_FOUND,
                           "error_message": message})
            continue
        assignor = next((m.server_assignor for m in group.members.values()
                         if m.server_assignor), consumer.assignors[0])
        groups.append({
            "error_code": errors.NONE, "error_message": None, "group_id": group_id,
            "group_state": group.state(), "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "assignor_name": assignor,
            "members": [{
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.epoch, "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": sorted(m.subscribed),
                "subscribed_topic_regex": m.regex.pattern if m.regex else "",
                "assignment": assignment(m.assigned),
                "target_assignment": assignment(group.target.get(m.member_id, ())),
                "member_type": MEMBER_TYPE_CONSUMER if m.classic is None
                else MEMBER_TYPE_CLASSIC,
            } for m in group.members.values()],
            "authorized_operations": broker.security.authorized_operations(
                ctx, GROUP, group_id, GROUP_OPERATIONS) if requested else NOT_REQUESTED,
        })
    return {"throttle_time": 0, "groups": groups}
