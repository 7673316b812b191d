"""What the three MirrorMaker 2 connectors share: their config keys (Kafka's names and defaults),
the clients of the source and target clusters, and the topic/group/config-property filters.

Cluster connections come as Kafka's MM2 connector configs carry them: ``source.cluster.*`` and
``target.cluster.*`` (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``), with
per-client overrides ``source.consumer.*``, ``target.producer.*``, ``source.admin.*``, ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.config_def import ConfigDef, ConfigException, ConfigType, Importance, ValidString
from connect.mirror.policy import (
    INTERNAL_SEPARATOR_ENABLED,
    POLICY_CLASS,
    SEPARATOR,
    DefaultReplicationPolicy,
    replication_policy,
)
from streams.kafka.client_config import JVM_ONLY_KEYS, SECURITY_KEYS

SOURCE_ALIAS = "source.cluster.alias"
TARGET_ALIAS = "target.cluster.alias"
ENABLED = "enabled"
OFFSET_SYNCS_LOCATION = "offset-syncs.topic.location"
EMIT_OFFSET_SYNCS = "emit.offset-syncs.enabled"

TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, min\.insync\.replicas")

# Client keys a cluster-level setting passes to every client of that cluster (besides
# bootstrap.servers and the security keys).
_SHARED_CLIENT_KEYS = ("request.timeout.ms", "metadata.max.age.ms")

# Kafka's pluggable classes we do not load: refused by name when set to anything else.
_FIXED_CLASSES = {
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
    "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    "forwarding.admin.class": "org.apache.kafka.clients.admin.ForwardingAdmin",
}


def _location(name: str, value: Any) -> None:
    if str(value) not in ("source", "target"):
        raise ConfigException(f"Invalid value {value} for configuration {name}: "
                              "String must be one of: source, target")


def base_config_def() -> ConfigDef:
    """Keys every MirrorMaker 2 connector understands (Kafka's MirrorConnectorConfig)."""
    definition = (
        ConfigDef()
        .define(ENABLED, ConfigType.BOOLEAN, True, None, Importance.LOW,
                "Whether to replicate source->target.")
        .define(SOURCE_ALIAS, ConfigType.STRING, "source", None, Importance.HIGH,
                "Alias of source cluster")
        .define(TARGET_ALIAS, ConfigType.STRING, "target", None, Importance.HIGH,
                "Alias of target cluster. Used in metrics reporting.")
        .define(POLICY_CLASS, ConfigType.STRING,
                "org.apache.kafka.connect.mirror.DefaultReplicationPolicy", None, Importance.LOW,
                "Class which defines the remote topic naming convention.")
        .define(SEPARATOR, ConfigType.STRING, ".", None, Importance.LOW,
                "Separator used in remote topic naming convention.")
        .define(INTERNAL_SEPARATOR_ENABLED, ConfigType.BOOLEAN, True, None, Importance.LOW,
                "Whether to use replication.policy.separator in internal topic names.")
        .define("admin.timeout.ms", ConfigType.LONG, 60000, None, Importance.LOW,
                "Timeout for administrative tasks, e.g. detecting new topics.")
        .define(OFFSET_SYNCS_LOCATION, ConfigType.STRING, "source", _location, Importance.LOW,
                "The location (source/target) of the offset-syncs topic.")
        .define("source.cluster.bootstrap.servers", ConfigType.STRING, None, None,
                Importance.HIGH, "The source cluster's bootstrap servers.")
        .define("target.cluster.bootstrap.servers", ConfigType.STRING, None, None,
                Importance.HIGH, "The target cluster's bootstrap servers.")
    )
    for key in sorted(client_keys()):
        kind = ConfigType.PASSWORD if "password" in key or key.endswith(
            (".jaas.config", ".keystore.key", "certificate.chain", ".certificates")) \
            else ConfigType.STRING
        definition.define(key, kind, None, None, Importance.LOW,
                          "A client setting of the " + key.split(".", 1)[0] + " cluster.")
    return definition


def client_keys() -> set[str]:
    """``source.cluster.security.protocol``, ``source.consumer.isolation.level``, ...: the
    client settings the connectors pass to their clients of each cluster."""
    from connect.runtime import clients

    roles = {"consumer": clients._CONSUMER, "producer": clients._PRODUCER,  # noqa: SLF001
             "admin": clients._ADMIN}  # noqa: SLF001
    shared = set(SECURITY_KEYS) | set(JVM_ONLY_KEYS) | set(_SHARED_CLIENT_KEYS)
    out = set()
    for side in ("source", "target"):
        out.update(f"{side}.cluster.{key}" for key in shared)
        for role, table in roles.items():
            out.update(f"{side}.{role}.{key}" for key in (set(table) | shared)
                       if key != "bootstrap.servers")
    return out


def seconds(value: int) -> float:
    """Kafka's ``*.interval.seconds``: a negative value disables the job."""
    return float(value)


def pattern_list(patterns: list[str]) -> re.Pattern[str] | None:
    """Kafka's compilePatternList: alternatives that must match the whole name; an empty list
    matches nothing."""
    if not patterns:
        return None
    try:
        return re.compile("|".join(patterns))
    except re.error as exc:
        raise ConfigException(f"Invalid regular expression {patterns}: {exc}") from None


class NameFilter:
    """Include/exclude regex lists (DefaultTopicFilter, DefaultGroupFilter,
    DefaultConfigPropertyFilter)."""

    def __init__(self, include: list[str] | None, exclude: list[str]) -> None:
        self.include = pattern_list(include) if include is not None else None
        self.exclude = pattern_list(exclude)
        self.include_all = include is None

    def __call__(self, name: str) -> bool:
        included = self.include_all or (self.include is not None
                                        and self.include.fullmatch(name) is not None)
        excluded = self.exclude is not None and self.exclude.fullmatch(name) is not None
        return included and not excluded


def refuse_unsupported(props: Mapping[str, str]) -> None:
    """Settings of Kafka's MM2 that name classes we cannot load: refused by name."""
    for key, default in _FIXED_CLASSES.items():
        value = props.get(key)
        if value and value.strip() not in (default, default.rsplit(".", 1)[-1]):
            raise ConfigException(f"Invalid value {value} for configuration {key}: only "
                                  f"{default} is supported")


def _cluster_client_props(props: Mapping[str, str], cluster: str) -> dict[str, str]:
    """bootstrap.servers, security and shared client keys of ``source``/``target`` cluster."""
    prefix = f"{cluster}.cluster."
    out: dict[str, str] = {}
    for key, value in props.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if name in SECURITY_KEYS or name in JVM_ONLY_KEYS or name in _SHARED_CLIENT_KEYS:
            out[name] = value
    return out


@dataclass(frozen=True)
class ClusterClients:
    """How to reach one side of the flow, and each client role's overrides."""

    alias: str
    bootstrap: str
    shared: dict[str, str]
    consumer: dict[str, str]
    producer: dict[str, str]
    admin: dict[str, str]

    def consumer_overrides(self, **extra: str) -> dict[str, str]:
        return {**self.shared, **extra, **self.consumer}

    def producer_overrides(self) -> dict[str, str]:
        return {**self.shared, **self.producer}

    def admin_overrides(self) -> dict[str, str]:
        return {**self.shared, **self.admin}


def cluster_clients(props: Mapping[str, str], side: str, alias: str) -> ClusterClients:
    """``side`` is ``source`` or ``target``; unprefixed ``consumer.*`` apply to the source
    consumer and ``producer.*`` to the target producer, as in Kafka's MirrorConnectorConfig."""
    bootstrap = props.get(f"{side}.cluster.bootstrap.servers") or ""
    if not bootstrap.strip():
        raise ConfigException(f"Missing required configuration \"{side}.cluster.bootstrap.servers\""
                              f" (how to reach the {side} cluster {alias!r})")

    def role(name: str) -> dict[str, str]:
        out = {}
        if (side, name) in (("source", "consumer"), ("target", "producer"), ("target", "admin")):
            out.update({k[len(name) + 1:]: v for k, v in props.items()
                        if k.startswith(f"{name}.") and not k.startswith(f"{name}.override.")})
        prefix = f"{side}.{name}."
        out.update({k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)})
        return out

    return ClusterClients(alias, bootstrap, _cluster_client_props(props, side), role("consumer"),
                          role("producer"), role("admin"))


@dataclass(frozen=True)
class FlowConfig:
    """The parts of a mirror connector's config every connector and task reads."""

    enabled: bool
    source: ClusterClients
    target: ClusterClients
    policy: DefaultReplicationPolicy
    admin_timeout: float
    offset_syncs_location: str

    @property
    def source_alias(self) -> str:
        return self.source.alias

    @property
    def target_alias(self) -> str:
        return self.target.alias

    def offset_syncs_topic(self) -> str:
        """On the source cluster it is named after the target, on the target after the source
        (Kafka's MirrorSourceConfig.offsetSyncsTopic)."""
        other = self.target_alias if self.offset_syncs_location == "source" \
            else self.source_alias
        return self.policy.offset_syncs_topic(other)

    def offset_syncs_cluster(self) -> ClusterClients:
        return self.source if self.offset_syncs_location == "source" else self.target

    def checkpoints_topic(self) -> str:
        return self.policy.checkpoints_topic(self.source_alias)


def flow_config(props: Mapping[str, str], parsed: Mapping[str, Any]) -> FlowConfig:
    refuse_unsupported(props)
    source_alias, target_alias = parsed[SOURCE_ALIAS], parsed[TARGET_ALIAS]
    return FlowConfig(
        enabled=bool(parsed[ENABLED]),
        source=cluster_clients(props, "source", source_alias),
        target=cluster_clients(props, "target", target_alias),
        policy=replication_policy(props, source_alias),
        admin_timeout=max(1.0, parsed["admin.timeout.ms"] / 1000),
        offset_syncs_location=parsed[OFFSET_SYNCS_LOCATION],
    )


def replication_factor(name: str, value: Any) -> None:
    if value is not None and (int(value) == 0 or int(value) < -1):
        raise ConfigException(f"Invalid value {value} for configuration {name}: "
                              "must be -1 (broker default) or at least 1")


def location_validator() -> ValidString:
    return ValidString(["source", "target"])


__all__ = ["CONFIG_PROPERTIES_EXCLUDE_DEFAULT", "GROUPS_DEFAULT", "GROUPS_EXCLUDE_DEFAULT",
           "TOPICS_DEFAULT", "TOPICS_EXCLUDE_DEFAULT", "ClusterClients", "FlowConfig",
           "NameFilter", "base_config_def", "cluster_clients", "flow_config", "pattern_list",
           "refuse_unsupported", "replication_factor"]
