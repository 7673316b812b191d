"""Options and input columns of the ``streams`` Spark sink, free of Spark's runtime and the network.

Names and meanings follow Spark's Kafka sink (``df.write.format("kafka")``): ``topic`` (overrides
a ``topic`` column), columns ``key``, ``value``, ``topic``, ``partition``, ``headers``,
``timestamp``, and every ``kafka.<producer key>`` handed to the producer. A key we do not
implement is refused by name at ``save()``/``start()``, never silently ignored.

Our own option: ``processing.guarantee`` = ``at_least_once`` (the default, as Spark's Kafka sink)
or ``exactly_once_v2`` (see :mod:`streams.spark.sink`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
    TimestampType,
)

from streams.kafka.client_config import (
    ALL_PRODUCER_KEYS,
    ClientConfigError,
    check_security,
    client_settings,
    security_kwargs,
)
from streams.spark.source_offsets import _security_option

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"

# Spark's Kafka sink refuses these (records are bytes; Spark serialises them itself).
_SPARK_REFUSED = {
    "kafka.key.serializer": "keys are written as bytes: cast the 'key' column to string or binary",
    "kafka.value.serializer": "values are written as bytes: cast the 'value' column to string "
                              "or binary",
    "kafka.transactional.id": "transactional ids are derived from the query id and the Spark "
                              "partition; set processing.guarantee=exactly_once_v2 instead",
}
# kafka.<key> -> (field of ProducerSettings, converter): Kafka's producer keys the sink hands to
# its producers, taken from the one client table (streams/kafka/client_config.py; the fields are
# named as aiokafka's arguments), and two the sink applies itself: transaction.timeout.ms (only
# its exactly-once producers get it) and max.block.ms (how long it waits for a new topic's
# leaders). Any other kafka.* key but the security ones is refused by name.
_CLIENT_KEYS = ("client.id", "acks", "linger.ms", "batch.size", "compression.type",
                "max.request.size", "request.timeout.ms", "retry.backoff.ms",
                "enable.idempotence")
_PRODUCER_KEYS: dict[str, tuple[str, Any]] = {
    **{f"kafka.{key}": ALL_PRODUCER_KEYS[key] for key in _CLIENT_KEYS},
    "kafka.transaction.timeout.ms": ("transaction_timeout_ms", int),
    "kafka.max.block.ms": ("max_block_ms", int),
}
# Options Spark itself puts into a sink's option map.
_SPARK_OWN = {"checkpointlocation", "path"}
_DISPLAY = ("kafka.bootstrap.servers (or bootstrap.servers), topic, processing.guarantee, "
            + ", ".join(sorted(_PRODUCER_KEYS)) + ", kafka.security.protocol, "
            "kafka.sasl.mechanism, kafka.sasl.jaas.config, kafka.ssl.*")
_COMPRESSION = ("gzip", "snappy", "lz4", "zstd")  # and none
# What a value that does not convert must look like, by key.
_EXPECTED = {"kafka.acks": "all, -1, 0 or 1", "kafka.enable.idempotence": "true or false"}


class SinkOptionError(ValueError):
    """An option or an input column of the ``streams`` sink is missing, unknown or invalid."""


@dataclass(frozen=True)
class ProducerSettings:
    """What a task's producer needs; small and picklable (it travels inside the writer). The
    client fields are aiokafka's producer arguments, already converted."""

    bootstrap_servers: str
    client_id: str = "streams-spark-sink"
    acks: str | int = "all"
    linger_ms: int = 5
    max_batch_size: int = 256 * 1024
    compression_type: str | None = None
    max_request_size: int = 1_048_576
    request_timeout_ms: int = 40_000
    retry_backoff_ms: int = 100
    enable_idempotence: bool = True
    # Exactly-once: a task's transaction stays open until the driver commits the micro-batch,
    # so the default is the broker's default maximum (transaction.max.timeout.ms, 15 min).
    transaction_timeout_ms: int = 900_000
    max_block_ms: int = 60_000
    security: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def security_kwargs(self) -> dict[str, Any]:
        """aiokafka's security arguments (TLS context, SASL login) for these settings."""
        if not self.security:
            return {}
        return security_kwargs(check_security(dict(self.security), "kafka."), "kafka.")

    def producer_kwargs(self) -> dict[str, Any]:
        """aiokafka ``AIOKafkaProducer`` arguments, transactional id excepted."""
        return {
            **client_settings(self.bootstrap_servers, client_id=self.client_id,
                              request_timeout_ms=self.request_timeout_ms,
                              options=self.security_kwargs()),
            **{name: getattr(self, name) for key in _CLIENT_KEYS
               for name, _convert in [ALL_PRODUCER_KEYS[key]]},
        }


@dataclass(frozen=True)
class SinkOptions:
    """Validated options of one ``df.write``/``df.writeStream`` of the ``streams`` format."""

    producer: ProducerSettings
    topic: str | None
    guarantee: str = AT_LEAST_ONCE
    checkpoint: str | None = None

    @property
    def exactly_once(self) -> bool:
        return self.guarantee == EXACTLY_ONCE_V2


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate Spark's option map (keys arrive lower-cased); raises :class:`SinkOptionError`."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    values: dict[str, Any] = {}
    for key, raw in opts.items():
        if key in _SPARK_REFUSED:
            raise SinkOptionError(f"option '{key}' is not supported: {_SPARK_REFUSED[key]}")
        if key in _PRODUCER_KEYS:
            name, convert = _PRODUCER_KEYS[key]
            try:
                values[name] = convert(raw.strip())
            except ValueError:
                raise SinkOptionError(f"option '{key}' must be "
                                      f"{_EXPECTED.get(key, 'an integer')}, got {raw!r}") from None
            continue
        if key in ("kafka.bootstrap.servers", "bootstrap.servers", "topic",
                   "processing.guarantee") or key in _SPARK_OWN or _security_option(key):
            continue
        raise SinkOptionError(f"unknown option '{key}' for the streams sink; supported options: "
                              f"{_DISPLAY}")

    bootstrap = (opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers") or "").strip()
    if not bootstrap:
        raise SinkOptionError("option 'kafka.bootstrap.servers' (or 'bootstrap.servers') is "
                              "required: the broker address(es), e.g. 'localhost:9092'")
    if values.get("acks", "all") not in ("all", 0, 1):
        raise SinkOptionError(f"option 'kafka.acks' must be {_EXPECTED['kafka.acks']}, "
                              f"got {opts['kafka.acks']!r}")
    if values.get("compression_type") not in (None, *_COMPRESSION):
        raise SinkOptionError(f"option 'kafka.compression.type' must be one of none, "
                              f"{', '.join(_COMPRESSION)}, got {opts['kafka.compression.type']!r}")
    for key, (name, _convert) in _PRODUCER_KEYS.items():
        value = values.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or name == "acks":
            continue
        if name == "linger_ms" and value < 0:
            raise SinkOptionError(f"option '{key}' must be >= 0")
        if name != "linger_ms" and value <= 0:
            raise SinkOptionError(f"option '{key}' must be a positive integer, got {value}")

    guarantee = opts.get("processing.guarantee", AT_LEAST_ONCE).strip().lower()
    if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE_V2):
        raise SinkOptionError(f"option 'processing.guarantee' must be '{AT_LEAST_ONCE}' (the "
                              f"default) or '{EXACTLY_ONCE_V2}', got {opts['processing.guarantee']!r}")
    if guarantee == EXACTLY_ONCE_V2 and (values.get("acks", "all") != "all"
                                         or not values.get("enable_idempotence", True)):
        raise SinkOptionError("processing.guarantee=exactly_once_v2 needs kafka.acks=all and "
                              "kafka.enable.idempotence=true (transactions are idempotent)")

    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise SinkOptionError("option 'topic' must name a topic, got an empty value")

    producer = ProducerSettings(
        bootstrap_servers=bootstrap,
        security=tuple(sorted((k[len("kafka."):], v) for k, v in opts.items()
                              if _security_option(k))),
        **values,
    )
    try:
        producer.security_kwargs()  # a bad key, file or jaas entry fails at save()/start()
    except ClientConfigError as exc:
        raise SinkOptionError(str(exc)) from None
    return SinkOptions(producer=producer, topic=topic.strip() if topic else None,
                       guarantee=guarantee, checkpoint=opts.get("checkpointlocation"))


# ---- input columns ---------------------------------------------------------------------------

_HEADERS = ArrayType(StructType().add("key", StringType()).add("value", BinaryType()))
_BYTES = (StringType(), BinaryType())


def _type_name(data_type: DataType) -> str:
    return data_type.simpleString()


def check_input_schema(schema: StructType, options: SinkOptions) -> None:
    """Spark's Kafka sink's rules for the written DataFrame's columns; other columns are ignored.

    Raises :class:`SinkOptionError` naming the column, before any record is sent.
    """
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in fields:
        raise SinkOptionError(f"the DataFrame written to the streams sink needs a 'value' column "
                              f"(string or binary); its columns: {', '.join(schema.names)}")
    for column in ("key", "value"):
        if column in fields and fields[column] not in _BYTES:
            raise SinkOptionError(f"column '{column}' must be string or binary, got "
                                  f"{_type_name(fields[column])}: cast it, e.g. "
                                  f"CAST({column} AS STRING)")
    if options.topic is None:
        if "topic" not in fields:
            raise SinkOptionError("no topic to write to: set the option 'topic' or give the "
                                  "DataFrame a 'topic' column")
        if fields["topic"] != StringType():
            raise SinkOptionError(f"column 'topic' must be string, got "
                                  f"{_type_name(fields['topic'])}")
    if "partition" in fields and fields["partition"] != IntegerType():
        raise SinkOptionError(f"column 'partition' must be int, got "
                              f"{_type_name(fields['partition'])}")
    if "timestamp" in fields and fields["timestamp"] != TimestampType():
        raise SinkOptionError(f"column 'timestamp' must be timestamp, got "
                              f"{_type_name(fields['timestamp'])}")
    if "headers" in fields:
        headers = fields["headers"]
        ok = isinstance(headers, ArrayType) and isinstance(headers.elementType, StructType) and \
            [(f.name, f.dataType) for f in headers.elementType.fields] == \
            [("key", StringType()), ("value", BinaryType())]
        if not ok:
            raise SinkOptionError(f"column 'headers' must be {_type_name(_HEADERS)}, got "
                                  f"{_type_name(headers)}")
