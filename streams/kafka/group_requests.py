"""Group request formats that aiokafka 0.14 does not ship, written from Kafka's message schemas
(``clients/src/main/resources/common/message/*.json``): ListGroups v5 with each group's type
(KIP-848), ConsumerGroupDescribe (KIP-848) and the share-group admin requests of KIP-932
(ShareGroupDescribe v1, DescribeShareGroupOffsets v1, AlterShareGroupOffsets v0,
DeleteShareGroupOffsets v0). ``streams.kafka.admin`` sends them; field order is the schemas'.
Written as the formats of ``streams.kafka.requests`` (an ``api_version`` and its ``Request``)."""

from __future__ import annotations

from io import BytesIO
from typing import Any

from aiokafka.protocol.api import Request
from aiokafka.protocol.types import (
    AbstractType,
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
)

from .requests import TAGS, api_version, build_fields

_STR = CompactString("utf-8")


class Uuid(AbstractType[bytes]):
    """Kafka's uuid: 16 raw bytes (aiokafka has no such type)."""

    @classmethod
    def encode(cls, value: bytes) -> bytes:
        return value

    @classmethod
    def decode(cls, data: BytesIO) -> bytes:
        return data.read(16)


def _assignment() -> Schema:
    """A member's (target) assignment in the group describe answers: topic id, name and
    partitions per topic."""
    return Schema(("topic_partitions", CompactArray(
        ("topic_id", Uuid), ("topic_name", _STR), ("partitions", CompactArray(Int32)), TAGS)),
        TAGS)


def _describe_groups(name: str, api_key: int, version: int,
                     *member_fields: tuple[str, Any]) -> Any:
    """ConsumerGroupDescribe and ShareGroupDescribe: the same request and the same group-level
    answer around each API's own member fields."""
    return api_version(
        name, api_key, version, flexible=True,
        request=Schema(("group_ids", CompactArray(_STR)),
                       ("include_authorized_operations", Boolean), TAGS),
        response=Schema(
            ("throttle_time_ms", Int32),
            ("groups", CompactArray(
                ("error_code", Int16), ("error_message", _STR), ("group_id", _STR),
                ("group_state", _STR), ("group_epoch", Int32), ("assignment_epoch", Int32),
                ("assignor_name", _STR), ("members", CompactArray(*member_fields, TAGS)),
                ("authorized_operations", Int32), TAGS)),
            TAGS))


ListGroupsRequest_v5 = api_version(
    "ListGroups", 16, 5, flexible=True,
    request=Schema(("states_filter", CompactArray(_STR)), ("types_filter", CompactArray(_STR)),
                   TAGS),
    response=Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16),
        ("groups", CompactArray(("group_id", _STR), ("protocol_type", _STR),
                                ("group_state", _STR), ("group_type", _STR), TAGS)),
        TAGS))


class ListGroupsWithTypes(Request[ListGroupsRequest_v5]):
    """Every group of the broker it is sent to, with its state and type (no filters)."""

    API_KEY = 16
    build = build_fields
    fields = ([], [], {})


ConsumerGroupDescribeRequest_v0 = _describe_groups(
    "ConsumerGroupDescribe", 69, 0,
    ("member_id", _STR), ("instance_id", _STR), ("rack_id", _STR), ("member_epoch", Int32),
    ("client_id", _STR), ("client_host", _STR), ("subscribed_topic_names", CompactArray(_STR)),
    ("subscribed_topic_regex", _STR), ("assignment", _assignment()),
    ("target_assignment", _assignment()))


class DescribeConsumerGroup(Request[ConsumerGroupDescribeRequest_v0]):
    API_KEY = 69
    build = build_fields

    def __init__(self, group_id: str) -> None:
        self.fields = ([group_id], False, {})


ShareGroupDescribeRequest_v1 = _describe_groups(
    "ShareGroupDescribe", 77, 1,
    ("member_id", _STR), ("rack_id", _STR), ("member_epoch", Int32), ("client_id", _STR),
    ("client_host", _STR), ("subscribed_topic_names", CompactArray(_STR)),
    ("assignment", _assignment()))


class ShareGroupDescribe(Request[ShareGroupDescribeRequest_v1]):
    API_KEY = 77
    build = build_fields

    def __init__(self, group_id: str) -> None:
        self.fields = ([group_id], False, {})


DescribeShareGroupOffsetsRequest_v1 = api_version(
    "DescribeShareGroupOffsets", 90, 1, flexible=True,
    request=Schema(
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(("topic_name", _STR), ("partitions", CompactArray(Int32)),
                                    TAGS)),
            TAGS)),
        TAGS),
    response=Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(
                ("topic_name", _STR), ("topic_id", Uuid),
                ("partitions", CompactArray(
                    ("partition_index", Int32), ("start_offset", Int64),
                    ("leader_epoch", Int32), ("lag", Int64), ("error_code", Int16),
                    ("error_message", _STR), TAGS)),
                TAGS)),
            ("error_code", Int16), ("error_message", _STR), TAGS)),
        TAGS))


class DescribeShareGroupOffsets(Request[DescribeShareGroupOffsetsRequest_v1]):
    API_KEY = 90
    build = build_fields

    def __init__(self, group_id: str) -> None:
        self.fields = ([(group_id, None, {})], {})  # topics None: every partition


AlterShareGroupOffsetsRequest_v0 = api_version(
    "AlterShareGroupOffsets", 91, 0, flexible=True,
    request=Schema(
        ("group_id", _STR),
        ("topics", CompactArray(
            ("topic_name", _STR),
            ("partitions", CompactArray(("partition_index", Int32), ("start_offset", Int64),
                                        TAGS)),
            TAGS)),
        TAGS),
    response=Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", _STR),
        ("responses", CompactArray(
            ("topic_name", _STR), ("topic_id", Uuid),
            ("partitions", CompactArray(("partition_index", Int32), ("error_code", Int16),
                                        ("error_message", _STR), TAGS)),
            TAGS)),
        TAGS))


class AlterShareGroupOffsets(Request[AlterShareGroupOffsetsRequest_v0]):
    API_KEY = 91
    build = build_fields

    def __init__(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        by_topic: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset, {}))
        self.fields = (group_id, [(t, parts, {}) for t, parts in by_topic.items()], {})


DeleteShareGroupOffsetsRequest_v0 = api_version(
    "DeleteShareGroupOffsets", 92, 0, flexible=True,
    request=Schema(("group_id", _STR), ("topics", CompactArray(("topic_name", _STR), TAGS)),
                   TAGS),
    response=Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", _STR),
        ("responses", CompactArray(("topic_name", _STR), ("topic_id", Uuid),
                                   ("error_code", Int16), ("error_message", _STR), TAGS)),
        TAGS))


class DeleteShareGroupOffsets(Request[DeleteShareGroupOffsetsRequest_v0]):
    API_KEY = 92
    build = build_fields

    def __init__(self, group_id: str, topics: list[str]) -> None:
        self.fields = (group_id, [(t, {}) for t in topics], {})
