"""Broker configuration: Kafka's broker property names, single-node defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from ..config import KafkaConfigModel


class BrokerConfig(KafkaConfigModel):
    data_dir: Path = Path("./streams-data")
    host: str = "127.0.0.1"
    port: int = Field(9092, ge=0, le=65535)
    advertised_host: str | None = None
    node_id: int = 0
    cluster_id: str | None = None
    # Prometheus GET /metrics and GET /health on http://HOST:PORT (unset: no HTTP server).
    metrics_listener: str | None = None

    auto_create_topics_enable: bool = True
    num_partitions: int = Field(1, ge=1)
    default_replication_factor: int = 1
    message_max_bytes: int = Field(1048588, ge=1024)
    socket_request_max_bytes: int = Field(104857600, ge=1024)
    # Partitions this broker hosts at most, internal topics included (our own limit; KIP-578's
    # proposed name). CreateTopics / CreatePartitions beyond it get POLICY_VIOLATION.
    max_partitions: int = Field(10_000, ge=1)
    # Segment files (logs and indexes) kept open at once; the rest are reopened on use.
    log_max_open_files: int = Field(512, ge=8)

    log_segment_bytes: int = Field(1 << 30, ge=1024)
    log_segment_ms: int = Field(7 * 24 * 3600 * 1000, ge=1)
    log_index_interval_bytes: int = Field(4096, ge=0)
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = Field(300_000, ge=10)
    # Kafka's LogManager runs its first retention pass this long after start, then every
    # log.retention.check.interval.ms (log.initial.task.delay.ms, default 30 s).
    log_initial_task_delay_ms: int = Field(30_000, ge=0)
    log_cleaner_backoff_ms: int = Field(15_000, ge=1)

    offsets_topic_num_partitions: int = Field(50, ge=1)
    offsets_retention_minutes: int = 10080
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = Field(3000, ge=0)
    group_max_size: int = Field(2**31 - 1, ge=1)
    # KIP-848 consumer groups (group.protocol=consumer), Kafka's names and defaults.
    group_consumer_session_timeout_ms: int = Field(45000, ge=1)
    group_consumer_heartbeat_interval_ms: int = Field(5000, ge=1)
    group_consumer_max_size: int = Field(2**31 - 1, ge=1)
    group_consumer_assignors: str = "uniform,range"
    # KIP-848 online migration of non-empty groups between the classic and consumer protocols.
    group_consumer_migration_policy: Literal["bidirectional", "upgrade", "downgrade",
                                             "disabled"] = "bidirectional"

    transaction_max_timeout_ms: int = 900000
    transaction_state_log_num_partitions: int = Field(50, ge=1)

    # KIP-932 share groups (Kafka 4.4's names, defaults and bounds).
    group_share_record_lock_duration_ms: int = Field(30_000, ge=1000, le=3_600_000)
    group_share_min_record_lock_duration_ms: int = Field(15_000, ge=1000, le=30_000)
    group_share_max_record_lock_duration_ms: int = Field(60_000, ge=30_000, le=3_600_000)
    group_share_delivery_count_limit: int = Field(5, ge=2, le=10)
    group_share_partition_max_record_locks: int = Field(2000, ge=100, le=10_000)
    group_share_session_timeout_ms: int = Field(45_000, ge=1)
    group_share_heartbeat_interval_ms: int = Field(5_000, ge=1)

    # Security (Kafka's names; streams/broker/security reads them). Without `listeners` the
    # broker has one PLAINTEXT listener on host:port.
    listeners: str | None = None
    advertised_listeners: str | None = None
    listener_security_protocol_map: str | None = None
    inter_broker_listener_name: str | None = None  # accepted, single node: unused
    # KRaft controller listeners in `listeners` are not opened: this broker has no quorum.
    controller_listener_names: str | None = None
    security_inter_broker_protocol: str | None = None  # accepted, single node: unused
    sasl_mechanism_inter_broker_protocol: str | None = None  # accepted, single node: unused
    sasl_enabled_mechanisms: str = "GSSAPI"
    sasl_jaas_config: SecretStr | None = None  # Kafka ignores it on a broker (warning)
    ssl_keystore_type: str = "JKS"
    ssl_keystore_location: str | None = None
    ssl_keystore_password: SecretStr | None = None
    ssl_keystore_key: SecretStr | None = None
    ssl_keystore_certificate_chain: str | None = None
    ssl_key_password: SecretStr | None = None
    ssl_truststore_type: str = "JKS"
    ssl_truststore_location: str | None = None
    ssl_truststore_password: SecretStr | None = None
    ssl_truststore_certificates: str | None = None
    ssl_client_auth: str = "none"
    ssl_protocol: str = "TLSv1.3"
    ssl_enabled_protocols: str | None = None
    ssl_cipher_suites: str | None = None
    ssl_endpoint_identification_algorithm: str | None = "https"  # client side; unused here
    ssl_principal_mapping_rules: str = "DEFAULT"
    connections_max_reauth_ms: int = 0
    # A connection that failed authentication is closed this much later (Kafka's default).
    connection_failed_authentication_delay_ms: int = Field(100, ge=0)
    # The largest request a SASL connection may send before it has authenticated (Kafka's).
    sasl_server_max_receive_size: int = Field(524288, ge=1024)
    authorizer_class_name: str = ""
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    # `listener.name.<listener>.<key>` overrides, keyed by what follows `listener.name.`
    # (Kafka's per-listener configs, e.g. `sasl_ssl.plain.sasl.jaas.config`).
    listener_name: dict[str, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _share_lock_within_bounds(self) -> BrokerConfig:
        """Kafka's ShareGroupConfig: the lock duration lies between its min and max."""
        low = self.group_share_min_record_lock_duration_ms
        high = self.group_share_max_record_lock_duration_ms
        if not low <= self.group_share_record_lock_duration_ms <= high:
            raise ValueError(
                "group.share.record.lock.duration.ms must be between "
                f"group.share.min.record.lock.duration.ms ({low}) and "
                f"group.share.max.record.lock.duration.ms ({high})")
        return self

    @field_validator("group_consumer_migration_policy", mode="before")
    @classmethod
    def _policy_any_case(cls, value: Any) -> Any:
        """Kafka reads group.consumer.migration.policy case-insensitively."""
        return value.lower() if isinstance(value, str) else value

    @field_validator("group_consumer_assignors")
    @classmethod
    def _known_assignors(cls, value: str) -> str:
        """group.consumer.assignors: Kafka's built-in server-side assignors only."""
        names = [n.strip() for n in value.split(",") if n.strip()]
        unknown = [n for n in names if n not in ("uniform", "range")]
        if not names or unknown:
            raise ValueError(f"group.consumer.assignors={value!r}: the assignors are "
                             "'uniform' and 'range' (class names are not supported)")
        return ",".join(names)

    @model_validator(mode="before")
    @classmethod
    def _collect_listener_overrides(cls, data: Any) -> Any:
        """Move `listener.name.*` keys into `listener_name` before unknown keys are refused."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        overrides: dict[str, Any] = dict(data.get("listener_name") or {})
        for key, value in data.items():
            text = str(key).strip()
            if text.startswith(("listener.name.", "listener_name.")):
                rest = text[len("listener.name."):]
                name, _, prop = rest.partition(".")
                overrides[f"{name.lower()}.{prop}"] = value
            elif text != "listener_name":
                out[key] = value
        if overrides:
            out["listener_name"] = overrides
        return out
