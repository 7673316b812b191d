"""One path for the admin requests aiokafka's admin client has no method for.

The runtime's reset tool, the CLI (ACLs, SCRAM users, group and share-group tools) and Connect
(sink connector offsets) all send them here, so each request is built and its errors read in one
place. What the broker cannot answer raises :class:`AdminRequestError`, whose message is one line
for the user.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import IncompatibleBrokerVersion, for_code
from aiokafka.protocol.admin import DeleteGroupsRequest
from aiokafka.protocol.api import Request
from aiokafka.protocol.commit import OffsetCommitRequest

from .group_requests import (
    AlterShareGroupOffsets,
    DeleteShareGroupOffsets,
    DescribeConsumerGroup,
    DescribeShareGroupOffsets,
    ListGroupsWithTypes,
    ShareGroupDescribe,
)
from .internals import send_to_any, send_to_node
from .requests import DescribeLogDirs, IncrementalAlterConfigs, OffsetDelete, OffsetFetchGroups

GROUP_ID_NOT_FOUND = 69


class AdminRequestError(RuntimeError):
    """The broker cannot answer an admin request (it lacks the API) or answered a group-level
    error; the message is one line that says which and why."""


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


# -- group listing and KIP-848 consumer groups --------------------------------------------------

async def list_groups_with_types(admin: AIOKafkaAdminClient) -> list[tuple[str, str, str]]:
    """(group id, type, state) of every group on every broker (ListGroups v5: a broker must
    offer it)."""
    out: dict[str, tuple[str, str, str]] = {}
    for broker in (await admin.describe_cluster())["brokers"]:
        response: Any = await send_to_node(admin, broker["node_id"], ListGroupsWithTypes())
        if response.error_code:
            raise for_code(response.error_code)("Error listing groups")
        for group_id, _protocol, state, group_type, _tags in response.groups:
            out[group_id] = (group_id, group_type, state)
    return sorted(out.values())


@dataclass(frozen=True, slots=True)
class KipMember:
    member_id: str
    client_id: str
    host: str
    epoch: int
    assigned: list[tuple[str, int]]
    target: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class KipGroup:
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[KipMember]


def _assigned(assignment: Any) -> list[tuple[str, int]]:
    """(topic, partition) of a described member's assignment, sorted."""
    return sorted((t[1], p) for t in assignment[0] for p in t[2])


async def describe_consumer_group(admin: AIOKafkaAdminClient, group_id: str
                                  ) -> KipGroup | None:
    """A KIP-848 group's ConsumerGroupDescribe answer; None when the group is of another type
    (or absent) or the broker has no ConsumerGroupDescribe."""
    try:
        response: Any = await send_to_coordinator(admin, group_id, DescribeConsumerGroup(group_id))
    except (NotImplementedError, IncompatibleBrokerVersion):
        return None
    group = response.groups[0]
    if group[0]:  # error_code: GROUP_ID_NOT_FOUND for other types
        return None
    members = [KipMember(m[0], m[4], m[5], m[3], _assigned(m[8]), _assigned(m[9]))
               for m in group[7]]
    return KipGroup(group[3], group[4], group[5], group[6], members)


# -- KIP-932 share groups -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    epoch: int
    assigned: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class ShareGroupInfo:
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    assignor: str
    members: list[ShareMember]


async def _send_share(admin: AIOKafkaAdminClient, group_id: str, request: Any) -> Any:
    try:
        return await send_to_coordinator(admin, group_id, request)
    except (NotImplementedError, IncompatibleBrokerVersion):
        raise AdminRequestError("the broker does not offer share groups (KIP-932)") from None


async def describe_share_group(admin: AIOKafkaAdminClient, group_id: str) -> ShareGroupInfo:
    """ShareGroupDescribe of one group (its error code says whether it is a share group)."""
    response = await _send_share(admin, group_id, ShareGroupDescribe(group_id))
    group = response.groups[0]
    members = [ShareMember(m[0], m[3], m[4], m[2], _assigned(m[6])) for m in group[7]]
    return ShareGroupInfo(group[0], group[1], group[3], group[4], group[6], members)


async def share_group_offsets(admin: AIOKafkaAdminClient, group_id: str
                              ) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error code) of every share-partition."""
    response = await _send_share(admin, group_id, DescribeShareGroupOffsets(group_id))
    group = response.groups[0]
    if group[2]:
        raise AdminRequestError(f"cannot describe the offsets of share group {group_id!r}: "
                                f"{group[3] or group[2]}")
    return {(topic[0], p[0]): (p[1], p[3], p[4]) for topic in group[1] for p in topic[2]}


async def alter_share_group_offsets(admin: AIOKafkaAdminClient, group_id: str,
                                    offsets: dict[tuple[str, int], int]
                                    ) -> tuple[int, str | None, dict[tuple[str, int], int]]:
    """Top-level error code and message, and an error code per partition."""
    response = await _send_share(admin, group_id, AlterShareGroupOffsets(group_id, offsets))
    return response.error_code, response.error_message, {
        (t[0], p[0]): p[1] for t in response.responses for p in t[2]}


async def delete_share_group_offsets(admin: AIOKafkaAdminClient, group_id: str,
                                     topics: list[str]
                                     ) -> tuple[int, str | None, dict[str, tuple[int, str]]]:
    """Top-level error code and message, and (error code, message) per topic."""
    response = await _send_share(admin, group_id, DeleteShareGroupOffsets(group_id, topics))
    return response.error_code, response.error_message, {
        t[0]: (t[2], t[3] or "") for t in response.responses}
