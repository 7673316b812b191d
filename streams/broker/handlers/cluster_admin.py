"""Replica-management APIs answered the way a healthy single-node Kafka cluster answers them.

One broker means one replica per partition, always the leader, in one data directory: there is
never an election to run, a reassignment in progress or another directory to move a replica to.
These handlers report exactly that, so admin tools (kafka-python, librdkafka, kafka-*.sh) get
real answers instead of UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..security.authorizer import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from ..topics import TopicError
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker
    from ..storage.log import PartitionLog

UNKNOWN_TOPIC_OR_PARTITION = 3
REPLICA_NOT_AVAILABLE = 9
INVALID_REPLICA_ASSIGNMENT = 39
LOG_DIR_NOT_FOUND = 57
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
CLUSTER_AUTHORIZATION_FAILED = 31


def _refused(broker: Broker, ctx: RequestContext, operation: int, **empty: Any
             ) -> dict[str, Any] | None:
    """These APIs need ALTER or DESCRIBE on the cluster (Kafka's operation table)."""
    if broker.security.allowed(ctx, operation, CLUSTER, CLUSTER_NAME):
        return None
    return {"throttle_time": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.", **empty}


def log_dir(broker: Broker) -> str:
    """Our only log directory, as Kafka names it: the absolute path (File.getAbsolutePath)."""
    return os.path.abspath(broker.config.data_dir)


def _all_partitions(broker: Broker) -> Iterator[tuple[str, int]]:
    for name, topic in sorted(broker.topics.topics.items()):
        for index in range(len(topic.partitions)):
            yield name, index


def _requested(entries: Iterable[Any] | None, broker: Broker, topic_attr: str,
               partitions_attr: str) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a request, deduplicated in order; null means every one."""
    if entries is None:
        return list(_all_partitions(broker))
    pairs = (
        (getattr(e, topic_attr), p) for e in entries for p in getattr(e, partitions_attr)
    )
    return list(dict.fromkeys(pairs))


def _group(results: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for topic, entry in results:
        grouped.setdefault(topic, []).append(entry)
    return grouped


def _lookup(broker: Broker, topic: str, partition: int) -> PartitionLog | None:
    try:
        return broker.topics.partition(topic, partition)
    except TopicError:
        return None


@handles(43, 0, 2)
async def elect_leaders(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Every partition's only replica already leads, so no election (preferred or unclean) is
    ever needed."""
    refused = _refused(broker, ctx, ALTER, replica_election_results=[])
    if refused is not None:
        return refused
    results = []
    for topic, partition in _requested(request.topic_partitions, broker, "topic", "partitions"):
        if _lookup(broker, topic, partition) is None:
            code, message = (UNKNOWN_TOPIC_OR_PARTITION,
                             f"The partition {topic}-{partition} does not exist.")
        else:
            code, message = (ELECTION_NOT_NEEDED,
                             f"Leader election not needed for {topic}-{partition}: "
                             f"its only replica (broker {broker.node_id}) is the leader.")
        results.append((topic, {"partition_id": partition, "error_code": code,
                                "error_message": message}))
    return {
        "throttle_time": 0,
        "error_code": 0,
        "replica_election_results": [
            {"topic": topic, "partition_result": entries}
            for topic, entries in _group(results).items()
        ],
    }


@handles(35, 1, 4)
async def describe_log_dirs(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Our single data directory with each hosted partition's size.

    Capped at v4: kafka-python infers "Kafka 4.3" from DescribeLogDirs v5 (cordoned log dirs)
    and would then expect KRaft-only APIs we do not have.
    """
    refused = _refused(broker, ctx, DESCRIBE, results=[])
    if refused is not None:
        return refused
    directory = log_dir(broker)
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition in _requested(request.topics, broker, "topic", "partitions"):
        plog = _lookup(broker, topic, partition)
        if plog is None:
            continue  # Kafka lists only the replicas a directory actually holds
        topics.setdefault(topic, []).append({
            "partition_index": partition, "partition_size": plog.size_bytes,
            "offset_lag": 0, "is_future_key": False,
        })
    stats = os.statvfs(directory)
    return {
        "throttle_time": 0,
        "error_code": 0,
        "results": [{
            "error_code": 0,
            "log_dir": directory,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            "total_bytes": stats.f_blocks * stats.f_frsize,
            "usable_bytes": stats.f_bavail * stats.f_frsize,
        }],
    }


def _move_error(broker: Broker, path: str, topic: str, partition: int) -> int:
    """Kafka's checks in order: the target must be a configured log dir, then a hosted replica.
    Moving a replica to the directory it is in is the only move possible, and a no-op."""
    if os.path.normpath(path) != log_dir(broker):
        return LOG_DIR_NOT_FOUND
    if _lookup(broker, topic, partition) is None:
        return REPLICA_NOT_AVAILABLE
    return 0


@handles(34, 1, 2)
async def alter_replica_log_dirs(broker: Broker, ctx: RequestContext,
                                 request: Any) -> dict[str, Any]:
    allowed = broker.security.allowed(ctx, ALTER, CLUSTER, CLUSTER_NAME)
    results = [
        (t.name, {"partition_index": p,
                  "error_code": _move_error(broker, d.path, t.name, p) if allowed
                  else CLUSTER_AUTHORIZATION_FAILED})
        for d in request.dirs for t in d.topics for p in t.partitions
    ]
    return {
        "throttle_time": 0,
        "results": [{"topic_name": name, "partitions": entries}
                    for name, entries in _group(results).items()],
    }


def _reassignment_error(broker: Broker, topic: str, partition: int,
                        replicas: list[int] | None) -> tuple[int, str | None]:
    """Validate a target replica set like Kafka's controller; on one node only [us] is valid."""
    if _lookup(broker, topic, partition) is None:
        return UNKNOWN_TOPIC_OR_PARTITION, f"The partition {topic}-{partition} does not exist."
    if replicas is None:
        return NO_REASSIGNMENT_IN_PROGRESS, (
            f"No ongoing reassignment for {topic}-{partition} to cancel.")
    if not replicas:
        return INVALID_REPLICA_ASSIGNMENT, "The replica list is empty."
    for broker_id in replicas:
        if replicas.count(broker_id) > 1:
            return INVALID_REPLICA_ASSIGNMENT, (
                f"The replica list includes broker {broker_id} more than once.")
        if broker_id != broker.node_id:
            return INVALID_REPLICA_ASSIGNMENT, (
                f"The replica list includes broker {broker_id}, but no such broker is "
                f"registered; this cluster has the single broker {broker.node_id}.")
    return 0, None


@handles(45, 0, 1)
async def alter_partition_reassignments(broker: Broker, ctx: RequestContext,
                                        request: Any) -> dict[str, Any]:
    """Reassigning a partition to the replica set it already has completes at once."""
    refused = _refused(broker, ctx, ALTER, responses=[])
    if refused is not None:
        return refused
    results = []
    for t in request.topics:
        for p in t.partitions:
            replicas = None if p.replicas is None else list(p.replicas)
            code, message = _reassignment_error(broker, t.name, p.partition_index, replicas)
            results.append((t.name, {"partition_index": p.partition_index, "error_code": code,
                                     "error_message": message}))
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": getattr(request, "allow_replication_factor_change",
                                                   True),
        "error_code": 0,
        "error_message": None,
        "responses": [{"name": name, "partitions": entries}
                      for name, entries in _group(results).items()],
    }


@handles(46, 0, 0)
async def list_partition_reassignments(broker: Broker, ctx: RequestContext,
                                       request: Any) -> dict[str, Any]:
    """Reassignments finish the moment they are accepted, so none is ever ongoing."""
    refused = _refused(broker, ctx, DESCRIBE, topics=[])
    if refused is not None:
        return refused
    return {"throttle_time": 0, "error_code": 0, "error_message": None, "topics": []}
