"""The Connect worker's clients from Kafka-style client configs (``producer.*``, ``consumer.*``).

Connect users tune clients with Kafka's property names; the ones aiokafka understands are mapped,
an unknown one is an error that names it (a silently ignored setting is worse than a failure).
The clients themselves are built by ``streams.kafka.clients``, as every part's are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from connect.config_def import ConfigException
from streams.kafka import clients as kafka_clients
from streams.kafka.client_config import (
    JVM_ONLY_KEYS,
    SECURITY_KEYS,
    ClientConfigError,
    check_security,
    client_settings,
    security_kwargs,
)

if TYPE_CHECKING:
    from connect.runtime.config import WorkerConfig

    # Where clients connect: a bare bootstrap string (no security), or the worker, whose
    # security.protocol/ssl.*/sasl.* keys and admin.* prefix apply.
    Target = str | WorkerConfig

_INT = int


def _bool(v: str) -> bool:
    return str(v).lower() == "true"


_PRODUCER = {
    "acks": ("acks", lambda v: v if v == "all" else int(v)),
    "linger.ms": ("linger_ms", _INT),
    "batch.size": ("max_batch_size", _INT),
    "max.request.size": ("max_request_size", _INT),
    "compression.type": ("compression_type", lambda v: None if v == "none" else v),
    "enable.idempotence": ("enable_idempotence", _bool),
    "request.timeout.ms": ("request_timeout_ms", _INT),
    "retry.backoff.ms": ("retry_backoff_ms", _INT),
    "client.id": ("client_id", str),
    "metadata.max.age.ms": ("metadata_max_age_ms", _INT),
    "max.in.flight.requests.per.connection": (None, None),
    "delivery.timeout.ms": (None, None),
    "buffer.memory": (None, None),
    "bootstrap.servers": ("bootstrap_servers", str),
}

_CONSUMER = {
    "max.poll.records": ("max_poll_records", _INT),
    "fetch.max.bytes": ("fetch_max_bytes", _INT),
    "fetch.min.bytes": ("fetch_min_bytes", _INT),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _INT),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _INT),
    "auto.offset.reset": ("auto_offset_reset", str),
    "isolation.level": ("isolation_level", str),
    "session.timeout.ms": ("session_timeout_ms", _INT),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", _INT),
    "max.poll.interval.ms": ("max_poll_interval_ms", _INT),
    "request.timeout.ms": ("request_timeout_ms", _INT),
    "client.id": ("client_id", str),
    "metadata.max.age.ms": ("metadata_max_age_ms", _INT),
    "bootstrap.servers": ("bootstrap_servers", str),
}


_ADMIN = {key: _CONSUMER[key] for key in ("request.timeout.ms", "client.id",
                                          "metadata.max.age.ms", "bootstrap.servers")}
_ADMIN.update({"retry.backoff.ms": ("retry_backoff_ms", _INT),
               "connections.max.idle.ms": ("connections_max_idle_ms", _INT)})


def _translate(table: dict, configs: dict[str, str], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    security = {k: v for k, v in configs.items() if k in SECURITY_KEYS or k in JVM_ONLY_KEYS}
    if security:  # security.protocol, ssl.*, sasl.* (streams/kafka/client_config.py)
        try:
            out.update(security_kwargs(check_security(security, f"{kind}."), f"{kind}."))
        except ClientConfigError as exc:
            raise ConfigException(str(exc)) from None
    for key, value in configs.items():
        if key in security:
            continue
        if key not in table:
            raise ConfigException(f"unsupported {kind} config '{key}'")
        name, convert = table[key]
        if name is not None:
            try:
                out[name] = convert(value)
            except ValueError:
                raise ConfigException(f"invalid {kind} config {key}={value!r}") from None
    return out


def base_kwargs(target: Target) -> dict[str, Any]:
    """Bootstrap (and, for a worker, its security settings) of the worker's own clients."""
    if isinstance(target, str):
        return client_settings(target)
    return target.client_kwargs()


def admin_kwargs(target: Target, overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """An admin client's arguments: the worker's settings, then its ``admin.*`` keys, then a
    connector's ``admin.override.*`` ones (``overrides``, prefix removed)."""
    kwargs = base_kwargs(target)
    if not isinstance(target, str):
        kwargs.update(_translate(_ADMIN, target.prefixed("admin."), "admin"))
    kwargs.update(_translate(_ADMIN, overrides or {}, "admin"))
    return kwargs


def check_prefixed(worker: WorkerConfig) -> None:
    """Translate the worker's producer.*/consumer.*/admin.* keys once, so an unknown key or a
    bad value fails when the worker starts (not when its first task does)."""
    for kind, table in (("producer", _PRODUCER), ("consumer", _CONSUMER), ("admin", _ADMIN)):
        _translate(table, {k: v for k, v in worker.prefixed(f"{kind}.").items()
                           if not k.startswith("override.")}, kind)


# Connector producers and consumers take producer.*/consumer.* (and the connector's
# *.override.* keys) only, as Kafka's Worker does: not the worker's unprefixed security keys.
def producer(bootstrap: str, overrides: dict[str, str] | None = None,
             **defaults: Any) -> AIOKafkaProducer:
    kwargs = {"acks": "all", **defaults}
    kwargs.update(_translate(_PRODUCER, overrides or {}, "producer"))
    return kafka_clients.producer(client_settings(bootstrap), **kwargs)


def consumer(bootstrap: Target, overrides: dict[str, str] | None = None,
             *topics: str, **defaults: Any) -> AIOKafkaConsumer:
    """A consumer; given the worker instead of a bootstrap string, with the admin settings
    (it then stands in for an admin client: committing a sink connector's offsets)."""
    base = client_settings(bootstrap) if isinstance(bootstrap, str) else admin_kwargs(bootstrap)
    kwargs = {"enable_auto_commit": False, "auto_offset_reset": "earliest", **defaults}
    kwargs.update(_translate(_CONSUMER, overrides or {}, "consumer"))
    return kafka_clients.consumer(base, *topics, **kwargs)


def admin(target: Target, overrides: dict[str, str] | None = None) -> AIOKafkaAdminClient:
    return kafka_clients.admin(admin_kwargs(target, overrides))


async def start_admin(client: AIOKafkaAdminClient, target: Target,
                      overrides: dict[str, str] | None = None) -> None:
    """Start an admin client; when it cannot bootstrap, the error says why (a refused SASL
    login, an untrusted certificate) instead of aiokafka's bare "Unable to bootstrap"."""
    await kafka_clients.start(client, admin_kwargs(target, overrides))


async def ensure_topic(bootstrap: Target, name: str, partitions: int, replication: int,
                       configs: dict[str, str] | None = None,
                       overrides: dict[str, str] | None = None) -> int:
    """Create ``name`` if missing; return its partition count. A replication factor above the
    number of brokers is lowered to it (a single-node dev cluster cannot do 3), -1 = broker default.
    """
    from aiokafka.admin import NewTopic

    client = admin(bootstrap, overrides)
    await start_admin(client, bootstrap, overrides)
    try:
        if name not in await client.list_topics():
            cluster = await client.describe_cluster()
            brokers = max(1, len(cluster.get("brokers", [])))
            rf = brokers if replication == -1 else max(1, min(replication, brokers))
            response = await client.create_topics(
                [NewTopic(name, partitions, rf, topic_configs=configs or {})])
            for topic_result in response.to_object().get("topic_errors", []):
                code = topic_result.get("error_code", 0)
                if code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS (a racing worker)
                    raise ConfigException(f"could not create topic {name}: error {code} "
                                          f"{topic_result.get('error_message') or ''}")
        for topic in await client.describe_topics([name]):
            if topic.get("partitions"):
                return len(topic["partitions"])
        return partitions
    finally:
        await client.close()
