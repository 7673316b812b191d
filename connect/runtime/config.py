"""Worker configuration (one pydantic model) and the connector-level keys every connector has."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import field_validator, model_validator

from connect.config_def import (
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)
from streams.config import ConfigError, KafkaConfigModel, read_properties
from streams.kafka.client_config import (
    COMMON_KEYS,
    JVM_ONLY_KEYS,
    SECURITY_KEYS,
    ClientRole,
    client_configs_field,
    client_settings,
    mask,
)

# Keys under these prefixes are passed through to the converter or client they name.
PASSTHROUGH_PREFIXES = ("key.converter.", "value.converter.", "header.converter.", "producer.",
                        "consumer.", "admin.", "config.providers.")
# The worker's own clients (config/offset/status topics, group membership) take the unprefixed
# security keys; connector producers and consumers take only producer.*/consumer.* (as Kafka's
# Worker.baseProducerConfigs), admin clients both (Worker.adminConfigs).
WORKER_ROLES = {"worker": ClientRole("worker", (), COMMON_KEYS)}
# exactly.once.source.support (KIP-618): disabled; preparing (a rolling upgrade: tasks run without
# transactions, offsets are read committed, the leader answers fencing requests); enabled.
EXACTLY_ONCE_SOURCE_SUPPORT = ("disabled", "preparing", "enabled")
# connector.client.config.override.policy: Kafka's three policies, by alias or class name.
OVERRIDE_POLICIES = {"none": "None", "principal": "Principal", "all": "All"}
_POLICY_CLASS = "org.apache.kafka.connect.connector.policy.{}ConnectorClientConfigOverridePolicy"


class WorkerConfig(KafkaConfigModel):
    """Kafka Connect's worker keys (``bootstrap.servers``, ``group.id``, ``listeners``, ...)."""

    bootstrap_servers: str = "localhost:9092"
    listeners: str = "http://127.0.0.1:8083"
    rest_advertised_host_name: str | None = None
    rest_advertised_port: int | None = None
    rest_advertised_listener: str | None = None
    key_converter: str = "org.apache.kafka.connect.json.JsonConverter"
    value_converter: str = "org.apache.kafka.connect.json.JsonConverter"
    header_converter: str = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    plugin_path: str | None = None
    offset_flush_interval_ms: int = 60000
    offset_flush_timeout_ms: int = 5000
    task_shutdown_graceful_timeout_ms: int = 5000
    client_id: str | None = None
    connector_client_config_override_policy: str = "All"
    # standalone
    offset_storage_file_filename: str | None = None
    # distributed
    group_id: str | None = None
    config_storage_topic: str | None = None
    offset_storage_topic: str | None = None
    status_storage_topic: str | None = None
    config_storage_replication_factor: int = 3
    offset_storage_replication_factor: int = 3
    status_storage_replication_factor: int = 3
    offset_storage_partitions: int = 25
    status_storage_partitions: int = 5
    session_timeout_ms: int = 10000
    heartbeat_interval_ms: int = 3000
    rebalance_timeout_ms: int = 60000
    scheduled_rebalance_max_delay_ms: int = 300000
    connect_protocol: str = "sessioned"
    worker_sync_timeout_ms: int = 3000
    exactly_once_source_support: str = "disabled"
    # KIP-507 session keys: the leader writes a new one every inter.worker.key.ttl.ms (0: the
    # first key stays), generated for the key algorithm and size; requests are signed with the
    # signature algorithm and accepted with any of the verification algorithms.
    inter_worker_key_ttl_ms: int = 3600000
    inter_worker_key_generation_algorithm: str = "HmacSHA256"
    inter_worker_key_size: int | None = None
    inter_worker_signature_algorithm: str = "HmacSHA256"
    inter_worker_verification_algorithms: str = "HmacSHA256"
    # Prometheus GET /metrics and GET /health on http://HOST:PORT (unset: only /metrics on
    # the REST listener).
    metrics_listener: str | None = None

    # config.providers=file,env (KIP-297); their settings are config.providers.<name>.*
    config_providers: str | None = None
    # security.protocol, ssl.*, sasl.* of the worker's own clients (streams/kafka/client_config.py)
    client_configs: Any = None

    # Pass-through keys (``producer.acks``, ``value.converter.schemas.enable``, ...).
    passthrough: dict[str, str] = {}

    @classmethod
    def accepts_client_key(cls, key: str) -> bool:
        return key in SECURITY_KEYS or key in JVM_ONLY_KEYS

    @classmethod
    def client_key_names(cls) -> frozenset[str]:
        return SECURITY_KEYS

    @field_validator("client_configs", mode="before")
    @classmethod
    def _client_configs(cls, value: Any) -> Any:
        return client_configs_field(value, WORKER_ROLES)

    @field_validator("exactly_once_source_support")
    @classmethod
    def _eos_support(cls, value: str) -> str:
        """KIP-618's three values (case-insensitive, as Kafka's)."""
        name = value.strip().lower()
        if name not in EXACTLY_ONCE_SOURCE_SUPPORT:
            raise ValueError("must be one of " + ", ".join(EXACTLY_ONCE_SOURCE_SUPPORT))
        return name

    @property
    def exactly_once_source_enabled(self) -> bool:
        return self.exactly_once_source_support == "enabled"

    @field_validator("connect_protocol")
    @classmethod
    def _protocol(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in ("eager", "compatible", "sessioned"):
            raise ValueError("must be one of eager, compatible, sessioned")
        return name

    @field_validator("scheduled_rebalance_max_delay_ms")
    @classmethod
    def _delay(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be at least 0")
        return value

    @field_validator("inter_worker_key_ttl_ms")
    @classmethod
    def _key_ttl(cls, value: int) -> int:
        if not 0 <= value <= 2**31 - 1:
            raise ValueError("must be between 0 and 2147483647")
        return value

    @field_validator("inter_worker_key_generation_algorithm", "inter_worker_signature_algorithm")
    @classmethod
    def _mac_algorithm(cls, value: str) -> str:
        from connect.runtime.session_key import MAC_ALGORITHMS

        if value.strip() not in MAC_ALGORITHMS:
            raise ValueError("must be one of " + ", ".join(MAC_ALGORITHMS))
        return value.strip()

    @field_validator("inter_worker_key_size")
    @classmethod
    def _key_size(cls, value: int | None) -> int | None:
        if value is not None and (value <= 0 or value % 8):
            raise ValueError("must be a positive number of bits divisible by 8")
        return value

    @field_validator("inter_worker_verification_algorithms")
    @classmethod
    def _verification_algorithms(cls, value: str) -> str:
        from connect.runtime.session_key import MAC_ALGORITHMS

        names = [n.strip() for n in value.split(",") if n.strip()]
        if not names:
            raise ValueError("must name at least one algorithm")
        unknown = [n for n in names if n not in MAC_ALGORITHMS]
        if unknown:
            raise ValueError(f"{', '.join(unknown)} not among " + ", ".join(MAC_ALGORITHMS))
        return ",".join(names)

    @model_validator(mode="after")
    def _signature_verifiable(self) -> WorkerConfig:
        """As Kafka's DistributedConfig: a worker must accept its own signatures."""
        if self.inter_worker_signature_algorithm not in self.verification_algorithms:
            raise ValueError(
                f"Invalid value {self.inter_worker_signature_algorithm} for configuration "
                "inter.worker.signature.algorithm: Signature algorithm must be present in "
                "inter.worker.verification.algorithms list")
        return self

    @property
    def verification_algorithms(self) -> list[str]:
        return self.inter_worker_verification_algorithms.split(",")

    @field_validator("connector_client_config_override_policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        name = value.strip()
        for alias, policy in OVERRIDE_POLICIES.items():
            if name.lower() == alias or name == _POLICY_CLASS.format(policy):
                return policy
        raise ValueError("must be None, Principal or All (or Kafka's policy class names)")

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> WorkerConfig:
        """Worker properties as Kafka Connect reads them: ``${provider:path:key}`` variables
        resolved (KIP-421), client prefixes kept for the clients they name."""
        from connect.runtime.config_providers import ConfigProviders

        providers = ConfigProviders.from_worker(
            data.get("config.providers"),
            {k[len("config.providers."):]: str(v) for k, v in data.items()
             if k.startswith("config.providers.")})
        data = {k: v if k.startswith("config.providers") else
                providers.resolve_value(v) if isinstance(v, str) else v for k, v in data.items()}
        plain = {k: v for k, v in data.items() if not k.startswith(PASSTHROUGH_PREFIXES)}
        extra = {k: str(v) for k, v in data.items() if k.startswith(PASSTHROUGH_PREFIXES)}
        config = cls.from_mapping(plain, passthrough=extra)
        from connect.runtime import clients

        clients.check_prefixed(config)  # producer.*/consumer.*/admin.*: fail at start, not later
        return config

    def __repr_args__(self) -> Any:
        """producer.sasl.jaas.config and other pass-through secrets never show in the repr."""
        for name, value in super().__repr_args__():
            yield name, mask(value) if name == "passthrough" else value

    def client_kwargs(self) -> dict[str, Any]:
        """aiokafka arguments of the worker's own clients: bootstrap and security."""
        return client_settings(
            self.bootstrap_servers,
            options=self.client_configs.kwargs("worker") if self.client_configs else None)

    def config_transformer(self) -> Any:
        """The worker's config providers (connect/runtime/config_providers.py)."""
        from connect.runtime.config_providers import ConfigProviders

        return ConfigProviders.from_worker(self.config_providers,
                                           self.prefixed("config.providers."))

    def prefixed(self, prefix: str) -> dict[str, str]:
        """The pass-through keys under ``prefix`` with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.passthrough.items() if k.startswith(prefix)}

    def listener(self) -> tuple[str, int]:
        first = self.listeners.split(",")[0].strip()
        _, _, hostport = first.rpartition("://")
        host, _, port = hostport.rpartition(":")
        return (host or "0.0.0.0"), int(port or 8083)

    def advertised_url(self) -> str:
        host, port = self.listener()
        host = self.rest_advertised_host_name or ("127.0.0.1" if host in ("", "0.0.0.0") else host)
        port = self.rest_advertised_port or port
        return f"{self.rest_advertised_listener or 'http'}://{host}:{port}"


# PrincipalConnectorClientConfigOverridePolicy's allowed keys.
PRINCIPAL_OVERRIDES = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})
OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")


def override_errors(policy: str, connector: Mapping[str, Any]) -> list[str]:
    """What ``connector.client.config.override.policy`` forbids in a connector config
    (Kafka's {None,Principal,All}ConnectorClientConfigOverridePolicy)."""
    errors = []
    for key in sorted(connector):
        prefix = next((p for p in OVERRIDE_PREFIXES if key.startswith(p)), None)
        if prefix is None or policy == "All":
            continue
        if policy == "None" or key[len(prefix):] not in PRINCIPAL_OVERRIDES:
            errors.append(f"The '{policy}' policy does not allow '{key[len(prefix):]}' to be "
                          f"overridden in the connector configuration ('{key}').")
    return errors


def load_config_file(path: str | Path) -> dict[str, str]:
    """A .properties file, or a .json file: a flat map, or ``{"name", "config": {...}}``."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: invalid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        if isinstance(data.get("config"), dict):
            config = {k: _str(v) for k, v in data["config"].items()}
            if "name" in data:
                config.setdefault("name", str(data["name"]))
            return config
        return {k: _str(v) for k, v in data.items()}
    return read_properties(path)


def _str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(
        value, dict | list) else str(value)


def _class_exists(kind: str):
    def check(name: str, value: Any) -> None:
        if value in (None, ""):
            return
        from connect import plugins

        loader = {"connector": plugins.connector_class, "converter": plugins.converter_class}[kind]
        loader(str(value))

    return check


def _transforms_valid(name: str, value: Any) -> None:
    for alias in value or []:
        if not alias:
            raise ConfigException(f"Invalid value for {name}: empty alias")


COMMON = "Common"
TRANSFORMS = "Transforms"
ERRORS = "Error Handling"
EXACTLY_ONCE = "Exactly Once Support"
# SourceConnectorConfig's keys (KIP-618).
EXACTLY_ONCE_SUPPORT = "exactly.once.support"
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL = "transaction.boundary.interval.ms"
OFFSETS_TOPIC = "offsets.storage.topic"


def connector_config_def(kind: str) -> ConfigDef:
    """Keys the worker reads from every connector config (Kafka's ``ConnectorConfig``)."""
    d = ConfigDef()
    d.define("name", ConfigType.STRING, validator=non_empty_string, importance=Importance.HIGH,
             documentation="Globally unique name to use for this connector.", group=COMMON,
             order_in_group=1)
    d.define("connector.class", ConfigType.STRING, validator=_class_exists("connector"),
             importance=Importance.HIGH, group=COMMON, order_in_group=2,
             documentation="Name or alias of the class for this connector.")
    d.define("tasks.max", ConfigType.INT, 1, Range.at_least(1), Importance.HIGH,
             "Maximum number of tasks to use for this connector.", COMMON, 3)
    d.define("tasks.max.enforce", ConfigType.BOOLEAN, True, None, Importance.LOW,
             "Fail tasks beyond tasks.max.", COMMON, 4)
    for order, key in enumerate(("key.converter", "value.converter", "header.converter"), 5):
        d.define(key, ConfigType.CLASS, None, _class_exists("converter"), Importance.LOW,
                 f"Overrides the worker's {key}.", COMMON, order)
    d.define("config.action.reload", ConfigType.STRING, "restart",
             ValidString(["none", "restart"], ignore_case=True), Importance.LOW, "", COMMON, 8)
    d.define("transforms", ConfigType.LIST, "", _transforms_valid, Importance.LOW,
             "Aliases for the transformations to be applied to records.", TRANSFORMS, 1)
    d.define("predicates", ConfigType.LIST, "", None, Importance.LOW,
             "Aliases for the predicates used by transformations.", "Predicates", 1)
    d.define("errors.retry.timeout", ConfigType.LONG, 0, None, Importance.MEDIUM,
             "Maximum duration in ms a failed operation is retried; 0 = no retry, -1 = forever.",
             ERRORS, 1)
    d.define("errors.retry.delay.max.ms", ConfigType.LONG, 60000, Range.at_least(0),
             Importance.MEDIUM, "Maximum back-off between retries.", ERRORS, 2)
    d.define("errors.tolerance", ConfigType.STRING, "none",
             ValidString(["none", "all"], ignore_case=True), Importance.MEDIUM,
             "none: fail on the first error; all: skip problematic records.", ERRORS, 3)
    d.define("errors.log.enable", ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
             "Log each error and the failed operation.", ERRORS, 4)
    d.define("errors.log.include.messages", ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
             "Include the record in the error log.", ERRORS, 5)
    if kind == "source":
        d.define(EXACTLY_ONCE_SUPPORT, ConfigType.STRING, "requested",
                 ValidString(["requested", "required"], ignore_case=True), Importance.MEDIUM,
                 "required: refuse the connector unless it can deliver exactly once with this "
                 "configuration (needs exactly.once.source.support=enabled on the worker); "
                 "requested: no such check.", EXACTLY_ONCE, 1)
        d.define(TRANSACTION_BOUNDARY, ConfigType.STRING, "poll",
                 ValidString(["poll", "interval", "connector"], ignore_case=True),
                 Importance.MEDIUM,
                 "With exactly-once support: a transaction per poll() batch (poll), per "
                 "transaction.boundary.interval.ms (interval), or as the task defines through "
                 "its TransactionContext (connector).", EXACTLY_ONCE, 2)
        d.define(TRANSACTION_BOUNDARY_INTERVAL, ConfigType.LONG, None, Range.at_least(0),
                 Importance.LOW,
                 "With transaction.boundary=interval: how often to commit (default: the "
                 "worker's offset.flush.interval.ms).", EXACTLY_ONCE, 3)
        d.define(OFFSETS_TOPIC, ConfigType.STRING, None, None, Importance.LOW,
                 "A topic of this connector's own for its source offsets (distributed mode); "
                 "default: the worker's offset.storage.topic.", EXACTLY_ONCE, 4)
    if kind == "sink":
        d.define("topics", ConfigType.LIST, "", None, Importance.HIGH,
                 "Topics to consume.", COMMON, 9)
        d.define("topics.regex", ConfigType.STRING, "", None, Importance.HIGH,
                 "Regex of topics to consume.", COMMON, 10)
        d.define("errors.deadletterqueue.topic.name", ConfigType.STRING, "", None,
                 Importance.MEDIUM, "Dead-letter queue topic (empty: disabled).", ERRORS, 6)
        d.define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT, 3, None,
                 Importance.MEDIUM, "", ERRORS, 7)
        d.define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN, False,
                 None, Importance.MEDIUM, "Add __connect.errors.* headers to DLQ records.",
                 ERRORS, 8)
    return d


def check_sink_topics(config: Mapping[str, str]) -> list[str]:
    """Kafka's rule: exactly one of ``topics`` and ``topics.regex``."""
    topics = [t.strip() for t in config.get("topics", "").split(",") if t.strip()]
    regex = config.get("topics.regex", "").strip()
    if topics and regex:
        return ["Must configure only one of topics or topics.regex"]
    if not topics and not regex:
        return ["Must configure one of topics or topics.regex"]
    dlq = config.get("errors.deadletterqueue.topic.name", "").strip()
    if dlq and dlq in topics:
        return [f"The DLQ topic '{dlq}' may not be included in the list of topics "
                f"('topics={','.join(topics)}') consumed by the connector"]
    return []
