"""Kafka request formats that aiokafka does not ship, written from Kafka's message schemas
(``clients/src/main/resources/common/message/*.json``): OffsetDelete (KIP-496), the SCRAM
credential APIs (KIP-554), DescribeLogDirs (KIP-113), IncrementalAlterConfigs (KIP-339),
OffsetFetch v8 for many groups at once (KIP-709) and DescribeGroups pinned to v2; the group
requests of KIP-848 and KIP-932 are in ``streams.kafka.group_requests``.

Each format is one :func:`api_version` (its request and response schemas) and a ``Request`` that
builds it from its constructor's arguments, as aiokafka's own requests do."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiokafka import TopicPartition
from aiokafka.protocol.admin import DescribeGroupsRequest_v2
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Array,
    Boolean,
    CompactArray,
    CompactBytes,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)

TAGS = ("tags", TaggedFields)  # a flexible version's tagged fields (KIP-482)
_STR = CompactString("utf-8")


def api_version(name: str, api_key: int, version: int, request: Schema, response: Schema,
                flexible: bool) -> type[RequestStruct]:
    """One version of a Kafka API as aiokafka's struct classes: the request struct (named
    ``<name>Request_v<version>``), whose ``RESPONSE_TYPE`` reads the answer. ``flexible``: the
    version uses KIP-482's compact types and tagged fields (its schema's ``flexibleVersions``)."""
    answer = type(f"{name}Response_v{version}", (Response,),
                  {"API_KEY": api_key, "API_VERSION": version, "SCHEMA": response,
                   "__module__": __name__})
    return type(f"{name}Request_v{version}", (RequestStruct,),
                {"FLEXIBLE_VERSION": flexible, "API_KEY": api_key, "API_VERSION": version,
                 "RESPONSE_TYPE": answer, "SCHEMA": request, "__module__": __name__})


def build_fields(self: Any, request_struct_class: type[RequestStruct]) -> RequestStruct:
    """``Request.build`` for a request of one version: that version's struct from the field
    values its constructor put in ``self.fields``."""
    return request_struct_class(*self.fields)


OffsetDeleteRequest_v0 = api_version(
    "OffsetDelete", 47, 0, flexible=False,
    request=Schema(("group_id", String("utf-8")),
                   ("topics", Array(("name", String("utf-8")), ("partitions", Array(Int32))))),
    response=Schema(("error_code", Int16), ("throttle_time_ms", Int32),
                    ("topics", Array(("name", String("utf-8")),
                                     ("partitions", Array(("partition_index", Int32),
                                                          ("error_code", Int16)))))))


class OffsetDelete(Request[OffsetDeleteRequest_v0]):
    API_KEY = 47
    build = build_fields

    def __init__(self, group: str, partitions: Iterable[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        self.fields = (group, [(t, sorted(ps)) for t, ps in sorted(by_topic.items())])


DescribeUserScramCredentialsRequest_v0 = api_version(
    "DescribeUserScramCredentials", 50, 0, flexible=True,
    request=Schema(("users", CompactArray(("name", _STR), TAGS)), TAGS),
    response=Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16), ("error_message", _STR),
        ("results", CompactArray(
            ("user", _STR), ("error_code", Int16), ("error_message", _STR),
            ("credential_infos", CompactArray(("mechanism", Int8), ("iterations", Int32), TAGS)),
            TAGS)),
        TAGS))


class DescribeUserScramCredentials(Request[DescribeUserScramCredentialsRequest_v0]):
    API_KEY = 50
    build = build_fields

    def __init__(self, users: list[str] | None) -> None:
        self.fields = (None if users is None else [(name, {}) for name in users], {})


AlterUserScramCredentialsRequest_v0 = api_version(
    "AlterUserScramCredentials", 51, 0, flexible=True,
    request=Schema(
        ("deletions", CompactArray(("name", _STR), ("mechanism", Int8), TAGS)),
        ("upsertions", CompactArray(("name", _STR), ("mechanism", Int8), ("iterations", Int32),
                                    ("salt", CompactBytes), ("salted_password", CompactBytes),
                                    TAGS)),
        TAGS),
    response=Schema(
        ("throttle_time_ms", Int32),
        ("results", CompactArray(("user", _STR), ("error_code", Int16),
                                 ("error_message", _STR), TAGS)),
        TAGS))


class AlterUserScramCredentials(Request[AlterUserScramCredentialsRequest_v0]):
    API_KEY = 51
    build = build_fields

    def __init__(self, deletions: list[tuple[str, int]],
                 upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None:
        self.fields = ([(*d, {}) for d in deletions], [(*u, {}) for u in upsertions], {})


DescribeLogDirsRequest_v1 = api_version(
    "DescribeLogDirs", 35, 1, flexible=False,
    request=Schema(("topics", Array(("topic", String("utf-8")), ("partitions", Array(Int32))))),
    response=Schema(
        ("throttle_time_ms", Int32),
        ("results", Array(
            ("error_code", Int16), ("log_dir", String("utf-8")),
            ("topics", Array(
                ("name", String("utf-8")),
                ("partitions", Array(("partition_index", Int32), ("partition_size", Int64),
                                     ("offset_lag", Int64), ("is_future_key", Boolean)))))))))


class DescribeLogDirs(Request[DescribeLogDirsRequest_v1]):
    """Every log directory of the broker it is sent to, with each partition's size (topics
    None: all of them)."""

    API_KEY = 35
    build = build_fields
    fields = (None,)


IncrementalAlterConfigsRequest_v0 = api_version(
    "IncrementalAlterConfigs", 44, 0, flexible=False,
    request=Schema(
        ("resources", Array(
            ("resource_type", Int8), ("resource_name", String("utf-8")),
            ("configs", Array(("name", String("utf-8")), ("config_operation", Int8),
                              ("value", String("utf-8")))))),
        ("validate_only", Boolean)),
    response=Schema(
        ("throttle_time_ms", Int32),
        ("responses", Array(("error_code", Int16), ("error_message", String("utf-8")),
                            ("resource_type", Int8), ("resource_name", String("utf-8"))))))


class IncrementalAlterConfigs(Request[IncrementalAlterConfigsRequest_v0]):
    """Change only the named configs of one resource (SET 0 with a value, DELETE 1 with None):
    unlike the legacy AlterConfigs, the others, secrets included, are left as they are."""

    API_KEY = 44
    SET, DELETE = 0, 1
    build = build_fields

    def __init__(self, resource_type: int, name: str, changes: dict[str, str | None]) -> None:
        self.fields = ([(resource_type, name, [
            (key, self.SET if value is not None else self.DELETE, value)
            for key, value in changes.items()])], False)


OffsetFetchRequest_v8 = api_version(
    "OffsetFetch", 9, 8, flexible=True,
    request=Schema(
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(("name", _STR), ("partition_indexes", CompactArray(Int32)),
                                    TAGS)),
            TAGS)),
        ("require_stable", Boolean), TAGS),
    response=Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("group_id", _STR),
            ("topics", CompactArray(
                ("name", _STR),
                ("partitions", CompactArray(
                    ("partition_index", Int32), ("committed_offset", Int64),
                    ("committed_leader_epoch", Int32), ("metadata", _STR),
                    ("error_code", Int16), TAGS)),
                TAGS)),
            ("error_code", Int16), TAGS)),
        TAGS))


class OffsetFetchGroups(Request[OffsetFetchRequest_v8]):
    """The committed offsets of every partition of each group, for many groups in one request
    (topics None: all of a group's partitions). Sent to the groups' coordinator."""

    API_KEY = 9
    build = build_fields

    def __init__(self, groups: list[str]) -> None:
        self.fields = ([(g, None, {}) for g in groups], False, {})


class DescribeGroupsV2(Request[DescribeGroupsRequest_v2]):
    """DescribeGroups pinned to v2: aiokafka 0.14 sends v3 but reads the answer with v2's
    layout, which lacks v3's authorized_operations, so a response with two or more groups is
    misread (the second group's fields shift) or fails to decode."""

    API_KEY = 15
    build = build_fields

    def __init__(self, groups: list[str]) -> None:
        self.fields = (groups,)
