"""Topics: names, partition counts, topic configs, and the partition logs behind them.

Topic metadata lives in one small JSON file replaced atomically (write, fsync, rename), so a crash
leaves either the old or the new file, never a torn one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import BrokerConfig
from .storage.log import LogConfig, PartitionLog

log = logging.getLogger(__name__)

METADATA_FILE = "topics.json"
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_TOPIC})
_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class TopicError(Exception):
    """Carries the Kafka error code to answer with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# Kafka error codes used here (kio's ErrorCode has them too; ints keep this module light).
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
INVALID_REQUEST = 42


def _bool(value: str) -> str:
    if value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return value.lower()


def _int(low: int) -> Any:
    def check(value: str) -> str:
        number = int(value)
        if number < low:
            raise ValueError(f"must be >= {low}")
        return str(number)

    return check


def _choice(*allowed: str) -> Any:
    def check(value: str) -> str:
        parts = [p.strip() for p in value.split(",")]
        if not parts or any(p not in allowed for p in parts):
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return ",".join(parts)

    return check


def _ratio(value: str) -> str:
    number = float(value)
    if not 0 <= number <= 1:
        raise ValueError("must be between 0 and 1")
    return value


# name -> (validator, broker config attribute or literal default)
TOPIC_CONFIGS: dict[str, tuple[Any, str]] = {
    "cleanup.policy": (_choice("delete", "compact"), "delete"),
    "retention.ms": (_int(-1), "@log_retention_ms"),
    "retention.bytes": (_int(-1), "@log_retention_bytes"),
    "segment.bytes": (_int(14), "@log_segment_bytes"),
    "segment.ms": (_int(1), "@log_segment_ms"),
    "index.interval.bytes": (_int(0), "@log_index_interval_bytes"),
    "max.message.bytes": (_int(0), "@message_max_bytes"),
    "message.timestamp.type": (_choice("CreateTime", "LogAppendTime"), "CreateTime"),
    "delete.retention.ms": (_int(0), "86400000"),
    "min.compaction.lag.ms": (_int(0), "0"),
    "max.compaction.lag.ms": (_int(1), str(2**63 - 1)),
    "min.cleanable.dirty.ratio": (_ratio, "0.5"),
    "compression.type": (
        _choice("uncompressed", "producer", "gzip", "snappy", "lz4", "zstd"),
        "producer",
    ),
    "min.insync.replicas": (_int(1), "1"),
    "unclean.leader.election.enable": (_bool, "false"),
    "file.delete.delay.ms": (_int(0), "60000"),
    "flush.messages": (_int(1), str(2**63 - 1)),
    "flush.ms": (_int(0), str(2**63 - 1)),
    "preallocate": (_bool, "false"),
    "message.downconversion.enable": (_bool, "true"),
}


def validate_topic_name(name: str) -> None:
    if not name or not _NAME.match(name) or name in (".", ".."):
        raise TopicError(
            INVALID_TOPIC_EXCEPTION,
            f"invalid topic name {name!r}: use 1-249 of [a-zA-Z0-9._-], not '.' or '..'",
        )


def validate_topic_configs(configs: dict[str, str]) -> dict[str, str]:
    out = {}
    for key, value in configs.items():
        if key not in TOPIC_CONFIGS:
            raise TopicError(INVALID_CONFIG, f"unknown topic config '{key}'")
        try:
            out[key] = TOPIC_CONFIGS[key][0](str(value))
        except ValueError as exc:
            raise TopicError(INVALID_CONFIG, f"topic config {key}={value!r}: {exc}") from None
    return out


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: list[PartitionLog] = field(default_factory=list)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicManager:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.data_dir = Path(config.data_dir)
        self.topics: dict[str, Topic] = {}
        self.cluster_id = config.cluster_id or ""

    # -- persistence --------------------------------------------------------------------------

    def load(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / METADATA_FILE
        state: dict[str, Any] = {}
        if path.exists():
            try:
                state = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"cannot read topic metadata {path}: {exc}") from exc
        self.cluster_id = self.config.cluster_id or state.get("cluster_id") or _new_cluster_id()
        for name, entry in state.get("topics", {}).items():
            topic = Topic(name, uuid.UUID(entry["id"]), dict(entry.get("configs", {})))
            for index in range(int(entry["partitions"])):
                topic.partitions.append(self._open_partition(topic, index))
            self.topics[name] = topic
        self._save()

    def _save(self) -> None:
        state = {
            "cluster_id": self.cluster_id,
            "topics": {
                t.name: {"id": str(t.topic_id), "partitions": len(t.partitions), "configs": t.configs}
                for t in self.topics.values()
            },
        }
        path = self.data_dir / METADATA_FILE
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(self.data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        for topic in self.topics.values():
            for partition in topic.partitions:
                partition.close()

    # -- configs ------------------------------------------------------------------------------

    def effective_config(self, topic: Topic, key: str) -> str:
        if key in topic.configs:
            return topic.configs[key]
        default = TOPIC_CONFIGS[key][1]
        if default.startswith("@"):
            return str(getattr(self.config, default[1:]))
        return default

    def is_default(self, topic: Topic, key: str) -> bool:
        return key not in topic.configs

    def _log_config(self, topic: Topic) -> LogConfig:
        return LogConfig(
            segment_bytes=int(self.effective_config(topic, "segment.bytes")),
            segment_ms=int(self.effective_config(topic, "segment.ms")),
            index_interval_bytes=int(self.effective_config(topic, "index.interval.bytes")),
            log_append_time=self.effective_config(topic, "message.timestamp.type")
            == "LogAppendTime",
        )

    def _open_partition(self, topic: Topic, index: int) -> PartitionLog:
        partition = PartitionLog(self.data_dir / f"{topic.name}-{index}", self._log_config(topic))
        partition.open()
        return partition

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        topic = self.get(name)
        topic.configs = validate_topic_configs(configs)
        self._apply_log_config(topic)
        self._save()

    def _apply_log_config(self, topic: Topic) -> None:
        log_config = self._log_config(topic)
        for partition in topic.partitions:
            partition.config = log_config

    # -- topic operations ---------------------------------------------------------------------

    def get(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
        return topic

    def partition(self, name: str, index: int) -> PartitionLog:
        topic = self.get(name)
        if not 0 <= index < len(topic.partitions):
            raise TopicError(UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {name}-{index}")
        return topic.partitions[index]

    def create(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
    ) -> Topic:
        validate_topic_name(name)
        if name in self.topics:
            raise TopicError(TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        count = self.config.num_partitions if partitions in (None, -1) else partitions
        if count is None or count < 1:
            raise TopicError(INVALID_PARTITIONS, f"partitions must be >= 1, got {partitions}")
        if count > 100_000:
            raise TopicError(INVALID_PARTITIONS, f"partitions must be <= 100000, got {count}")
        if replication_factor not in (None, -1, 1):
            raise TopicError(
                INVALID_REPLICATION_FACTOR,
                f"replication factor {replication_factor} is larger than the 1 available broker",
            )
        checked = validate_topic_configs(configs or {})
        topic = Topic(name, uuid.uuid4(), checked)
        if validate_only:
            return topic
        stale = [p for p in self.data_dir.glob(f"{name}-*") if p.name.rsplit("-", 1)[0] == name]
        for path in stale:  # left over from a delete that crashed half-way
            shutil.rmtree(path, ignore_errors=True)
        for index in range(count):
            topic.partitions.append(self._open_partition(topic, index))
        self.topics[name] = topic
        self._save()
        log.info("created topic %s with %d partition(s)", name, count)
        return topic

    def delete(self, name: str) -> None:
        topic = self.get(name)
        del self.topics[name]
        self._save()
        for partition in topic.partitions:
            partition.delete()
        log.info("deleted topic %s", name)

    def add_partitions(self, name: str, total: int, validate_only: bool = False) -> None:
        topic = self.get(name)
        if total <= len(topic.partitions):
            raise TopicError(
                INVALID_PARTITIONS,
                f"topic {name!r} has {len(topic.partitions)} partitions; "
                f"the new count must be larger, got {total}",
            )
        if validate_only:
            return
        for index in range(len(topic.partitions), total):
            topic.partitions.append(self._open_partition(topic, index))
        self._save()

    def ensure_internal(self, name: str, partitions: int) -> Topic:
        if name in self.topics:
            return self.topics[name]
        return self.create(name, partitions, configs={"cleanup.policy": "compact"})


def _new_cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
