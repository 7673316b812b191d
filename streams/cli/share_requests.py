"""KIP-932 admin requests aiokafka 0.14 lacks: ShareGroupDescribe (77 v1),
DescribeShareGroupOffsets (90 v1), AlterShareGroupOffsets (91 v0) and DeleteShareGroupOffsets
(92 v0), in aiokafka's own struct types (field order from Kafka's message schemas), sent to the
group's coordinator through an admin client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import IncompatibleBrokerVersion
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

from ..kafka.admin import send_to_coordinator
from .client import CliError
from .group_listing import _Uuid

_STR = CompactString("utf-8")


class ShareGroupDescribeResponse_v1(Response):  # noqa: N801 (aiokafka's naming)
    API_KEY = 77
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("error_code", Int16), ("error_message", _STR), ("group_id", _STR),
            ("group_state", _STR), ("group_epoch", Int32), ("assignment_epoch", Int32),
            ("assignor_name", _STR),
            ("members", CompactArray(
                ("member_id", _STR), ("rack_id", _STR), ("member_epoch", Int32),
                ("client_id", _STR), ("client_host", _STR),
                ("subscribed_topic_names", CompactArray(_STR)),
                ("assignment", Schema(
                    ("topic_partitions", CompactArray(
                        ("topic_id", _Uuid), ("topic_name", _STR),
                        ("partitions", CompactArray(Int32)), ("tags", TaggedFields))),
                    ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("authorized_operations", Int32), ("tags", TaggedFields))),
        ("tags", TaggedFields))


class ShareGroupDescribeRequest_v1(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 77
    API_VERSION = 1
    RESPONSE_TYPE = ShareGroupDescribeResponse_v1
    SCHEMA = Schema(("group_ids", CompactArray(_STR)),
                    ("include_authorized_operations", Boolean), ("tags", TaggedFields))


class ShareGroupDescribe(Request[ShareGroupDescribeRequest_v1]):
    API_KEY = 77

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, request_struct_class: type[ShareGroupDescribeRequest_v1]
              ) -> ShareGroupDescribeRequest_v1:
        return request_struct_class([self.group_id], False, {})


class DescribeShareGroupOffsetsResponse_v1(Response):  # noqa: N801
    API_KEY = 90
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(
                ("topic_name", _STR), ("topic_id", _Uuid),
                ("partitions", CompactArray(
                    ("partition_index", Int32), ("start_offset", Int64),
                    ("leader_epoch", Int32), ("lag", Int64), ("error_code", Int16),
                    ("error_message", _STR), ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("error_code", Int16), ("error_message", _STR), ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DescribeShareGroupOffsetsRequest_v1(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 90
    API_VERSION = 1
    RESPONSE_TYPE = DescribeShareGroupOffsetsResponse_v1
    SCHEMA = Schema(
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(("topic_name", _STR), ("partitions", CompactArray(Int32)),
                                    ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DescribeShareGroupOffsets(Request[DescribeShareGroupOffsetsRequest_v1]):
    API_KEY = 90

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, request_struct_class: type[DescribeShareGroupOffsetsRequest_v1]
              ) -> DescribeShareGroupOffsetsRequest_v1:
        return request_struct_class([(self.group_id, None, {})], {})  # None: every partition


class AlterShareGroupOffsetsResponse_v0(Response):  # noqa: N801
    API_KEY = 91
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", _STR),
        ("responses", CompactArray(
            ("topic_name", _STR), ("topic_id", _Uuid),
            ("partitions", CompactArray(("partition_index", Int32), ("error_code", Int16),
                                        ("error_message", _STR), ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class AlterShareGroupOffsetsRequest_v0(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 91
    API_VERSION = 0
    RESPONSE_TYPE = AlterShareGroupOffsetsResponse_v0
    SCHEMA = Schema(
        ("group_id", _STR),
        ("topics", CompactArray(
            ("topic_name", _STR),
            ("partitions", CompactArray(("partition_index", Int32), ("start_offset", Int64),
                                        ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class AlterShareGroupOffsets(Request[AlterShareGroupOffsetsRequest_v0]):
    API_KEY = 91

    def __init__(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        self.group_id = group_id
        self.offsets = offsets

    def build(self, request_struct_class: type[AlterShareGroupOffsetsRequest_v0]
              ) -> AlterShareGroupOffsetsRequest_v0:
        by_topic: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
        for (topic, partition), offset in sorted(self.offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset, {}))
        return request_struct_class(
            self.group_id, [(t, parts, {}) for t, parts in by_topic.items()], {})


class DeleteShareGroupOffsetsResponse_v0(Response):  # noqa: N801
    API_KEY = 92
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", _STR),
        ("responses", CompactArray(("topic_name", _STR), ("topic_id", _Uuid),
                                   ("error_code", Int16), ("error_message", _STR),
                                   ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DeleteShareGroupOffsetsRequest_v0(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 92
    API_VERSION = 0
    RESPONSE_TYPE = DeleteShareGroupOffsetsResponse_v0
    SCHEMA = Schema(("group_id", _STR),
                    ("topics", CompactArray(("topic_name", _STR), ("tags", TaggedFields))),
                    ("tags", TaggedFields))


class DeleteShareGroupOffsets(Request[DeleteShareGroupOffsetsRequest_v0]):
    API_KEY = 92

    def __init__(self, group_id: str, topics: list[str]) -> None:
        self.group_id = group_id
        self.topics = topics

    def build(self, request_struct_class: type[DeleteShareGroupOffsetsRequest_v0]
              ) -> DeleteShareGroupOffsetsRequest_v0:
        return request_struct_class(self.group_id, [(t, {}) for t in self.topics], {})


# -- calls ----------------------------------------------------------------------------------------


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


async def _send(admin: AIOKafkaAdminClient, group_id: str, request: Request) -> Any:
    try:
        return await send_to_coordinator(admin, group_id, request)
    except (NotImplementedError, IncompatibleBrokerVersion):
        raise CliError("the broker does not offer share groups (KIP-932)") from None


async def describe_share_group(admin: AIOKafkaAdminClient, group_id: str) -> ShareGroupInfo:
    response = await _send(admin, group_id, ShareGroupDescribe(group_id))
    group = response.groups[0]
    members = [ShareMember(m[0], m[3], m[4], m[2],
                           sorted((t[1], p) for t in m[6][0] for p in t[2]))
               for m in group[7]]
    return ShareGroupInfo(group[0], group[1], group[3], group[4], group[6], members)


async def share_group_offsets(admin: AIOKafkaAdminClient, group_id: str
                              ) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error code) of every share-partition."""
    response = await _send(admin, group_id, DescribeShareGroupOffsets(group_id))
    group = response.groups[0]
    if group[2]:
        raise CliError(f"cannot describe the offsets of share group {group_id!r}: "
                       f"{group[3] or group[2]}")
    return {(topic[0], p[0]): (p[1], p[3], p[4]) for topic in group[1] for p in topic[2]}


async def alter_share_group_offsets(admin: AIOKafkaAdminClient, group_id: str,
                                    offsets: dict[tuple[str, int], int]
                                    ) -> tuple[int, str | None, dict[tuple[str, int], int]]:
    """Top-level error code and message, and an error code per partition."""
    response = await _send(admin, group_id, AlterShareGroupOffsets(group_id, offsets))
    return response.error_code, response.error_message, {
        (t[0], p[0]): p[1] for t in response.responses for p in t[2]}


async def delete_share_group_offsets(admin: AIOKafkaAdminClient, group_id: str,
                                     topics: list[str]
                                     ) -> tuple[int, str | None, dict[str, tuple[int, str]]]:
    """Top-level error code and message, and (error code, message) per topic."""
    response = await _send(admin, group_id, DeleteShareGroupOffsets(group_id, topics))
    return response.error_code, response.error_message, {
        t[0]: (t[2], t[3] or "") for t in response.responses}
