"""ApiVersions, Metadata and DescribeCluster: what a client asks before anything else."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..security.authorizer import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from ..topics import TopicError
from . import handles, supported_versions
from .authorized import (
    CLUSTER_OPERATIONS,
    NOT_REQUESTED,
    TOPIC_OPERATIONS,
)

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

LEADER_EPOCH = 0
LEADER_NOT_AVAILABLE = 5
TOPIC_AUTHORIZATION_FAILED = 29


def _operations(broker: Broker, ctx: RequestContext, resource_type: int, name: str,
                supported: tuple[int, ...], requested: bool) -> int:
    """KIP-430 bitfield: every supported operation without an authorizer, else the allowed."""
    if not requested:
        return NOT_REQUESTED
    return broker.security.authorized_operations(ctx, resource_type, name, supported)


@handles(18, 0, 4)
async def api_versions(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(supported_versions().items())
        ],
        "throttle_time": 0,
    }


def _broker_entry(broker: Broker, ctx: RequestContext) -> dict[str, Any]:
    host, port = broker.advertised(ctx)
    return {"node_id": broker.node_id, "host": host, "port": port}


def topic_metadata(broker: Broker, name: str, error: int = 0,
                   include_operations: bool = False,
                   ctx: RequestContext | None = None) -> dict[str, Any]:
    topic = broker.topics.topics.get(name)
    if topic is None or error == TOPIC_AUTHORIZATION_FAILED:
        return {"error_code": error or 3, "name": name, "topic_id": uuid.UUID(int=0),
                "is_internal": False, "partitions": []}
    node = broker.node_id
    return {
        "error_code": error,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": index,
                "leader_id": node,
                "leader_epoch": LEADER_EPOCH,
                "replica_nodes": [node],
                "isr_nodes": [node],
                "offline_replicas": [],
            }
            for index in range(len(topic.partitions))
        ],
        "topic_authorized_operations": NOT_REQUESTED if ctx is None else _operations(
            broker, ctx, TOPIC, name, TOPIC_OPERATIONS, include_operations),
    }


@handles(3, 0, 12)
async def metadata(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    requested = request.topics
    security = broker.security
    by_id: set[str] = set()  # names found from a topic id: never revealed when refused
    if requested is None or (ctx.api_version == 0 and not requested):
        # All topics: those the principal may not describe are left out, not refused.
        names = [name for name in sorted(broker.topics.topics)
                 if security.allowed(ctx, DESCRIBE, TOPIC, name, audit=False)]
    else:
        names = []
        for entry in requested:
            name = entry.name
            if name is None:  # lookup by topic id (v10+)
                name = next(
                    (t.name for t in broker.topics.topics.values() if t.topic_id == entry.topic_id),
                    None,
                )
                if name is not None:
                    by_id.add(name)
            if name is not None:
                names.append(name)
    allow_create = getattr(request, "allow_auto_topic_creation", True)
    topics = []
    for name in names:
        error = 0
        if not security.allowed(ctx, DESCRIBE, TOPIC, name):
            if name in by_id:  # Kafka nulls the name it resolved
                topics.append({**topic_metadata(broker, name, TOPIC_AUTHORIZATION_FAILED),
                               "name": None,
                               "topic_id": broker.topics.topics[name].topic_id})
                continue
            error = TOPIC_AUTHORIZATION_FAILED  # whether or not it exists (Kafka 1.0+)
        elif name not in broker.topics.topics and broker.topics.is_creating(name):
            error = LEADER_NOT_AVAILABLE  # CreateTopics is still opening its partitions
        elif (name not in broker.topics.topics and allow_create
              and broker.config.auto_create_topics_enable):
            if not (security.allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, audit=False)
                    or security.allowed(ctx, CREATE, TOPIC, name)):
                topics.append(topic_metadata(broker, name, TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                broker.topics.create(name)
            except TopicError as exc:
                error = exc.code
        topics.append(topic_metadata(
            broker, name, error,
            bool(getattr(request, "include_topic_authorized_operations", False)), ctx))
    return {
        "throttle_time": 0,
        "brokers": [_broker_entry(broker, ctx)],
        "cluster_id": broker.topics.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": _operations(
            broker, ctx, CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS,
            bool(getattr(request, "include_cluster_authorized_operations", False))),
    }


@handles(60, 0, 1)
async def describe_cluster(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": getattr(request, "endpoint_type", 1),
        "cluster_id": broker.topics.cluster_id,
        "controller_id": broker.node_id,
        "brokers": [
            {"broker_id": broker.node_id, "host": broker.advertised(ctx)[0],
             "port": broker.advertised(ctx)[1], "rack": None}
        ],
        "cluster_authorized_operations": _operations(
            broker, ctx, CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS,
            bool(getattr(request, "include_cluster_authorized_operations", False))),
    }
