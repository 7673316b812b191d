"""ListGroups v5 (each group's type) and ConsumerGroupDescribe (KIP-848 member epochs and
assignments), which aiokafka 0.14 lacks: their shapes in aiokafka's own struct types, sent
through an admin client."""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import IncompatibleBrokerVersion, for_code
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    AbstractType,
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)

from ..kafka.admin import send_to_coordinator
from ..kafka.internals import send_to_node


class ListGroupsResponse_v5(Response):
    API_KEY = 16
    API_VERSION = 5
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("groups", CompactArray(
            ("group_id", CompactString("utf-8")),
            ("protocol_type", CompactString("utf-8")),
            ("group_state", CompactString("utf-8")),
            ("group_type", CompactString("utf-8")),
            ("tags", TaggedFields),
        )),
        ("tags", TaggedFields),
    )


class ListGroupsRequest_v5(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 16
    API_VERSION = 5
    RESPONSE_TYPE = ListGroupsResponse_v5
    SCHEMA = Schema(
        ("states_filter", CompactArray(CompactString("utf-8"))),
        ("types_filter", CompactArray(CompactString("utf-8"))),
        ("tags", TaggedFields),
    )


class ListGroupsWithTypes(Request[ListGroupsRequest_v5]):
    API_KEY = 16

    def build(self, request_struct_class: type[ListGroupsRequest_v5]) -> ListGroupsRequest_v5:
        return request_struct_class([], [], {})


async def list_groups_with_types(admin: AIOKafkaAdminClient) -> list[tuple[str, str, str]]:
    """(group id, type, state) of every group on every broker (a broker must offer v5)."""
    out: dict[str, tuple[str, str, str]] = {}
    for broker in (await admin.describe_cluster())["brokers"]:
        response: Any = await send_to_node(admin, broker["node_id"], ListGroupsWithTypes())
        if response.error_code:
            raise for_code(response.error_code)("Error listing groups")
        for group_id, _protocol, state, group_type, _tags in response.groups:
            out[group_id] = (group_id, group_type, state)
    return sorted(out.values())


class _Uuid(AbstractType[bytes]):
    """Kafka's uuid: 16 raw bytes (aiokafka has no such type)."""

    @classmethod
    def encode(cls, value: bytes) -> bytes:
        return value

    @classmethod
    def decode(cls, data: BytesIO) -> bytes:
        return data.read(16)


_TOPIC_PARTITIONS = CompactArray(
    ("topic_id", _Uuid),
    ("topic_name", CompactString("utf-8")),
    ("partitions", CompactArray(Int32)),
    ("tags", TaggedFields),
)


class ConsumerGroupDescribeResponse_v0(Response):
    API_KEY = 69
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("error_code", Int16),
            ("error_message", CompactString("utf-8")),
            ("group_id", CompactString("utf-8")),
            ("group_state", CompactString("utf-8")),
            ("group_epoch", Int32),
            ("assignment_epoch", Int32),
            ("assignor_name", CompactString("utf-8")),
            ("members", CompactArray(
                ("member_id", CompactString("utf-8")),
                ("instance_id", CompactString("utf-8")),
                ("rack_id", CompactString("utf-8")),
                ("member_epoch", Int32),
                ("client_id", CompactString("utf-8")),
                ("client_host", CompactString("utf-8")),
                ("subscribed_topic_names", CompactArray(CompactString("utf-8"))),
                ("subscribed_topic_regex", CompactString("utf-8")),
                ("assignment", Schema(("topic_partitions", _TOPIC_PARTITIONS),
                                      ("tags", TaggedFields))),
                ("target_assignment", Schema(("topic_partitions", _TOPIC_PARTITIONS),
                                             ("tags", TaggedFields))),
                ("tags", TaggedFields),
            )),
            ("authorized_operations", Int32),
            ("tags", TaggedFields),
        )),
        ("tags", TaggedFields),
    )


class ConsumerGroupDescribeRequest_v0(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 69
    API_VERSION = 0
    RESPONSE_TYPE = ConsumerGroupDescribeResponse_v0
    SCHEMA = Schema(
        ("group_ids", CompactArray(CompactString("utf-8"))),
        ("include_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class DescribeConsumerGroup(Request[ConsumerGroupDescribeRequest_v0]):
    API_KEY = 69

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, request_struct_class: type[ConsumerGroupDescribeRequest_v0]
              ) -> ConsumerGroupDescribeRequest_v0:
        return request_struct_class([self.group_id], False, {})


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

    def partitions(assignment: Any) -> list[tuple[str, int]]:
        return sorted((t[1], p) for t in assignment[0] for p in t[2])

    members = [KipMember(m[0], m[4], m[5], m[3], partitions(m[8]), partitions(m[9]))
               for m in group[7]]
    return KipGroup(group[3], group[4], group[5], group[6], members)
