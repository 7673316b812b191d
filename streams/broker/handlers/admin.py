"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
DeleteRecords."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..broker_alter import alter_broker, incremental_changes
from ..broker_configs import describe_broker_configs
from ..groups.group_configs import GroupConfigError
from ..security.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_NAME,
    CREATE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    TOPIC,
)
from ..security.authorizer import DELETE as DELETE_OP
from ..storage.retention import log_deletion, segments_below
from ..topics import (
    INTERNAL_TOPICS,
    INVALID_CONFIG,
    TOPIC_CONFIGS,
    Topic,
    TopicError,
    validate_topic_configs,
)
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

log = logging.getLogger(__name__)

INVALID_REQUEST = 42
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
AUTHORIZATION_FAILED = "Authorization failed."
INVALID_REPLICA_ASSIGNMENT = 39
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_ID = 100
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32
GROUP_AUTHORIZATION_FAILED = 30
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_DEFAULT = 5
# Kafka 4.1+ (KIP-966, eligible leader replicas) writes a cluster-level min.insync.replicas
# record when the controller activates, so DescribeConfigs reports it as a dynamic cluster
# default (DYNAMIC_DEFAULT_BROKER_CONFIG) on every topic without its own value, and on the
# cluster-default BROKER resource (""). Ours is the broker's value, reported the same way.
CLUSTER_DEFAULT_TOPIC_CONFIGS = ("min.insync.replicas",)
# Kafka's longest resource name is a topic's (Topic.MAX_NAME_LENGTH, 249); error messages quote
# the name, and a longer one could overflow the response's int16-length string.
MAX_RESOURCE_NAME = 249

# DescribeConfigs v3+ config_type of each topic config, as Kafka declares it
# (1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST).
TOPIC_CONFIG_TYPES = {
    "cleanup.policy": 7, "retention.ms": 5, "retention.bytes": 5, "segment.bytes": 3,
    "segment.ms": 5, "index.interval.bytes": 3, "max.message.bytes": 3,
    "message.timestamp.type": 2, "delete.retention.ms": 5, "min.compaction.lag.ms": 5,
    "max.compaction.lag.ms": 5, "min.cleanable.dirty.ratio": 6, "compression.type": 2,
    "min.insync.replicas": 3, "unclean.leader.election.enable": 1, "file.delete.delay.ms": 5,
    "flush.messages": 5, "flush.ms": 5, "preallocate": 1, "message.downconversion.enable": 1,
    "message.format.version": 2,
}


@handles(19, 2, 7)
async def create_topics(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    # A name given twice creates nothing: each such name gets one INVALID_REQUEST after the
    # other results, as Kafka's ControllerApis.createTopics answers.
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    duplicates = [name for name, count in counts.items() if count > 1]
    results = []
    security = broker.security
    cluster_create = security.allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, audit=False)
    for t in request.topics:
        if counts[t.name] > 1:
            continue
        entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None,
                                 "topic_config_error_code": 0}
        results.append(entry)
        if not (cluster_create or security.allowed(ctx, CREATE, TOPIC, t.name)):
            entry.update(error_code=TOPIC_AUTHORIZATION_FAILED,
                         error_message=AUTHORIZATION_FAILED, num_partitions=-1,
                         replication_factor=-1)
            continue
        try:
            partitions, replication = t.num_partitions, t.replication_factor
            if t.assignments:
                partitions, replication = _manual_assignment(broker, t)
            configs = {c.name: c.value for c in t.configs}
            topic = await broker.topics.create_async(
                t.name, partitions, replication, configs,
                validate_only=request.validate_only,
            )
        except TopicError as exc:
            entry.update(error_code=exc.code, error_message=str(exc), num_partitions=-1,
                         replication_factor=-1)
            continue
        entry.update(
            topic_id=topic.topic_id,
            num_partitions=len(topic.partitions) or t.num_partitions,
            replication_factor=1,
            configs=[
                {"name": key, "value": broker.topics.effective_config(topic, key),
                 "read_only": False,
                 "config_source": _source(topic, key),
                 "is_sensitive": False}
                for key in sorted(TOPIC_CONFIGS)
            ],
        )
        if not security.allowed(ctx, DESCRIBE_CONFIGS, TOPIC, t.name):
            entry.update(configs=[], topic_config_error_code=TOPIC_AUTHORIZATION_FAILED)
    for name in duplicates:
        results.append({"name": name, "error_code": INVALID_REQUEST, "num_partitions": -1,
                        "replication_factor": -1, "error_message": "Duplicate topic name.",
                        "topic_config_error_code": 0})
    return {"throttle_time": 0, "topics": results}


def _manual_assignment(broker: Broker, topic: Any) -> tuple[int, int]:
    """(partitions, replication factor) of an explicit replica assignment, checked as Kafka's
    controller checks it (ReplicationControlManager.createTopic / validateManualPartition-
    Assignment): counts must be -1, partitions 0..n-1, and every replica a registered broker."""
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise TopicError(INVALID_REQUEST, "A manual partition assignment was specified, but "
                         "numPartitions or replicationFactor was not set to -1.")
    indexes = sorted(a.partition_index for a in topic.assignments)
    if indexes != list(range(len(indexes))):
        raise TopicError(INVALID_REPLICA_ASSIGNMENT, "Partitions in the manual partition "
                         "assignment must be a consecutive 0-based integer sequence.")
    sizes = {len(a.broker_ids) for a in topic.assignments}
    if len(sizes) != 1:
        raise TopicError(INVALID_REPLICA_ASSIGNMENT, "All partitions in the manual partition "
                         "assignment must have the same number of replicas.")
    for a in topic.assignments:
        replicas = list(a.broker_ids)
        if not replicas:
            raise TopicError(INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment "
                             "includes an empty replica list.")
        if len(set(replicas)) != len(replicas):
            raise TopicError(INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment "
                             "includes a duplicate replica.")
        for broker_id in replicas:
            if broker_id != broker.node_id:
                raise TopicError(INVALID_REPLICA_ASSIGNMENT, "The manual partition "
                                 f"assignment includes broker {broker_id}, but no such broker "
                                 "is registered.")
    return len(indexes), sizes.pop()


@handles(20, 1, 6)
async def delete_topics(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 6:
        targets = [(t.name, getattr(t, "topic_id", None)) for t in request.topics]
    else:
        targets = [(name, None) for name in request.topic_names]
    responses = []
    for name, topic_id in targets:
        if name is None and topic_id is not None:
            name = next((t.name for t in broker.topics.topics.values() if t.topic_id == topic_id),
                        None)
            if name is not None and not broker.security.allowed(ctx, DESCRIBE, TOPIC, name):
                name = None  # an id the principal may not describe stays unknown (as Kafka)
        entry: dict[str, Any] = {"name": name, "topic_id": topic_id or uuid.UUID(int=0),
                                 "error_code": 0, "error_message": None}
        responses.append(entry)
        if name is None:
            entry.update(error_code=UNKNOWN_TOPIC_ID, error_message="unknown topic id")
            continue
        if not broker.security.allowed(ctx, DELETE_OP, TOPIC, name):
            entry.update(error_code=TOPIC_AUTHORIZATION_FAILED,
                         error_message=AUTHORIZATION_FAILED)
            continue
        try:
            if name in INTERNAL_TOPICS:
                raise TopicError(INVALID_REQUEST, f"internal topic {name} cannot be deleted")
            topic = broker.topics.get(name)
            entry["topic_id"] = topic.topic_id
            broker.topics.delete(name)
        except TopicError as exc:
            entry.update(error_code=exc.code, error_message=str(exc))
    return {"throttle_time": 0, "responses": responses}


@handles(37, 0, 3)
async def create_partitions(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    results = []
    for t in request.topics:
        entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
        results.append(entry)
        if not broker.security.allowed(ctx, ALTER, TOPIC, t.name):
            entry.update(error_code=TOPIC_AUTHORIZATION_FAILED,
                         error_message=AUTHORIZATION_FAILED)
            continue
        try:
            await broker.topics.add_partitions_async(t.name, t.count,
                                                     validate_only=request.validate_only)
        except TopicError as exc:
            entry.update(error_code=exc.code, error_message=str(exc))
    return {"throttle_time": 0, "results": results}


def _source(topic: Topic, key: str) -> int:
    """DescribeConfigs/CreateTopics ConfigSource of a topic config."""
    if key in topic.configs:
        return SOURCE_DYNAMIC_TOPIC
    return SOURCE_DYNAMIC_DEFAULT_BROKER if key in CLUSTER_DEFAULT_TOPIC_CONFIGS else SOURCE_DEFAULT


def _describe_broker(broker: Broker, resource: Any, wanted: set[str] | None,
                     include_synonyms: bool) -> dict[str, Any]:
    """Kafka answers for its own id; an empty name means the cluster-wide dynamic defaults,
    of which we have none."""
    name = resource.resource_name
    if name == "":  # the cluster-wide dynamic defaults: the ELR record of Kafka 4.1+
        return {"configs": [
            {"name": key, "value": broker.topics.effective_config_default(key),
             "read_only": False, "is_default": False,
             "config_source": SOURCE_DYNAMIC_DEFAULT_BROKER, "is_sensitive": False,
             "synonyms": [{"name": key, "value": broker.topics.effective_config_default(key),
                           "source": SOURCE_DYNAMIC_DEFAULT_BROKER}] if include_synonyms else [],
             "config_type": TOPIC_CONFIG_TYPES.get(key, 0), "documentation": None}
            for key in CLUSTER_DEFAULT_TOPIC_CONFIGS if wanted is None or key in wanted]}
    if name != str(broker.node_id):
        return {"error_code": INVALID_REQUEST,
                "error_message": f"Unexpected broker id, expected {broker.node_id} or empty "
                                 f"string, but received {name}"}
    return {"configs": describe_broker_configs(broker.config, broker.port, wanted,
                                               include_synonyms, broker.dynamic_configs)}


@handles(32, 1, 4)
async def describe_configs(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    results = []
    for resource in request.resources:
        entry: dict[str, Any] = {"error_code": 0, "error_message": None,
                                 "resource_type": resource.resource_type,
                                 "resource_name": resource.resource_name, "configs": []}
        results.append(entry)
        if len(resource.resource_name) > MAX_RESOURCE_NAME:
            entry.update(error_code=INVALID_REQUEST, error_message=(
                f"resource name of {len(resource.resource_name)} characters is longer than "
                f"{MAX_RESOURCE_NAME}"))
            continue
        wanted = set(resource.configuration_keys) if resource.configuration_keys else None
        refused = _configs_refused(broker, ctx, resource, DESCRIBE_CONFIGS)
        if refused is not None:
            entry.update(refused)
            continue
        if resource.resource_type == RESOURCE_TOPIC:
            try:
                topic = broker.topics.get(resource.resource_name)
            except TopicError as exc:
                entry.update(error_code=exc.code, error_message=str(exc))
                continue
            synonyms = bool(getattr(request, "include_synonyms", False))
            for key in sorted(TOPIC_CONFIGS):
                if wanted is not None and key not in wanted:
                    continue
                value = broker.topics.effective_config(topic, key)
                source = _source(topic, key)
                chain: list[dict[str, Any]] = []
                if source == SOURCE_DYNAMIC_DEFAULT_BROKER and synonyms:
                    chain = [{"name": key, "value": value, "source": source},
                             {"name": key, "value": value, "source": SOURCE_DEFAULT}]
                entry["configs"].append({
                    "name": key, "value": value,
                    "read_only": False, "is_default": source == SOURCE_DEFAULT,
                    "config_source": source,
                    "is_sensitive": False, "synonyms": chain,
                    "config_type": TOPIC_CONFIG_TYPES.get(key, 0), "documentation": None,
                })
        elif resource.resource_type == RESOURCE_BROKER:
            entry.update(_describe_broker(broker, resource, wanted,
                                          bool(getattr(request, "include_synonyms", False))))
        elif resource.resource_type == RESOURCE_GROUP:
            entry["configs"] = broker.groups.configs.describe(
                resource.resource_name, wanted, bool(getattr(request, "include_synonyms", False)))
        else:
            entry.update(error_code=INVALID_REQUEST,
                         error_message=f"unsupported resource type {resource.resource_type}")
    return {"throttle_time": 0, "results": results}


def _configs_refused(broker: Broker, ctx: RequestContext, resource: Any, operation: int
                     ) -> dict[str, Any] | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, or on the cluster for BROKER resources."""
    if resource.resource_type == RESOURCE_TOPIC and not broker.security.allowed(
            ctx, operation, TOPIC, resource.resource_name):
        return {"error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": AUTHORIZATION_FAILED}
    if resource.resource_type == RESOURCE_BROKER and not broker.security.allowed(
            ctx, operation, CLUSTER, CLUSTER_NAME):
        return {"error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": AUTHORIZATION_FAILED}
    if resource.resource_type == RESOURCE_GROUP and not broker.security.allowed(
            ctx, operation, GROUP, resource.resource_name):
        return {"error_code": GROUP_AUTHORIZATION_FAILED, "error_message": AUTHORIZATION_FAILED}
    return None


@handles(21, 0, 2)
async def delete_records(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    topics = []
    for t in request.topics:
        partitions = []
        deletable = broker.security.allowed(ctx, DELETE_OP, TOPIC, t.name)
        for p in t.partitions:
            entry = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
            partitions.append(entry)
            if not deletable:
                entry["error_code"] = TOPIC_AUTHORIZATION_FAILED
                continue
            try:
                plog = broker.topics.partition(t.name, p.partition_index)
            except TopicError as exc:
                entry["error_code"] = exc.code
                continue
            target = plog.next_offset if p.offset == -1 else p.offset
            if target < 0 or target > plog.next_offset:
                entry["error_code"] = OFFSET_OUT_OF_RANGE
                continue
            if target > plog.log_start_offset:
                log_deletion(plog, f"log start offset {target} breach",
                             segments_below(plog, target))
            plog.advance_log_start(target)
            entry["low_watermark"] = plog.log_start_offset
        topics.append({"name": t.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}


SET, DELETE, APPEND, SUBTRACT = range(4)
_LIST_CONFIGS = {"cleanup.policy"}


def _alter_result(resource: Any, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message,
            "resource_type": resource.resource_type, "resource_name": resource.resource_name}


def _apply_incremental(current: dict[str, str], effective: Any, changes: Any) -> dict[str, str]:
    """Kafka's SET / DELETE / APPEND / SUBTRACT on a topic's dynamic configs."""
    updated = dict(current)
    for change in changes:
        name, op, value = change.name, change.config_operation, change.value
        if op == SET:
            updated[name] = value
        elif op == DELETE:
            updated.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in _LIST_CONFIGS:
                raise TopicError(INVALID_CONFIG, f"{name} is not a list config; use SET")
            items = [v for v in effective(name).split(",") if v]
            for item in (value or "").split(","):
                if op == APPEND and item not in items:
                    items.append(item)
                if op == SUBTRACT and item in items:
                    items.remove(item)
            updated[name] = ",".join(items)
        else:
            raise TopicError(INVALID_REQUEST, f"unknown config operation {op}")
    return updated


def _alter_group(broker: Broker, resource: Any, validate_only: bool, incremental: bool
                 ) -> dict[str, Any]:
    """A GROUP resource: the group's configs (groups/group_configs.py)."""
    configs = broker.groups.configs
    try:
        configs.check_resource(resource.resource_name)
        if incremental:
            updated = configs.plan_incremental(resource.resource_name, [
                (c.name, c.config_operation, c.value) for c in resource.configs])
        else:
            updated = configs.plan_replace([(c.name, c.value) for c in resource.configs])
        configs.validate(updated)
        if not validate_only:
            configs.store(resource.resource_name, updated)
    except GroupConfigError as exc:
        return _alter_result(resource, exc.code, str(exc))
    return _alter_result(resource)


def _alter_topics(broker: Broker, ctx: RequestContext, request: Any,
                  new_configs: Callable[[Topic, Any], dict[str, str]],
                  broker_changes: Callable[[Any], dict[str, str | None]],
                  incremental: bool = True) -> dict:
    """Shared by both alter APIs: per topic resource, compute, validate and store the configs;
    BROKER resources go to broker_alter, GROUP resources to the group configs."""
    responses = []
    for resource in request.resources:
        refused = _configs_refused(broker, ctx, resource, ALTER_CONFIGS)
        if refused is not None:
            responses.append(_alter_result(resource, refused["error_code"],
                                           refused["error_message"]))
            continue
        if resource.resource_type == RESOURCE_BROKER:
            try:
                alter_broker(broker, resource, broker_changes(resource), request.validate_only)
                responses.append(_alter_result(resource))
            except TopicError as exc:
                responses.append(_alter_result(resource, exc.code, str(exc)))
            continue
        if resource.resource_type == RESOURCE_GROUP:
            responses.append(_alter_group(broker, resource, request.validate_only, incremental))
            continue
        if resource.resource_type != RESOURCE_TOPIC:
            responses.append(_alter_result(resource, INVALID_REQUEST,
                                           "only topic, broker and group configs can be altered"))
            continue
        try:
            topic = broker.topics.get(resource.resource_name)
            updated = new_configs(topic, resource)
            validate_topic_configs(updated)
            if not request.validate_only:
                broker.topics.set_configs(topic.name, updated)
            responses.append(_alter_result(resource))
        except TopicError as exc:
            responses.append(_alter_result(resource, exc.code, str(exc)))
    return {"throttle_time": 0, "responses": responses}


@handles(44, 0, 1)
async def incremental_alter_configs(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    answer = _alter_topics(broker, ctx, request, lambda topic, resource: _apply_incremental(
        topic.configs, lambda key: broker.topics.effective_config(topic, key), resource.configs),
        incremental_changes)
    await broker.groups.configs.save()  # GROUP resources' changes are durable before answering
    return answer


@handles(33, 0, 2)
async def alter_configs(broker: Broker, ctx: RequestContext, request: Any) -> dict:
    """The legacy API: the given set replaces every dynamic config of the topic."""
    answer = _alter_topics(broker, ctx, request,
                           lambda topic, resource: {c.name: c.value for c in resource.configs},
                           lambda resource: {c.name: c.value for c in resource.configs},
                           incremental=False)
    await broker.groups.configs.save()  # GROUP resources' changes are durable before answering
    return answer
