"""One way to build a configured Kafka client, for every part: the streams runtime, the CLI and
the console, Connect, Spark and the schema registry.

A component describes where and how its clients connect once, as *settings* (aiokafka keyword
arguments) made by ``streams.kafka.client_config.client_settings``: the bootstrap servers,
``client.id``, ``request.timeout.ms``, the security keys of Kafka's client properties
(https://kafka.apache.org/documentation/#security_configclients) and the tuning keys mapped
from its client configs.
:func:`admin`, :func:`consumer`, :func:`producer` and :func:`network_client` build aiokafka
clients from settings plus the arguments the caller relies on, which win over the settings (a
group-less reader's ``group_id=None`` is not the user's to change). :func:`start` starts a client
and, when it cannot bootstrap, says why. Nothing outside ``streams.kafka`` constructs aiokafka
clients (``tests/unit/test_kafka_seam.py`` checks it).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaConnectionError

from .client_config import ClientConfigError
from .internals import connection_failure, set_delivery_timeout

# aiokafka arguments of a bare connection (bootstrap, client id, timeouts, security): what its
# low-level client takes, and what every other client shares.
CONNECTION_ARGS = frozenset(inspect.signature(AIOKafkaClient.__init__).parameters) - {"self",
                                                                                       "loop"}


# aiokafka's low-level client: what ``network_client`` returns and ``client_of`` gives.
NetworkClient = AIOKafkaClient


def connection_settings(client_settings: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``client_settings`` that configures a bare connection (a producer's
    settings without ``linger_ms``, ``acks`` ...)."""
    return {k: v for k, v in client_settings.items() if k in CONNECTION_ARGS}


def admin(client_settings: Mapping[str, Any], **fixed: Any) -> AIOKafkaAdminClient:
    """An admin client (not started)."""
    return AIOKafkaAdminClient(**{**client_settings, **fixed})


def consumer(client_settings: Mapping[str, Any], *topics: str, **fixed: Any) -> AIOKafkaConsumer:
    """A consumer (not started), subscribed to ``topics`` if any are given."""
    return AIOKafkaConsumer(*topics, **{**client_settings, **fixed})


def producer(client_settings: Mapping[str, Any], **fixed: Any) -> AIOKafkaProducer:
    """A producer (not started). ``delivery_timeout_ms`` (Kafka's ``delivery.timeout.ms``,
    which aiokafka lacks) is how long a handed-over batch is retried before it fails."""
    settings = {**client_settings, **fixed}
    delivery_timeout_ms = settings.pop("delivery_timeout_ms", None)
    if delivery_timeout_ms is not None:
        floor = settings.get("linger_ms", 0) + settings.get("request_timeout_ms", 40_000)
        if delivery_timeout_ms < floor:  # Kafka's producer refuses it too
            raise ClientConfigError(f"delivery.timeout.ms ({delivery_timeout_ms}) must be at "
                                    f"least linger.ms + request.timeout.ms ({floor})")
    built = AIOKafkaProducer(**settings)
    if delivery_timeout_ms is not None:
        set_delivery_timeout(built, int(delivery_timeout_ms))
    return built


def network_client(client_settings: Mapping[str, Any], **fixed: Any) -> NetworkClient:
    """aiokafka's low-level client, for requests its producer and consumer do not send (EndTxn
    for another process's transaction, Metadata that may create a topic), with the connection
    part of ``client_settings``; call ``bootstrap()`` to start it."""
    return AIOKafkaClient(**{**connection_settings(client_settings), **fixed})


class BootstrapError(KafkaConnectionError):
    """A client could not bootstrap; ``reason`` says why when a connection tells (a refused
    SASL login, an untrusted certificate), else None."""

    def __init__(self, message: str, reason: str | None) -> None:
        super().__init__(message)
        self.reason = reason


async def start(client: AIOKafkaAdminClient | AIOKafkaConsumer | AIOKafkaProducer,
                client_settings: Mapping[str, Any]) -> None:
    """Start ``client``; when it cannot bootstrap, close it and raise ``BootstrapError`` with
    the reason (aiokafka only logs it and raises a bare "Unable to bootstrap from ...")."""
    try:
        await client.start()
    except KafkaConnectionError as exc:
        await (client.close() if isinstance(client, AIOKafkaAdminClient) else client.stop())
        reason = await connection_failure(connection_settings(client_settings))
        text = str(exc.args[0]) if exc.args else "Unable to bootstrap"
        raise BootstrapError(f"{text}: {reason}" if reason else text, reason) from exc
