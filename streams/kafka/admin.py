"""One path for the admin requests aiokafka's admin client has no method for.

The runtime's reset tool, the CLI (ACLs, SCRAM users, group tools) and Connect (sink connector
offsets) all send them here, so each request is built and its errors read in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import DeleteGroupsRequest
from aiokafka.protocol.api import Request
from aiokafka.protocol.commit import OffsetCommitRequest

from .internals import send_to_any, send_to_node
from .requests import DescribeLogDirs, IncrementalAlterConfigs, OffsetDelete, OffsetFetchGroups

GROUP_ID_NOT_FOUND = 69


async def send(admin: AIOKafkaAdminClient, request: Request) -> Any:
    """One request to any broker (ACLs, SCRAM credentials: the cluster answers them)."""
    return await send_to_any(admin, request)


async def send_to_coordinator(admin: AIOKafkaAdminClient, group: str, request: Request) -> Any:
    """One request to ``group``'s coordinator (OffsetCommit, OffsetDelete, DeleteGroups)."""
    return await send_to_node(admin, await admin.find_coordinator(group), request)


async def delete_group(admin: AIOKafkaAdminClient, group: str) -> int:
    """DeleteGroups for one group: its error code (0 deleted, 69 GROUP_ID_NOT_FOUND, 68
    NON_EMPTY_GROUP, ...), for the caller to judge."""
    response = await send_to_coordinator(admin, group, DeleteGroupsRequest([group]))
    codes = [code for _group, code in response.results]
    return codes[0] if codes else 0


async def commit_offsets(admin: AIOKafkaAdminClient, group: str,
                         offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """OffsetCommit as a member-less client (generation -1), which the coordinator accepts only
    while the group has no members, as Kafka's tools do: error code per partition."""
    if not offsets:
        return {}
    by_topic: dict[str, list[tuple[int, int, str]]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append((tp.partition, offset, ""))
    response = await send_to_coordinator(
        admin, group, OffsetCommitRequest(group, -1, "", -1, sorted(by_topic.items())))
    return {TopicPartition(topic, partition): code
            for topic, partitions in response.topics for partition, code in partitions}


async def delete_offsets(admin: AIOKafkaAdminClient, group: str,
                         partitions: Iterable[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
    """OffsetDelete (KIP-496): the group-level error code and an error code per partition."""
    response = await send_to_coordinator(admin, group, OffsetDelete(group, partitions))
    return response.error_code, {TopicPartition(topic, partition): code
                                 for topic, parts in response.topics for partition, code in parts}


async def describe_log_dirs(admin: AIOKafkaAdminClient, node: int) -> list[dict[str, Any]]:
    """DescribeLogDirs to broker ``node``: each log directory with its error code and the
    size in bytes of every partition it holds."""
    response = await send_to_node(admin, node, DescribeLogDirs())
    return [{"log_dir": r["log_dir"], "error_code": r["error_code"],
             "partitions": [{"topic": t["name"], "partition": p["partition_index"],
                             "size": p["partition_size"], "future": p["is_future_key"]}
                            for t in r["topics"] for p in t["partitions"]]}
            for r in response.to_object()["results"]]


async def incremental_alter_configs(admin: AIOKafkaAdminClient, resource_type: int, name: str,
                                    changes: dict[str, str | None],
                                    node: int | None = None) -> tuple[int, str | None]:
    """IncrementalAlterConfigs of one resource (a BROKER resource goes to ``node``, itself):
    its error code and message."""
    request = IncrementalAlterConfigs(resource_type, name, changes)
    response = await (send_to_node(admin, node, request) if node is not None
                      else send_to_any(admin, request))
    [result] = response.responses
    return result[0], result[1]


async def committed_offsets(admin: AIOKafkaAdminClient, node: int, groups: list[str]
                            ) -> dict[str, dict[TopicPartition, int]]:
    """The committed offsets of many groups coordinated by broker ``node``, in one OffsetFetch
    v8 (KIP-709): group -> partition -> offset (partitions without a commit left out)."""
    if not groups:
        return {}
    response = await send_to_node(admin, node, OffsetFetchGroups(groups))
    found: dict[str, dict[TopicPartition, int]] = {}
    for group in response.to_object()["groups"]:
        offsets = found.setdefault(group["group_id"], {})
        for topic in group["topics"]:
            for p in topic["partitions"]:
                if p["committed_offset"] >= 0 and not p["error_code"]:
                    offsets[TopicPartition(topic["name"], p["partition_index"])] = \
                        p["committed_offset"]
    return found
