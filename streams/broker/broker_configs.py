"""Our broker settings under Kafka's broker property names, for DescribeConfigs (BROKER).

Admin tools look broker configs up by Kafka's names (``log.retention.ms``, ``listeners``), so
each BrokerConfig field is reported under the name, type and read-only flag Kafka declares for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config import BrokerConfig

# DescribeConfigs v3+ ConfigType numbers and ConfigSource numbers (Kafka's DescribeConfigs JSON).
BOOLEAN, STRING, INT, LONG, LIST, PASSWORD = 1, 2, 3, 5, 7, 9
SOURCE_DYNAMIC_BROKER = 2
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

Getter = Callable[[BrokerConfig, int], str | None]


@dataclass(frozen=True, slots=True)
class BrokerProperty:
    """One Kafka broker property: where its value comes from and how Kafka declares it."""

    name: str
    config_type: int
    fields: tuple[str, ...]  # BrokerConfig fields it is derived from (decides static vs default)
    value: Getter
    dynamic: bool = False  # Kafka can update it per broker at run time, so it is not read-only
    sensitive: bool = False  # a secret: described with a null value, as Kafka does


def _field(name: str) -> Getter:
    def get(config: BrokerConfig, port: int) -> str | None:
        value = getattr(config, name)
        if isinstance(value, bool):
            return "true" if value else "false"
        return None if value is None else str(value)

    return get


def _listeners(config: BrokerConfig, port: int) -> str:
    return config.listeners or f"PLAINTEXT://{config.host}:{port}"


def _advertised(config: BrokerConfig, port: int) -> str | None:
    # Kafka's default is null: clients are then given `listeners`.
    if config.advertised_listeners:
        return config.advertised_listeners
    return None if config.advertised_host is None else f"PLAINTEXT://{config.advertised_host}:{port}"


def _log_dirs(config: BrokerConfig, port: int) -> str:
    return os.path.abspath(config.data_dir)


def _simple(name: str, config_type: int, field: str | None = None,
            dynamic: bool = False, sensitive: bool = False) -> BrokerProperty:
    attr = field or name.replace(".", "_")
    return BrokerProperty(name, config_type, (attr,), _field(attr), dynamic, sensitive)


# Types are Kafka 3.x's ConfigDef types; `dynamic` follows DynamicBrokerConfig (listener configs
# and the log.* defaults of topic configs are per-broker updatable in Kafka).
BROKER_PROPERTIES: tuple[BrokerProperty, ...] = (
    BrokerProperty("listeners", STRING, ("host", "port", "listeners"), _listeners,
                   dynamic=True),
    BrokerProperty("advertised.listeners", STRING, ("advertised_host", "advertised_listeners"),
                   _advertised, dynamic=True),
    _simple("broker.id", INT, "node_id"),
    _simple("node.id", INT, "node_id"),
    BrokerProperty("log.dirs", LIST, ("data_dir",), _log_dirs),
    _simple("auto.create.topics.enable", BOOLEAN),
    _simple("num.partitions", INT),
    _simple("default.replication.factor", INT),
    _simple("message.max.bytes", INT, dynamic=True),
    _simple("socket.request.max.bytes", INT),
    _simple("log.segment.bytes", INT, dynamic=True),
    _simple("log.roll.ms", LONG, "log_segment_ms", dynamic=True),
    _simple("log.index.interval.bytes", INT, dynamic=True),
    _simple("log.retention.ms", LONG, dynamic=True),
    _simple("log.retention.bytes", LONG, dynamic=True),
    _simple("log.retention.check.interval.ms", LONG),
    _simple("log.cleaner.backoff.ms", LONG, dynamic=True),
    _simple("offsets.topic.num.partitions", INT),
    _simple("offsets.retention.minutes", INT),
    _simple("group.min.session.timeout.ms", INT),
    _simple("group.max.session.timeout.ms", INT),
    _simple("group.initial.rebalance.delay.ms", INT),
    _simple("group.max.size", INT),
    _simple("group.consumer.session.timeout.ms", INT),
    _simple("group.consumer.heartbeat.interval.ms", INT),
    _simple("group.consumer.max.size", INT),
    _simple("group.consumer.assignors", LIST),
    _simple("group.consumer.migration.policy", STRING),
    _simple("transaction.max.timeout.ms", INT),
    _simple("transaction.state.log.num.partitions", INT),
    _simple("group.share.record.lock.duration.ms", INT),
    _simple("group.share.min.record.lock.duration.ms", INT),
    _simple("group.share.max.record.lock.duration.ms", INT),
    _simple("group.share.delivery.count.limit", INT),
    _simple("group.share.partition.max.record.locks", INT),
    _simple("group.share.session.timeout.ms", INT),
    _simple("group.share.heartbeat.interval.ms", INT),
    # Security, broker-wide values (listener.name.<listener>.* overrides are not listed). Kafka
    # declares the listener configs dynamic (DynamicListenerConfig); here they are static.
    _simple("listener.security.protocol.map", STRING, dynamic=True),
    _simple("sasl.enabled.mechanisms", LIST, dynamic=True),
    _simple("ssl.client.auth", STRING, dynamic=True),
    _simple("ssl.keystore.type", STRING, dynamic=True),
    _simple("ssl.keystore.location", STRING, dynamic=True),
    _simple("ssl.keystore.key", PASSWORD, dynamic=True, sensitive=True),
    _simple("ssl.key.password", PASSWORD, dynamic=True, sensitive=True),
    _simple("ssl.truststore.type", STRING, dynamic=True),
    _simple("ssl.truststore.location", STRING, dynamic=True),
    _simple("ssl.principal.mapping.rules", STRING),
    _simple("authorizer.class.name", STRING),
)


def describe_broker_configs(config: BrokerConfig, port: int, wanted: set[str] | None,
                            include_synonyms: bool, dynamic: set[str] | frozenset[str] = frozenset()
                            ) -> list[dict[str, Any]]:
    """DescribeConfigs entries for this broker; ``wanted`` None means every property."""
    explicit = config.model_fields_set
    defaults = BrokerConfig() if include_synonyms else None
    entries = []
    for prop in BROKER_PROPERTIES:
        if wanted is not None and prop.name not in wanted:
            continue
        value = None if prop.sensitive else prop.value(config, port)
        static = any(f in explicit for f in prop.fields)
        source = SOURCE_STATIC_BROKER if static else SOURCE_DEFAULT
        if prop.name in dynamic:
            source, static = SOURCE_DYNAMIC_BROKER, True
        synonyms = []
        if defaults is not None:  # Kafka lists the value in effect first, then what it overrides
            synonyms.append({"name": prop.name, "value": value, "source": source})
            default = None if prop.sensitive else prop.value(defaults, defaults.port)
            if static and default is not None:
                synonyms.append({"name": prop.name, "value": default, "source": SOURCE_DEFAULT})
        entries.append({
            "name": prop.name, "value": value, "read_only": not prop.dynamic,
            "is_default": not static, "config_source": source, "is_sensitive": prop.sensitive,
            "synonyms": synonyms, "config_type": prop.config_type, "documentation": None,
        })
    return entries
