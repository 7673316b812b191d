"""Replication policies: how a replica topic is named and how a name is traced back to its
source cluster (Kafka's ``ReplicationPolicy``, ``DefaultReplicationPolicy`` and
``IdentityReplicationPolicy``, with ``replication.policy.separator`` and
``replication.policy.internal.topic.separator.enabled``)."""

from __future__ import annotations

from collections.abc import Mapping

from connect.config_def import ConfigException

SEPARATOR = "replication.policy.separator"
INTERNAL_SEPARATOR_ENABLED = "replication.policy.internal.topic.separator.enabled"
POLICY_CLASS = "replication.policy.class"

DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


class DefaultReplicationPolicy:
    """``<source alias><separator><topic>``; the source of a name is its first part."""

    def __init__(self, separator: str = ".", internal_separator_enabled: bool = True) -> None:
        if not separator:
            raise ConfigException(f"Invalid value '' for configuration {SEPARATOR}: "
                                  "the separator may not be empty")
        self.separator = separator
        self.internal_separator = separator if internal_separator_enabled else "."

    # -- remote topics -------------------------------------------------------------------------
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        # As Java's String.split: trailing empty parts are dropped, a name with one part has
        # no source.
        parts = topic.split(self.separator)
        while parts and parts[-1] == "":
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def original_topic(self, topic: str) -> str:
        seen = set()
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic or topic in seen:
                return topic
            seen.add(topic)
            topic = upstream

    # -- internal topics -----------------------------------------------------------------------
    def heartbeats_topic(self) -> str:
        return "heartbeats"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        sep = self.internal_separator
        return f"mm2-offset-syncs{sep}{cluster_alias}{sep}internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        sep = self.internal_separator
        return f"{cluster_alias}{sep}checkpoints{sep}internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        sep = self.internal_separator
        return topic.endswith(f"{sep}checkpoints{sep}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self.internal_separator}internal")

    def is_internal_topic(self, topic: str) -> bool:
        return (self.is_mm2_internal_topic(topic) or topic.startswith(("__", "."))
                or topic.endswith(("-internal", ".internal")))


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Replicas keep the source topic's name (heartbeats still get the prefix). Such names cannot
    show where a topic came from, so two flows in opposite directions would loop; the driver
    refuses that configuration."""

    def __init__(self, separator: str = ".", internal_separator_enabled: bool = True,
                 source_alias: str | None = None) -> None:
        super().__init__(separator, internal_separator_enabled)
        self.source_alias = source_alias

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


ReplicationPolicy = DefaultReplicationPolicy

_POLICIES: dict[str, type[DefaultReplicationPolicy]] = {
    DEFAULT_POLICY: DefaultReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    IDENTITY_POLICY: IdentityReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
}


def replication_policy(props: Mapping[str, str],
                       source_alias: str | None = None) -> DefaultReplicationPolicy:
    """The policy a connector or client config names (Kafka's class names or the short ones)."""
    name = str(props.get(POLICY_CLASS) or DEFAULT_POLICY).strip()
    cls = _POLICIES.get(name)
    if cls is None:
        raise ConfigException(f"Invalid value {name} for configuration {POLICY_CLASS}: "
                              f"supported are {DEFAULT_POLICY} and {IDENTITY_POLICY}")
    separator = str(props.get(SEPARATOR, ".") if props.get(SEPARATOR) is not None else ".")
    enabled = str(props.get(INTERNAL_SEPARATOR_ENABLED, "true")).strip().lower() != "false"
    if cls is IdentityReplicationPolicy:
        return IdentityReplicationPolicy(separator, enabled, source_alias)
    return cls(separator, enabled)


def is_identity(props: Mapping[str, str]) -> bool:
    return _POLICIES.get(str(props.get(POLICY_CLASS) or DEFAULT_POLICY).strip()) \
        is IdentityReplicationPolicy


__all__ = ["DEFAULT_POLICY", "IDENTITY_POLICY", "DefaultReplicationPolicy",
           "IdentityReplicationPolicy", "ReplicationPolicy", "is_identity", "replication_policy"]
