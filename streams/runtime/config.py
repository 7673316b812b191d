"""``StreamsConfig``: Kafka Streams' configuration keys, validated up front.

Keys are Kafka's (``application.id``, ``processing.guarantee``...), dotted or snake_case. Values
from a ``.properties`` file arrive as strings and are coerced. Defaults follow
``StreamsConfig.java`` (reference §3.1), including the EOS default commit interval of 100 ms
that applies only when the user did not set one.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationInfo, field_validator, model_validator

from ..config import KafkaConfigModel
from ..kafka.client_config import (
    SECURITY_KEYS,
    STREAMS_OWNED,
    STREAMS_PREFIXES,
    STREAMS_ROLES,
    TUNING_KEYS,
    client_configs_field,
    client_settings,
    is_client_key,
)
from ..metrics.listener import parse_listener
from ..metrics.registry import RecordingLevel
from ..processor.errors import ErrorHandling, resolve_handler
from ..processor.task import TaskConfig
from ..processor.timestamps import resolve_timestamp_extractor
from ..serde import Serdes, resolve_serde
from ..state.cache import DEFAULT_CACHE_MAX_BYTES, CacheBudget
from .guarantee import ProcessingGuarantee

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000  # Kafka's producer default (KIP-91)


class StreamsConfig(KafkaConfigModel):
    application_id: str
    bootstrap_servers: str = "localhost:9092"
    client_id: str | None = None
    processing_guarantee: Literal["at_least_once", "exactly_once_v2"] = AT_LEAST_ONCE
    commit_interval_ms: int | None = None  # None: 30000, or 100 under exactly_once_v2
    state_dir: Path = Path(tempfile.gettempdir()) / "kafka-streams"
    default_key_serde: Any = None
    default_value_serde: Any = None
    # Exception handlers (names, Kafka class names, callables or dotted paths; see
    # processor/errors.py); Kafka 4.0 renamed the default.* ones, both names are accepted.
    deserialization_exception_handler: Any = None
    default_deserialization_exception_handler: Any = None
    processing_exception_handler: Any = None
    production_exception_handler: Any = None
    default_production_exception_handler: Any = None
    errors_dead_letter_queue_topic_name: str | None = None  # KIP-1034
    default_timestamp_extractor: Any = None
    num_standby_replicas: int = 0
    # host:port where this instance answers queries (KIP-67); other instances learn it
    # through the group assignment and forward queries for keys it owns.
    application_server: str | None = None
    # none | all | a list of Kafka's rewrites; applied by StreamsBuilder.build(config), as in
    # Kafka (streams/dsl/optimize.py)
    topology_optimization: str = "none"
    num_stream_threads: int = 1
    max_task_idle_ms: int = 0
    poll_ms: int = 100
    max_poll_records: int = 1000
    # The consumer's long-poll wait. aiokafka keeps one fetch in flight per broker, and a fetch
    # for caught-up partitions waits this long while a lagging partition's next fetch queues
    # behind it: Kafka's 500 ms default starved skewed partitions (measured in
    # benchmarks/streams_perf.py); 100 ms costs at most 10 empty fetches/s when idle.
    fetch_max_wait_ms: int = 100
    max_partition_fetch_bytes: int = 1_048_576
    buffered_records_per_partition: int = 1000
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    request_timeout_ms: int = 40_000
    transaction_timeout_ms: int = 10_000
    replication_factor: int = -1
    repartition_purge_interval_ms: int = 30_000
    metadata_max_age_ms: int = 300_000
    max_batch_size: int = 1_048_576
    # The record cache of aggregation stores (state/cache.py); 0 disables it. Kafka 3.4
    # renamed cache.max.bytes.buffering; both are accepted, the new name wins.
    statestore_cache_max_bytes: int | None = None
    cache_max_bytes_buffering: int | None = None
    # Prometheus GET /metrics and GET /health on http://HOST:PORT (unset: no HTTP server);
    # Kafka's metrics.recording.level (DEBUG adds the state store metrics).
    metrics_listener: str | None = None
    metrics_recording_level: str = "INFO"
    # Kafka client properties: security.protocol, ssl.*, sasl.* for every client, and the
    # consumer./main.consumer./restore.consumer./global.consumer./producer./admin. prefixes
    # for one kind of client (streams/kafka/client_config.py). Collected from the flat keys.
    client_configs: Any = None

    @classmethod
    def accepts_client_key(cls, key: str) -> bool:
        return is_client_key(key, STREAMS_PREFIXES)

    @classmethod
    def client_key_names(cls) -> frozenset[str]:
        return SECURITY_KEYS | TUNING_KEYS

    @field_validator("client_configs", mode="before")
    @classmethod
    def _client_configs(cls, value: Any) -> Any:
        return client_configs_field(value, STREAMS_ROLES, STREAMS_OWNED)

    def client_kwargs(self, role: str) -> dict[str, Any]:
        """aiokafka arguments of one client of the runtime: ``main.consumer``,
        ``restore.consumer``, ``global.consumer``, ``producer`` or ``admin``.

        The producer always gets ``delivery_timeout_ms`` (Kafka's ``delivery.timeout.ms``,
        KIP-91): what the user set, else Kafka's default of 120 s, raised to ``linger.ms +
        request.timeout.ms`` as Kafka's producer raises it."""
        kwargs = client_settings(
            self.bootstrap_servers, client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            options=self.client_configs.kwargs(role) if self.client_configs else None)
        if role == "producer" and "delivery_timeout_ms" not in kwargs:
            kwargs["delivery_timeout_ms"] = max(
                DEFAULT_DELIVERY_TIMEOUT_MS,
                kwargs.get("linger_ms", 0) + kwargs["request_timeout_ms"])
        return kwargs

    @model_validator(mode="after")
    def _delivery_timeout(self) -> StreamsConfig:
        """Kafka's producer refuses a ``delivery.timeout.ms`` shorter than ``linger.ms +
        request.timeout.ms`` (a batch would expire before its request could time out)."""
        kwargs = self.client_configs.kwargs("producer") if self.client_configs else {}
        delivery = kwargs.get("delivery_timeout_ms")
        if delivery is not None:
            floor = kwargs.get("linger_ms", 0) + self.request_timeout_ms
            if delivery < floor:
                raise ValueError(
                    f"delivery.timeout.ms ({delivery}) must be at least linger.ms + "
                    f"request.timeout.ms ({floor}), as Kafka's producer requires")
        return self

    @field_validator("application_id")
    @classmethod
    def _app_id(cls, value: str) -> str:
        if not value or any(c not in _LEGAL for c in value):
            raise ValueError("must be non-empty and use only letters, digits, '.', '_' and '-'")
        return value

    @field_validator("processing_guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: Any) -> Any:
        if value in ("exactly_once", "exactly_once_beta"):
            raise ValueError("was removed in Kafka 4.0; use 'exactly_once_v2'")
        return value

    @field_validator("application_server")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        host, sep, port = value.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("expected host:port with a port from 1 to 65535")
        return value.strip()

    @field_validator("topology_optimization")
    @classmethod
    def _optimization(cls, value: str) -> str:
        text = str(value).strip().lower()
        known = {"merge.repartition.topics", "reuse.ktable.source.topics",
                 "single.store.self.join"}
        parts = {p.strip() for p in text.split(",") if p.strip()}
        if text not in ("none", "all") and (not parts or not parts <= known):
            raise ValueError(f"expected 'none', 'all' or a comma-separated list of "
                             f"{', '.join(sorted(known))}")
        return text

    @field_validator("num_standby_replicas")
    @classmethod
    def _standbys(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value

    @field_validator("num_stream_threads")
    @classmethod
    def _threads(cls, value: int) -> int:
        if value != 1:
            raise ValueError("only 1 stream thread per instance is supported; "
                             "scale out with more instances (streams run --processes N)")
        return value

    @field_validator("default_key_serde", "default_value_serde")
    @classmethod
    def _serde(cls, value: Any) -> Any:
        return resolve_serde(value)

    @field_validator("deserialization_exception_handler",
                     "default_deserialization_exception_handler", "processing_exception_handler",
                     "production_exception_handler", "default_production_exception_handler")
    @classmethod
    def _handler(cls, value: Any, info: ValidationInfo) -> Any:
        """Resolve now, so a bad handler name fails when the config is built."""
        resolve_handler(info.field_name.split("_")[-3], value)  # type: ignore[union-attr]
        return value

    @field_validator("default_timestamp_extractor")
    @classmethod
    def _extractor(cls, value: Any) -> Any:
        resolve_timestamp_extractor(value)
        return value

    @field_validator("statestore_cache_max_bytes", "cache_max_bytes_buffering")
    @classmethod
    def _cache_size(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("must be >= 0 (0 disables the record cache)")
        return value

    @field_validator("metrics_listener")
    @classmethod
    def _metrics_listener(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        parse_listener(value)  # type: ignore[arg-type]
        return value.strip()  # type: ignore[union-attr]

    @field_validator("metrics_recording_level")
    @classmethod
    def _recording_level(cls, value: str) -> str:
        return RecordingLevel.parse(value).name

    @property
    def cache_max_bytes(self) -> int:
        for value in (self.statestore_cache_max_bytes, self.cache_max_bytes_buffering):
            if value is not None:
                return value
        return DEFAULT_CACHE_MAX_BYTES

    @property
    def guarantee(self) -> ProcessingGuarantee:
        """processing.guarantee as the object the runtime asks (streams/runtime/guarantee.py)."""
        return ProcessingGuarantee(self.processing_guarantee)

    @property
    def eos(self) -> bool:
        return self.guarantee.exactly_once

    @property
    def effective_commit_interval_ms(self) -> int:
        if self.commit_interval_ms is not None:
            return self.commit_interval_ms
        return self.guarantee.default_commit_interval_ms

    @property
    def app_state_dir(self) -> Path:
        return Path(self.state_dir) / self.application_id

    def task_config(self) -> TaskConfig:
        """What every StreamTask of this application shares."""
        return TaskConfig(
            application_id=self.application_id,
            default_key_serde=self.default_key_serde or Serdes.bytes(),
            default_value_serde=self.default_value_serde or Serdes.bytes(),
            internal_key_serde=self.default_key_serde,
            internal_value_serde=self.default_value_serde,
            state_dir=Path(self.state_dir),
            errors=ErrorHandling.from_config(self.as_properties()),
            timestamp_extractor=resolve_timestamp_extractor(self.default_timestamp_extractor),
            app_config=self.as_properties(),
            cache=CacheBudget(self.cache_max_bytes) if self.cache_max_bytes > 0 else None,
        )

    def as_properties(self) -> dict[str, Any]:
        """The config with Kafka's dotted keys (what processors see as ``app_config``)."""
        props = {k.replace("_", "."): v for k, v in self.model_dump().items() if v is not None}
        clients = props.pop("client.configs", None)
        return {**props, **(clients.items() if clients else {})}


_LEGAL = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

