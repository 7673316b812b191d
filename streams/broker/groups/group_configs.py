"""Per-group configs (KIP-848 / KIP-932 ``GroupConfig``): IncrementalAlterConfigs,
AlterConfigs and DescribeConfigs on GROUP resources (resource type 32).

A group config overrides, for one group id, the broker default of the same setting
(``share.record.lock.duration.ms`` over ``group.share.record.lock.duration.ms``...). The keys,
types, bounds and error messages are Apache Kafka 4.4's ``GroupConfig``; a group config may be
set before the group exists, and outlives it: Kafka keeps them in its cluster metadata, and
DeleteGroups leaves them there (Kafka 4.4, also across a restart) until an IncrementalAlterConfigs
DELETE removes them, so a group created again under the same id finds them. Ours live in
``group_configs.json`` in the data directory, replaced atomically.

Only keys this broker honours are accepted: the streams-group keys, the dead-letter-queue keys
and the ``*.assignment.interval.ms`` keys (assignment batching, KIP-1263) are refused naming the
key, rather than stored and ignored.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import BrokerConfig

INVALID_REQUEST = 42
INVALID_CONFIG = 40
FILE_NAME = "group_configs.json"
SET, DELETE, APPEND, SUBTRACT = range(4)

# DescribeConfigs ConfigSource values.
SOURCE_GROUP = 8  # GROUP_CONFIG: set on this group
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT = 1, 2, 3

# Kafka 4.4's GroupCoordinatorConfig defaults for the bounds we have no broker key for.
CONSUMER_SESSION_BOUNDS = (45_000, 60_000)
CONSUMER_HEARTBEAT_BOUNDS = (5_000, 15_000)
SHARE_SESSION_BOUNDS = (45_000, 60_000)
SHARE_HEARTBEAT_BOUNDS = (5_000, 15_000)
_DURATION = re.compile(r"^P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$")
_NOT_HONOURED = ("streams.", "errors.deadletterqueue.", "consumer.assignment.interval.ms",
                 "share.assignment.interval.ms")


class GroupConfigError(ValueError):
    """A refused group config change; ``code`` is Kafka's error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class GroupKey:
    """One group config: its type, the broker key it overrides, and how values are checked."""

    name: str
    config_type: int
    broker_key: str | None
    default: Callable[[BrokerConfig], str]
    check: Callable[[BrokerConfig, str], str | None]  # an error message, or None


def _int_in(name: str, bounds: Callable[[BrokerConfig], tuple[int, int]]
            ) -> Callable[[BrokerConfig, str], str | None]:
    def check(config: BrokerConfig, value: str) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type INT"
        low, high = bounds(config)
        if not low <= number <= high:
            return f"{name} must be in the range {low} to {high} inclusive."
        return None
    return check


def _int_at_least(name: str, low: int) -> Callable[[BrokerConfig, str], str | None]:
    def check(config: BrokerConfig, value: str) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type INT"
        if number < low:
            return f"Invalid value {value} for configuration {name}: Value must be at least {low}"
        return None
    return check


def _check_reset(config: BrokerConfig, value: str) -> str | None:
    if value in ("earliest", "latest") or (
            value.startswith("by_duration:") and _DURATION.match(value[12:])
            and value[12:] not in ("P", "PT")):
        return None
    name = "share.auto.offset.reset"
    return (f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
            f"configuration {name}. The value must be either 'earliest', 'latest' or of the "
            "format 'by_duration:<PnDTnHnMn.nS>'.")


def _check_isolation(config: BrokerConfig, value: str) -> str | None:
    if value in ("read_committed", "read_uncommitted"):
        return None
    return (f"Invalid value {value} for configuration share.isolation.level: String must be "
            "one of: read_committed, read_uncommitted")


def _check_boolean(name: str) -> Callable[[BrokerConfig, str], str | None]:
    def check(config: BrokerConfig, value: str) -> str | None:
        if value.strip().lower() in ("true", "false"):
            return None
        return (f"Invalid value {value} for configuration {name}: Expected value to be either "
                "true or false")
    return check


def is_true(value: str) -> bool:
    """A BOOLEAN config's value, as Kafka's ConfigDef reads it (trimmed, any case)."""
    return value.strip().lower() == "true"


def _delivery_limit_bounds(config: BrokerConfig) -> tuple[int, int]:
    return 2, 10  # group.share.min/max.delivery.count.limit (Kafka 4.4's defaults)


KEYS: dict[str, GroupKey] = {k.name: k for k in (
    GroupKey("consumer.session.timeout.ms", TYPE_INT, "group.consumer.session.timeout.ms",
             lambda c: str(c.group_consumer_session_timeout_ms),
             _int_in("consumer.session.timeout.ms", lambda c: CONSUMER_SESSION_BOUNDS)),
    GroupKey("consumer.heartbeat.interval.ms", TYPE_INT, "group.consumer.heartbeat.interval.ms",
             lambda c: str(c.group_consumer_heartbeat_interval_ms),
             _int_in("consumer.heartbeat.interval.ms", lambda c: CONSUMER_HEARTBEAT_BOUNDS)),
    GroupKey("share.session.timeout.ms", TYPE_INT, "group.share.session.timeout.ms",
             lambda c: str(c.group_share_session_timeout_ms),
             _int_in("share.session.timeout.ms", lambda c: SHARE_SESSION_BOUNDS)),
    GroupKey("share.heartbeat.interval.ms", TYPE_INT, "group.share.heartbeat.interval.ms",
             lambda c: str(c.group_share_heartbeat_interval_ms),
             _int_in("share.heartbeat.interval.ms", lambda c: SHARE_HEARTBEAT_BOUNDS)),
    GroupKey("share.record.lock.duration.ms", TYPE_INT, "group.share.record.lock.duration.ms",
             lambda c: str(c.group_share_record_lock_duration_ms),
             _int_in("share.record.lock.duration.ms",
                     lambda c: (c.group_share_min_record_lock_duration_ms,
                                c.group_share_max_record_lock_duration_ms))),
    GroupKey("share.delivery.count.limit", TYPE_INT, "group.share.delivery.count.limit",
             lambda c: str(c.group_share_delivery_count_limit),
             _int_in("share.delivery.count.limit", _delivery_limit_bounds)),
    GroupKey("share.partition.max.record.locks", TYPE_INT,
             "group.share.partition.max.record.locks",
             lambda c: str(c.group_share_partition_max_record_locks),
             _int_at_least("share.partition.max.record.locks", 100)),
    GroupKey("share.auto.offset.reset", TYPE_STRING, None, lambda c: "latest", _check_reset),
    GroupKey("share.isolation.level", TYPE_STRING, None, lambda c: "read_uncommitted",
             _check_isolation),
    # KIP-1222: whether members may RENEW their acquisition locks (no broker key; default true).
    GroupKey("share.renew.acknowledge.enable", TYPE_BOOLEAN, None, lambda c: "true",
             _check_boolean("share.renew.acknowledge.enable")),
)}


class GroupConfigs:
    """The group configs of every group id, persisted in ``group_configs.json``."""

    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        self.config = config
        self.path = Path(data_dir) / FILE_NAME
        self.groups: dict[str, dict[str, str]] = {}
        self._version = 0  # bumped by every store
        self._saved = 0  # the version on disk
        self._saving = asyncio.Lock()

    def load(self) -> None:
        if self.path.exists():
            try:
                doc = json.loads(self.path.read_text())
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"cannot read group configs {self.path}: {exc}") from exc
            self.groups = {str(g): {str(k): str(v) for k, v in c.items()}
                           for g, c in doc.get("groups", {}).items()}

    # -- reading -------------------------------------------------------------------------------

    def value(self, group_id: str, name: str) -> str:
        """The group's value of ``name``, else the broker default."""
        own = self.groups.get(group_id, {}).get(name)
        return own if own is not None else KEYS[name].default(self.config)

    def int_value(self, group_id: str, name: str) -> int:
        return int(self.value(group_id, name))

    def describe(self, group_id: str, wanted: set[str] | None, synonyms: bool
                 ) -> list[dict[str, object]]:
        """DescribeConfigs entries, as Kafka 4.4 answers for a GROUP resource."""
        own = self.groups.get(group_id, {})
        out: list[dict[str, object]] = []
        for name in sorted(KEYS):
            if wanted is not None and name not in wanted:
                continue
            key = KEYS[name]
            default = key.default(self.config)
            broker_set = key.broker_key is not None and key.broker_key.replace(
                ".", "_") in self.config.model_fields_set
            default_source = SOURCE_STATIC_BROKER if broker_set else SOURCE_DEFAULT
            chain: list[dict[str, object]] = []
            if name in own:
                chain.append({"name": name, "value": own[name], "source": SOURCE_GROUP})
            chain.append({"name": key.broker_key or name, "value": default,
                          "source": default_source})
            out.append({
                "name": name, "value": own.get(name, default), "read_only": False,
                "is_default": name not in own,
                "config_source": SOURCE_GROUP if name in own else default_source,
                "is_sensitive": False, "synonyms": chain if synonyms else [],
                "config_type": key.config_type, "documentation": None,
            })
        return out

    # -- writing -------------------------------------------------------------------------------

    def plan_incremental(self, group_id: str, changes: list[tuple[str, int, str | None]]
                         ) -> dict[str, str]:
        """The group's configs after Kafka's SET/DELETE (APPEND/SUBTRACT: no list keys)."""
        updated = dict(self.groups.get(group_id, {}))
        for name, op, value in changes:
            self._check_name(name)
            if op == SET:
                updated[name] = value or ""
            elif op == DELETE:
                updated.pop(name, None)
            elif op in (APPEND, SUBTRACT):
                verb = "APPEND" if op == APPEND else "SUBTRACT"
                raise GroupConfigError(INVALID_CONFIG, f"Can't {verb} to key {name} because "
                                       "its type is not LIST.")
            else:
                raise GroupConfigError(INVALID_REQUEST, f"unknown config operation {op}")
        return updated

    def plan_replace(self, changes: list[tuple[str, str | None]]) -> dict[str, str]:
        """AlterConfigs (legacy): the given set replaces every config of the group."""
        for name, _value in changes:
            self._check_name(name)
        return {name: value or "" for name, value in changes}

    def validate(self, updated: dict[str, str]) -> None:
        for name, value in updated.items():
            message = KEYS[name].check(self.config, value)
            if message:
                raise GroupConfigError(INVALID_CONFIG, message)

    def store(self, group_id: str, updated: dict[str, str]) -> None:
        """Change a group's configs in memory; the caller answers after ``await save()``."""
        if updated:
            # Kafka keeps a BOOLEAN as parsed: "FALSE" is described as "false" (4.4, probed).
            self.groups[group_id] = {
                name: value.strip().lower() if KEYS[name].config_type == TYPE_BOOLEAN
                else value for name, value in updated.items()}
        else:
            self.groups.pop(group_id, None)
        self._version += 1

    async def save(self) -> None:
        """Make every change stored so far durable (the file rewritten and fsynced) before
        returning. The write runs off the event loop: with thousands of configured groups the
        file is large, and rewriting and fsyncing it on the loop stalled the broker for seconds
        per IncrementalAlterConfigs (fuzzing the share-group seeds)."""
        wanted = self._version
        async with self._saving:
            if self._saved >= wanted:
                return  # an earlier save already wrote it
            version = self._version
            text = json.dumps({"groups": self.groups}, indent=1, sort_keys=True)
            await asyncio.to_thread(self._write, text)
            self._saved = version

    @staticmethod
    def check_resource(group_id: str) -> None:
        if not group_id:
            raise GroupConfigError(INVALID_REQUEST, "Default group resources are not allowed.")

    @staticmethod
    def _check_name(name: str) -> None:
        if name in KEYS:
            return
        if name.startswith(_NOT_HONOURED):
            raise GroupConfigError(INVALID_CONFIG,
                                   f"Group config {name} is not supported by this broker")
        raise GroupConfigError(INVALID_CONFIG, f"Unknown group config name: {name}")

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
