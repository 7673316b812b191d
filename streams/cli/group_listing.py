"""ListGroups v5 (KIP-848's TypesFilter; each group's type), which aiokafka 0.14 lacks: its
request and response shapes in aiokafka's own struct types, sent through an admin client."""

from __future__ import annotations

from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import for_code
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)


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
    metadata = await admin._get_cluster_metadata()  # noqa: SLF001 (aiokafka has no public way)
    out: dict[str, tuple[str, str, str]] = {}
    for broker in metadata.brokers:
        response: Any = await admin._send_request(ListGroupsWithTypes(), broker[0])  # noqa: SLF001
        if response.error_code:
            raise for_code(response.error_code)("Error listing groups")
        for group_id, _protocol, state, group_type, _tags in response.groups:
            out[group_id] = (group_id, group_type, state)
    return sorted(out.values())
