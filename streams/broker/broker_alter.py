"""AlterConfigs / IncrementalAlterConfigs on the BROKER resource: Kafka's dynamic broker configs.

Only properties that this broker applies at run time are accepted, each one a config Kafka also
lists as dynamic (`DynamicBrokerConfig`: the log.* defaults of topic configs via
DynamicLogConfig, `message.max.bytes`, `log.cleaner.backoff.ms` via LogCleaner). Any other
known property is read-only, refused as Kafka refuses it ("Cannot update these configs
dynamically"). Updates live in memory until the broker stops (Kafka would persist them in its
metadata log; ours start again from the static config).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .broker_configs import BROKER_PROPERTIES
from .topics import INVALID_CONFIG, INVALID_REQUEST, TopicError

if TYPE_CHECKING:
    from .server import Broker

# Kafka name -> BrokerConfig field, for the dynamic properties we apply live.
DYNAMIC = {
    "message.max.bytes": "message_max_bytes",
    "log.segment.bytes": "log_segment_bytes",
    "log.roll.ms": "log_segment_ms",
    "log.index.interval.bytes": "log_index_interval_bytes",
    "log.retention.ms": "log_retention_ms",
    "log.retention.bytes": "log_retention_bytes",
    "log.cleaner.backoff.ms": "log_cleaner_backoff_ms",
}
_KNOWN = {p.name for p in BROKER_PROPERTIES}
SET, DELETE, APPEND, SUBTRACT = range(4)


def check_resource(broker: Broker, name: str) -> None:
    """Kafka accepts its own id, or "" for the cluster-wide default (the same thing here)."""
    if name not in ("", str(broker.node_id)):
        raise TopicError(INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id} or "
                         f"empty string, but received {name}")


def plan(broker: Broker, changes: dict[str, str | None]) -> dict[str, Any]:
    """Validate every change first (field -> new value; None means back to the static one)."""
    refused = sorted(k for k in changes if k in _KNOWN and k not in DYNAMIC)
    if refused:
        raise TopicError(INVALID_REQUEST, "Cannot update these configs dynamically: "
                         f"Set({', '.join(refused)})")
    unknown = sorted(k for k in changes if k not in DYNAMIC)
    if unknown:
        raise TopicError(INVALID_CONFIG, f"Unknown broker config(s): {', '.join(unknown)}")
    probe = broker.static_config.model_copy()
    out: dict[str, Any] = {}
    for name, value in changes.items():
        field = DYNAMIC[name]
        if value is None:
            out[field] = getattr(broker.static_config, field)
            continue
        try:
            setattr(probe, field, value)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            raise TopicError(INVALID_CONFIG, f"Invalid value {value} for configuration "
                             f"{name}: {reason}") from None
        out[field] = getattr(probe, field)
    return out


def apply(broker: Broker, changes: dict[str, str | None], updated: dict[str, Any]) -> None:
    for field, value in updated.items():
        setattr(broker.config, field, value)
    for name, value in changes.items():
        if value is None:
            broker.dynamic_configs.discard(name)
        else:
            broker.dynamic_configs.add(name)
    broker.topics.reapply_log_configs()


def incremental_changes(resource: Any) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for change in resource.configs:
        if change.config_operation == SET:
            changes[change.name] = change.value
        elif change.config_operation == DELETE:
            changes[change.name] = None
        else:
            raise TopicError(INVALID_REQUEST, f"{change.name} is not a list config; use SET")
    return changes


def alter_broker(broker: Broker, resource: Any, changes: dict[str, str | None],
                 validate_only: bool) -> None:
    check_resource(broker, resource.resource_name)
    updated = plan(broker, changes)
    if not validate_only:
        apply(broker, changes, updated)
