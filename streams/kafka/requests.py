"""Kafka request formats that aiokafka does not ship, written from Kafka's message schemas
(``clients/src/main/resources/common/message/*.json``): OffsetDelete (KIP-496), the SCRAM
credential APIs (KIP-554), DescribeLogDirs (KIP-113), IncrementalAlterConfigs (KIP-339) and
OffsetFetch v8 for many groups at once (KIP-709)."""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka import TopicPartition
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


class OffsetDeleteResponse_v0(Response):  # noqa: N801 (aiokafka's naming)
    API_KEY = 47
    API_VERSION = 0
    SCHEMA = Schema(
        ("error_code", Int16),
        ("throttle_time_ms", Int32),
        ("topics", Array(("name", String("utf-8")),
                         ("partitions", Array(("partition_index", Int32),
                                              ("error_code", Int16))))))


class OffsetDeleteRequest_v0(RequestStruct):  # noqa: N801
    API_KEY = 47
    API_VERSION = 0
    RESPONSE_TYPE = OffsetDeleteResponse_v0
    SCHEMA = Schema(
        ("group_id", String("utf-8")),
        ("topics", Array(("name", String("utf-8")),
                         ("partitions", Array(Int32)))))


class OffsetDelete(Request[OffsetDeleteRequest_v0]):
    API_KEY = 47

    def __init__(self, group: str, partitions: Iterable[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        self.group = group
        self.topics = [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]

    def build(self, request_struct_class: type[OffsetDeleteRequest_v0]) -> OffsetDeleteRequest_v0:
        return request_struct_class(self.group, self.topics)


class DescribeUserScramCredentialsResponse_v0(Response):  # noqa: N801
    API_KEY = 50
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32), ("error_code", Int16),
        ("error_message", CompactString("utf-8")),
        ("results", CompactArray(
            ("user", CompactString("utf-8")), ("error_code", Int16),
            ("error_message", CompactString("utf-8")),
            ("credential_infos", CompactArray(("mechanism", Int8), ("iterations", Int32),
                                              ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class DescribeUserScramCredentialsRequest_v0(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 50
    API_VERSION = 0
    RESPONSE_TYPE = DescribeUserScramCredentialsResponse_v0
    SCHEMA = Schema(("users", CompactArray(("name", CompactString("utf-8")),
                                           ("tags", TaggedFields))),
                    ("tags", TaggedFields))


class DescribeUserScramCredentials(Request[DescribeUserScramCredentialsRequest_v0]):
    API_KEY = 50

    def __init__(self, users: list[str] | None) -> None:
        self.users = users

    def build(self, request_struct_class: type[DescribeUserScramCredentialsRequest_v0]
              ) -> DescribeUserScramCredentialsRequest_v0:
        users = None if self.users is None else [(name, {}) for name in self.users]
        return request_struct_class(users, {})


class AlterUserScramCredentialsResponse_v0(Response):  # noqa: N801
    API_KEY = 51
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("results", CompactArray(("user", CompactString("utf-8")), ("error_code", Int16),
                                 ("error_message", CompactString("utf-8")),
                                 ("tags", TaggedFields))),
        ("tags", TaggedFields))


class AlterUserScramCredentialsRequest_v0(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 51
    API_VERSION = 0
    RESPONSE_TYPE = AlterUserScramCredentialsResponse_v0
    SCHEMA = Schema(
        ("deletions", CompactArray(("name", CompactString("utf-8")), ("mechanism", Int8),
                                   ("tags", TaggedFields))),
        ("upsertions", CompactArray(("name", CompactString("utf-8")), ("mechanism", Int8),
                                    ("iterations", Int32), ("salt", CompactBytes),
                                    ("salted_password", CompactBytes),
                                    ("tags", TaggedFields))),
        ("tags", TaggedFields))


class AlterUserScramCredentials(Request[AlterUserScramCredentialsRequest_v0]):
    API_KEY = 51

    def __init__(self, deletions: list[tuple[str, int]],
                 upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None:
        self.deletions = deletions
        self.upsertions = upsertions

    def build(self, request_struct_class: type[AlterUserScramCredentialsRequest_v0]
              ) -> AlterUserScramCredentialsRequest_v0:
        return request_struct_class([(*d, {}) for d in self.deletions],
                                    [(*u, {}) for u in self.upsertions], {})


class DescribeLogDirsResponse_v1(Response):  # noqa: N801
    API_KEY = 35
    API_VERSION = 1
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("results", Array(
            ("error_code", Int16), ("log_dir", String("utf-8")),
            ("topics", Array(
                ("name", String("utf-8")),
                ("partitions", Array(("partition_index", Int32), ("partition_size", Int64),
                                     ("offset_lag", Int64), ("is_future_key", Boolean))))))))


class DescribeLogDirsRequest_v1(RequestStruct):  # noqa: N801
    API_KEY = 35
    API_VERSION = 1
    RESPONSE_TYPE = DescribeLogDirsResponse_v1
    SCHEMA = Schema(("topics", Array(("topic", String("utf-8")), ("partitions", Array(Int32)))))


class DescribeLogDirs(Request[DescribeLogDirsRequest_v1]):
    """Every log directory of the broker it is sent to, with each partition's size (topics
    None: all of them)."""

    API_KEY = 35

    def build(self, request_struct_class: type[DescribeLogDirsRequest_v1]
              ) -> DescribeLogDirsRequest_v1:
        return request_struct_class(None)


class IncrementalAlterConfigsResponse_v0(Response):  # noqa: N801
    API_KEY = 44
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("responses", Array(("error_code", Int16), ("error_message", String("utf-8")),
                            ("resource_type", Int8), ("resource_name", String("utf-8")))))


class IncrementalAlterConfigsRequest_v0(RequestStruct):  # noqa: N801
    API_KEY = 44
    API_VERSION = 0
    RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
    SCHEMA = Schema(
        ("resources", Array(
            ("resource_type", Int8), ("resource_name", String("utf-8")),
            ("configs", Array(("name", String("utf-8")), ("config_operation", Int8),
                              ("value", String("utf-8")))))),
        ("validate_only", Boolean))


class IncrementalAlterConfigs(Request[IncrementalAlterConfigsRequest_v0]):
    """Change only the named configs of one resource (SET 0 with a value, DELETE 1 with None):
    unlike the legacy AlterConfigs, the others, secrets included, are left as they are."""

    API_KEY = 44
    SET, DELETE = 0, 1

    def __init__(self, resource_type: int, name: str, changes: dict[str, str | None]) -> None:
        self.resources = [(resource_type, name, [
            (key, self.SET if value is not None else self.DELETE, value)
            for key, value in changes.items()])]

    def build(self, request_struct_class: type[IncrementalAlterConfigsRequest_v0]
              ) -> IncrementalAlterConfigsRequest_v0:
        return request_struct_class(self.resources, False)


class OffsetFetchResponse_v8(Response):  # noqa: N801
    API_KEY = 9
    API_VERSION = 8
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("group_id", CompactString("utf-8")),
            ("topics", CompactArray(
                ("name", CompactString("utf-8")),
                ("partitions", CompactArray(
                    ("partition_index", Int32), ("committed_offset", Int64),
                    ("committed_leader_epoch", Int32), ("metadata", CompactString("utf-8")),
                    ("error_code", Int16), ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("error_code", Int16), ("tags", TaggedFields))),
        ("tags", TaggedFields))


class OffsetFetchRequest_v8(RequestStruct):  # noqa: N801
    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 8
    RESPONSE_TYPE = OffsetFetchResponse_v8
    SCHEMA = Schema(
        ("groups", CompactArray(
            ("group_id", CompactString("utf-8")),
            ("topics", CompactArray(("name", CompactString("utf-8")),
                                    ("partition_indexes", CompactArray(Int32)),
                                    ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("require_stable", Boolean),
        ("tags", TaggedFields))


class OffsetFetchGroups(Request[OffsetFetchRequest_v8]):
    """The committed offsets of every partition of each group, for many groups in one request
    (topics None: all of a group's partitions). Sent to the groups' coordinator."""

    API_KEY = 9

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups

    def build(self, request_struct_class: type[OffsetFetchRequest_v8]) -> OffsetFetchRequest_v8:
        return request_struct_class([(g, None, {}) for g in self.groups], False, {})
