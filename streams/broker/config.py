"""Broker configuration: Kafka's broker property names, single-node defaults."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

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
    log_cleaner_backoff_ms: int = Field(15_000, ge=1)

    offsets_topic_num_partitions: int = Field(50, ge=1)
    offsets_retention_minutes: int = 10080
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = Field(3000, ge=0)
    group_max_size: int = Field(2**31 - 1, ge=1)

    transaction_max_timeout_ms: int = 900000
    transaction_state_log_num_partitions: int = Field(50, ge=1)
