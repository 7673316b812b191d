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
    ALL_CONSUMER_KEYS,
    ALL_PRODUCER_KEYS,
    CONNECTION_KEYS,
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

# Kafka's client keys as streams.kafka.client_config maps them; (None, None): a producer key
# accepted with nothing to set on aiokafka's producer.
_PRODUCER: dict[str, tuple[str | None, Any]] = {
    **ALL_PRODUCER_KEYS,
    "max.in.flight.requests.per.connection": (None, None),
    "delivery.timeout.ms": (None, None),
    "buffer.memory": (None, None),
}
_CONSUMER: dict[str, tuple[str | None, Any]] = dict(ALL_CONSUMER_KEYS)
_ADMIN: dict[str, tuple[str | None, Any]] = dict(CONNECTION_KEYS)


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
