"""The admin calls MirrorMaker 2 makes on a cluster, on aiokafka's admin client.

aiokafka has no IncrementalAlterConfigs and no AlterConsumerGroupOffsets: topic configs are
written with the legacy AlterConfigs (every override at once, so the caller merges), and group
offsets with an OffsetCommit of generation -1, which a broker accepts only for a group without
members (exactly when Kafka's MirrorCheckpointTask syncs a group).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import for_code
from aiokafka.structs import TopicPartition

from connect.config_def import ConfigException
from connect.mirror.config import ClusterClients
from connect.runtime import clients
from streams.kafka import acls
from streams.kafka.acls import (
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    AclBinding,
    SecurityDisabled,
)

TOPIC_ALREADY_EXISTS = 36
DYNAMIC_TOPIC_CONFIG = 1


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    is_default: bool
    read_only: bool
    sensitive: bool
    source: int | None


@contextlib.asynccontextmanager
async def admin_client(cluster: ClusterClients) -> AsyncIterator[AIOKafkaAdminClient]:
    overrides = cluster.admin_overrides()
    client = clients.admin(cluster.bootstrap, overrides)
    await clients.start_admin(client, cluster.bootstrap, overrides)
    try:
        yield client
    finally:
        await client.close()


async def list_topics(admin: AIOKafkaAdminClient) -> set[str]:
    return set(await admin.list_topics())


async def partition_counts(admin: AIOKafkaAdminClient, topics: Iterable[str]) -> dict[str, int]:
    names = sorted(set(topics))
    if not names:
        return {}
    out = {}
    for topic in await admin.describe_topics(names):
        if topic.get("error_code", 0) == 0 and topic.get("partitions"):
            out[topic["topic"]] = len(topic["partitions"])
    return out


async def topic_configs(admin: AIOKafkaAdminClient,
                        topics: Iterable[str]) -> dict[str, list[ConfigEntry]]:
    names = sorted(set(topics))
    if not names:
        return {}
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name) for name in names])
    out: dict[str, list[ConfigEntry]] = {}
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"]:
                continue
            entries = []
            for entry in resource["config_entries"]:
                source = entry.get("config_source")
                is_default = (source not in (DYNAMIC_TOPIC_CONFIG,) if source is not None
                              else bool(entry.get("is_default", True)))
                entries.append(ConfigEntry(entry["config_names"], entry["config_value"],
                                           is_default, bool(entry.get("read_only")),
                                           bool(entry.get("is_sensitive")), source))
            out[resource["resource_name"]] = entries
    return out


def overrides_of(entries: list[ConfigEntry]) -> dict[str, str]:
    return {e.name: e.value for e in entries if not e.is_default and e.value is not None}


async def create_topics(admin: AIOKafkaAdminClient, topics: list[NewTopic]) -> dict[str, str]:
    """Create topics; a topic that already exists is fine. Returns {topic: error} of failures."""
    if not topics:
        return {}
    response = await admin.create_topics(topics)
    failures = {}
    for result in response.to_object().get("topic_errors", []):
        code = result.get("error_code", 0)
        if code not in (0, TOPIC_ALREADY_EXISTS):
            failures[result["topic"]] = (f"{for_code(code).__name__}: "
                                         f"{result.get('error_message') or ''}").strip()
    return failures


async def broker_count(admin: AIOKafkaAdminClient) -> int:
    cluster = await admin.describe_cluster()
    return max(1, len(cluster.get("brokers", [])))


def new_topic(name: str, partitions: int, replication: int, brokers: int,
              configs: dict[str, str] | None = None) -> NewTopic:
    """A replication factor above the cluster's size is lowered to it (a one-node cluster
    cannot hold 2 or 3 copies); -1 asks the broker's default."""
    rf = replication if replication == -1 else max(1, min(replication, brokers))
    return NewTopic(name, partitions, rf, topic_configs=configs or {})


async def ensure_compacted_topic(cluster: ClusterClients, name: str, replication: int) -> None:
    """Kafka's createSinglePartitionCompactedTopic (offset syncs, checkpoints, heartbeats)."""
    async with admin_client(cluster) as admin:
        if name in await list_topics(admin):
            return
        topic = new_topic(name, 1, replication, await broker_count(admin),
                          {"cleanup.policy": "compact"})
        failures = await create_topics(admin, [topic])
        if failures:
            raise ConfigException(f"cannot create topic {name} on cluster {cluster.alias}: "
                                  f"{failures[name]}")


async def add_partitions(admin: AIOKafkaAdminClient, counts: dict[str, int]) -> dict[str, str]:
    failures = {}
    for topic, count in counts.items():
        try:
            await admin.create_partitions({topic: NewPartitions(count)})
        except Exception as exc:  # noqa: BLE001 - reported per topic
            failures[topic] = str(exc) or type(exc).__name__
    return failures


async def set_topic_overrides(admin: AIOKafkaAdminClient,
                              overrides: dict[str, dict[str, str]]) -> dict[str, str]:
    if not overrides:
        return {}
    responses = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)
         for topic, configs in overrides.items()])
    failures = {}
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"]:
                failures[resource["resource_name"]] = (
                    f"{for_code(resource['error_code']).__name__}: "
                    f"{resource.get('error_message') or ''}").strip()
    return failures


async def consumer_groups(admin: AIOKafkaAdminClient) -> list[str]:
    groups = await admin.list_consumer_groups()
    return sorted({g[0] for g in groups if len(g) < 2 or g[1] in ("consumer", "")})


async def group_offsets(admin: AIOKafkaAdminClient,
                        group: str) -> dict[TopicPartition, tuple[int, str]]:
    offsets = await admin.list_consumer_group_offsets(group)
    return {tp: (meta.offset, meta.metadata or "") for tp, meta in offsets.items()
            if meta.offset >= 0}


async def group_state(admin: AIOKafkaAdminClient, group: str) -> tuple[str, int]:
    """(state, number of members) as DescribeGroups reports them; an unknown group is
    ``Dead`` with none."""
    for response in await admin.describe_consumer_groups([group]):
        for described in response.to_object()["groups"]:
            if described["error_code"]:
                raise ConfigException(f"cannot describe group {group!r}: "
                                      f"{for_code(described['error_code']).__name__}")
            return described["state"], len(described["members"])
    return "Dead", 0


async def commit_group_offsets(admin: AIOKafkaAdminClient, group: str,
                               offsets: dict[TopicPartition, int]) -> None:
    """Commit for a group without members (the broker refuses it while the group has any)."""
    from streams.kafka.admin import commit_offsets

    failed = {tp: code for tp, code in (await commit_offsets(admin, group, offsets)).items()
              if code}
    if failed:
        tp, code = sorted(failed.items())[0]
        raise ConfigException(f"cannot commit {tp.topic}-{tp.partition} for {group!r}: "
                              f"{for_code(code).__name__}")


# Kafka's protocol codes (ResourceType, PatternType, AclOperation, AclPermissionType), from the
# one ACL helper (streams.kafka.acls) the CLI and the console use too.
TOPIC_RESOURCE = RESOURCE_TYPES["TOPIC"]
PATTERN_ANY, PATTERN_LITERAL = PATTERN_TYPES["ANY"], PATTERN_TYPES["LITERAL"]
OPERATION_ANY, OPERATION_ALL = OPERATIONS["ANY"], OPERATIONS["ALL"]
OPERATION_READ, OPERATION_WRITE = OPERATIONS["READ"], OPERATIONS["WRITE"]
PERMISSION_ANY, PERMISSION_ALLOW = PERMISSIONS["ANY"], PERMISSIONS["ALLOW"]


async def topic_acls(admin: AIOKafkaAdminClient) -> list[AclBinding]:
    """Every ACL on a topic (DescribeAcls); SecurityDisabled without an authorizer."""
    try:
        return await acls.describe_acls(admin, acls.AclFilter(resource_type=TOPIC_RESOURCE))
    except SecurityDisabled as exc:
        raise SecurityDisabled(exc.code, exc.message or "no authorizer") from None
    except acls.AclRequestError as exc:
        raise ConfigException(f"DescribeAcls: {for_code(exc.code).__name__}: "
                              f"{exc.message or ''}") from None


async def create_acls(admin: AIOKafkaAdminClient, bindings: list[AclBinding]) -> dict[
        AclBinding, str]:
    """CreateAcls, one binding per request; {binding: error} of the failures."""
    failures = {}
    for b in bindings:
        try:
            await acls.create_acl(admin, b)
        except acls.AclRequestError as exc:
            failures[b] = f"{for_code(exc.code).__name__}: {exc.message or ''}".strip()
    return failures


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["ConfigEntry", "add_partitions", "admin_client", "broker_count",
           "commit_group_offsets", "consumer_groups", "create_topics", "describe_error",
           "ensure_compacted_topic", "group_offsets", "group_state", "list_topics", "new_topic",
           "overrides_of", "partition_counts", "set_topic_overrides", "topic_configs"]

_ = Any
