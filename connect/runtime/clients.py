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
from streams.kafka import internals as kafka_internals
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

# Kafka's client keys as streams.kafka.client_config maps them. (None, check): a producer key
# with no aiokafka argument, which the worker honours itself (``check`` refuses a bad value):
# - max.in.flight.requests.per.connection: aiokafka's producer never has more than one produce
#   request in flight per broker (its sender skips a node with a request outstanding), which is
#   Kafka Connect's own default for connector producers (Worker.baseProducerConfigs) and within
#   any value >= 1 this key allows;
# - buffer.memory: how many bytes of batches a source task lets wait for the producer
#   (source_task.BatchSender); exactly-once tasks and the dead letter queue hand over one
#   batch (record) at a time and wait for the producer to take it.
_PRODUCER: dict[str, tuple[str | None, Any]] = {
    **ALL_PRODUCER_KEYS,
    "max.in.flight.requests.per.connection": (None, lambda v: _at_least(v, 1, "INT")),
    "delivery.timeout.ms": ("delivery_timeout_ms", lambda v: _at_least(v, 0, "INT")),
    "buffer.memory": (None, lambda v: _at_least(v, 0, "LONG")),
}
# Kafka Connect's connector producers retry a batch "for ever" (Worker.baseProducerConfigs sets
# delivery.timeout.ms to Integer.MAX_VALUE); a user's value (worker producer.* or connector
# producer.override.*) replaces it. streams.kafka.clients.producer applies it (KIP-91).
DEFAULT_DELIVERY_TIMEOUT_MS = 2**31 - 1
# aiokafka's request.timeout.ms when none is set (the floor of delivery.timeout.ms below).
_DEFAULT_REQUEST_TIMEOUT_MS = 40_000
_CONSUMER: dict[str, tuple[str | None, Any]] = dict(ALL_CONSUMER_KEYS)
_ADMIN: dict[str, tuple[str | None, Any]] = dict(CONNECTION_KEYS)
# Kafka's ProducerConfig refuses more in flight with idempotence (ordering needs at most 5).
MAX_IN_FLIGHT_IDEMPOTENT = 5


class _BadValue(ValueError):
    """A value refused with Kafka's ConfigDef message (the key is added by the caller)."""


def _at_least(value: Any, low: int, kind: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _BadValue(f"Not a number of type {kind}") from None
    if number < low:
        raise _BadValue(f"Value must be at least {low}")
    return number


def _translate(table: dict, configs: dict[str, str], kind: str, where: str = "") -> dict[str, Any]:
    """aiokafka arguments for ``configs`` (keys without their prefix; ``where`` is the prefix
    named in errors, such as ``producer.override.``)."""
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
            raise ConfigException(f"unsupported {kind} config '{where}{key}'")
        name, convert = table[key]
        if convert is None:
            continue
        try:
            converted = convert(value)
        except _BadValue as exc:
            raise ConfigException(f"Invalid value {value} for configuration {where}{key}: "
                                  f"{exc}") from None
        except ValueError:
            raise ConfigException(f"invalid {kind} config {where}{key}={value!r}") from None
        if name is not None:
            out[name] = converted
    if kind == "producer":
        _check_in_flight(configs, bool(out.get("enable_idempotence")))
        _check_delivery_timeout(out)
    return out


def _check_delivery_timeout(kwargs: dict[str, Any]) -> None:
    """Kafka's producer refuses a delivery.timeout.ms below linger.ms + request.timeout.ms."""
    timeout = kwargs.get("delivery_timeout_ms")
    if timeout is not None and timeout < kwargs.get("linger_ms", 0) + kwargs.get(
            "request_timeout_ms", _DEFAULT_REQUEST_TIMEOUT_MS):
        raise ConfigException("delivery.timeout.ms should be equal to or larger than "
                              "linger.ms + request.timeout.ms")


def _check_in_flight(configs: dict[str, str], idempotent: bool) -> None:
    """Kafka's ProducerConfig: an idempotent producer keeps at most 5 requests in flight."""
    in_flight = configs.get("max.in.flight.requests.per.connection")
    if idempotent and in_flight is not None and int(in_flight) > MAX_IN_FLIGHT_IDEMPOTENT:
        raise ConfigException("Must set max.in.flight.requests.per.connection to at most "
                              f"{MAX_IN_FLIGHT_IDEMPOTENT} to use the idempotent producer.")


def override_problems(connector: dict[str, str], idempotent: bool = False) -> list[str]:
    """Why a connector's ``producer.override.*``, ``consumer.override.*`` and
    ``admin.override.*`` keys cannot configure its clients (an unknown key, a bad value), one
    line each: checked when the connector is created, not when its first task starts.
    ``idempotent``: its producers will be (an exactly-once source's)."""
    problems = []
    for kind, table in (("producer", _PRODUCER), ("consumer", _CONSUMER), ("admin", _ADMIN)):
        prefix = f"{kind}.override."
        overrides = {k[len(prefix):]: v for k, v in connector.items() if k.startswith(prefix)}
        try:
            _translate(table, overrides, kind, prefix)
            if kind == "producer":
                _check_in_flight(overrides, idempotent)
        except ConfigException as exc:
            problems.append(str(exc))
    return problems


# Kafka's WorkerSourceTask closes its producer with a 30 s bound: with the delivery timeout at
# Integer.MAX_VALUE, batches for an unreachable cluster are then failed instead of waited for.
PRODUCER_CLOSE_TIMEOUT_S = 30.0


async def close_producer(producer: AIOKafkaProducer) -> None:
    """Stop a connector's producer, failing what it could not deliver within
    PRODUCER_CLOSE_TIMEOUT_S (those records were never acked, so their offsets never commit)."""
    await kafka_internals.close_producer(producer, PRODUCER_CLOSE_TIMEOUT_S)


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
                           if not k.startswith("override.")}, kind, f"{kind}.")


# Connector producers and consumers take producer.*/consumer.* (and the connector's
# *.override.* keys) only, as Kafka's Worker does: not the worker's unprefixed security keys.
def producer(bootstrap: str, overrides: dict[str, str] | None = None,
             **defaults: Any) -> AIOKafkaProducer:
    kwargs = {"acks": "all", "delivery_timeout_ms": DEFAULT_DELIVERY_TIMEOUT_MS, **defaults}
    kwargs.update(_translate(_PRODUCER, overrides or {}, "producer"))
    _check_in_flight(overrides or {}, bool(kwargs.get("enable_idempotence")))
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
