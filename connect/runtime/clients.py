"""Build aiokafka clients from Kafka-style client configs (``producer.*``, ``consumer.*``).

Connect users tune clients with Kafka's property names; the ones aiokafka understands are mapped,
an unknown one is an error that names it (a silently ignored setting is worse than a failure).
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from connect.config_def import ConfigException

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


def _translate(table: dict, configs: dict[str, str], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in configs.items():
        if key not in table:
            raise ConfigException(f"unsupported {kind} config '{key}'")
        name, convert = table[key]
        if name is not None:
            try:
                out[name] = convert(value)
            except ValueError:
                raise ConfigException(f"invalid {kind} config {key}={value!r}") from None
    return out


def producer(bootstrap: str, overrides: dict[str, str] | None = None,
             **defaults: Any) -> AIOKafkaProducer:
    kwargs = {"bootstrap_servers": bootstrap, "acks": "all", **defaults}
    kwargs.update(_translate(_PRODUCER, overrides or {}, "producer"))
    return AIOKafkaProducer(**kwargs)


def consumer(bootstrap: str, overrides: dict[str, str] | None = None,
             *topics: str, **defaults: Any) -> AIOKafkaConsumer:
    kwargs = {"bootstrap_servers": bootstrap, "enable_auto_commit": False,
              "auto_offset_reset": "earliest", **defaults}
    kwargs.update(_translate(_CONSUMER, overrides or {}, "consumer"))
    return AIOKafkaConsumer(*topics, **kwargs)


def admin(bootstrap: str) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(bootstrap_servers=bootstrap)


async def ensure_topic(bootstrap: str, name: str, partitions: int, replication: int,
                       configs: dict[str, str] | None = None) -> int:
    """Create ``name`` if missing; return its partition count. A replication factor above the
    number of brokers is lowered to it (a single-node dev cluster cannot do 3), -1 = broker default.
    """
    from aiokafka.admin import NewTopic

    client = admin(bootstrap)
    await client.start()
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
