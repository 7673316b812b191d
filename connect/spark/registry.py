"""``from_registry``: decode a binary column of registry-framed records into typed Spark columns.

Spark's own ``from_avro`` needs the spark-avro jar (not fetchable here) and does not speak the
schema registry's wire format. This reads the 5-byte header (magic byte 0, schema id), fetches
the writer's schema by id (cached per executor process), and resolves each record to one
*reader* schema (Avro schema resolution: defaults fill fields old writers lacked), so a column
stays one Spark type across schema versions. The Spark type comes from the reader schema the
way the SparkSink types Connect data: decimal -> DecimalType(precision, scale), date -> DateType,
timestamp-millis/micros -> TimestampType, records -> structs, optional -> nullable.

    df = spark.read.format("streams").option("subscribe", "trades").load()
    trades = df.select(from_registry("value", registry_url, subject="trades-value")
                       .alias("t")).select("t.*")
"""

from __future__ import annotations

import io
import json
from typing import Any

_CLIENTS: dict[str, Any] = {}


def _client(url: str) -> Any:
    from streams.registry.client import SchemaRegistryClient

    client = _CLIENTS.get(url)
    if client is None:
        client = _CLIENTS[url] = SchemaRegistryClient(url)
    return client


def reader_schema(registry_url: str, subject: str | None = None,
                  schema: str | dict[str, Any] | None = None) -> dict[str, Any]:
    """The reader schema: ``schema`` if given, else the subject's latest registered version."""
    if schema is not None:
        return json.loads(schema) if isinstance(schema, str) else schema
    if subject is None:
        raise ValueError("from_registry needs subject= (e.g. 'topic-value') or schema=")
    return json.loads(_client(registry_url).get_latest_version(subject).schema)


def spark_type(avro: Any) -> Any:
    """The Spark type the column gets for an Avro reader schema."""
    from connect.converters.avro import avro_to_connect
    from connect.spark.schema import from_connect

    return from_connect(avro_to_connect(avro))


def from_registry(column: Any, registry_url: str, subject: str | None = None,
                  schema: str | dict[str, Any] | None = None, schema_type: str | None = None,
                  message: str | None = None) -> Any:
    """A Column decoding ``column`` (binary, Confluent wire format) with the registry.

    Avro (the default) resolves every writer to the reader schema. With a JSON Schema or
    Protobuf subject (or ``schema_type="JSON"``/``"PROTOBUF"``), values are decoded as the
    registry converters decode them and the column takes the latest schema's type (for
    Protobuf the file's first message, or ``message=`` its full name); fields a writer lacks
    are null.
    """
    from pyspark.sql.functions import udf

    decoder, data_type = decoder_for(registry_url, subject, schema, schema_type, message)
    return udf(decoder, data_type)(column)


def decoder_for(registry_url: str, subject: str | None = None,
                schema: str | dict[str, Any] | None = None, schema_type: str | None = None,
                message: str | None = None) -> tuple[Any, Any]:
    """(the per-value decoding function, its Spark type): what :func:`from_registry` uses."""
    from connect.spark.schema import from_connect

    kind = (schema_type or "").upper() or None
    text: str | None = None
    if schema is None:
        if subject is None:
            raise ValueError("from_registry needs subject= (e.g. 'topic-value') or schema=")
        latest = _client(registry_url).get_latest_version(subject)
        kind = kind or latest.schema_type
        text = latest.schema
    kind = kind or "AVRO"
    if kind == "AVRO":
        reader = reader_schema(registry_url, None, schema if schema is not None else text)
        return _Decoder(registry_url, reader), spark_type(reader)
    if kind == "JSON":
        from connect.converters.json_schema import json_schema_to_connect

        js = schema if isinstance(schema, dict) else json.loads(schema or text or "{}")
        connect_schema = json_schema_to_connect(js)
        return _ConverterDecoder(registry_url, "JSON"), from_connect(connect_schema)
    if kind == "PROTOBUF":
        connect_schema = _protobuf_reader(registry_url, subject, schema, message)
        return _ConverterDecoder(registry_url, "PROTOBUF"), from_connect(connect_schema)
    raise ValueError(f"unknown schema type {kind!r}: use AVRO, JSON or PROTOBUF")


def _protobuf_reader(url: str, subject: str | None, schema: Any, message: str | None) -> Any:
    from google.protobuf import descriptor_pool

    from connect.converters.protobuf import ProtobufConverter, message_to_connect

    conv = ProtobufConverter()
    conv.configure({"schema.registry.url": url}, False)
    if schema is not None:
        text, references = str(schema), ()
    else:
        latest = _client(url).get_latest_version(subject or "", fmt="serialized")
        text, references = latest.schema, latest.references
    file = conv._file(descriptor_pool.DescriptorPool(), text, references, set())
    messages = list(file.message_types_by_name.values())
    if message is None:
        return message_to_connect(messages[0])
    for desc in messages:
        if desc.full_name == message:
            return message_to_connect(desc)
    raise ValueError(f"no message {message!r} in the schema; it has "
                     f"{[d.full_name for d in messages]}")


class _ConverterDecoder:
    """JSON Schema and Protobuf values through the registry converter, as plain Python."""

    _NAMES = {"JSON": "io.confluent.connect.json.JsonSchemaConverter",
              "PROTOBUF": "io.confluent.connect.protobuf.ProtobufConverter"}

    def __init__(self, registry_url: str, kind: str) -> None:
        self.url, self.kind = registry_url, kind
        self._converter: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "kind": self.kind}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url, self.kind, self._converter = state["url"], state["kind"], None

    def __call__(self, data):  # type: ignore[no-untyped-def] # hints make pyspark warn
        from connect.converters import CONVERTERS
        from connect.spark.schema import plain

        if data is None:
            return None
        if self._converter is None:
            self._converter = CONVERTERS[self._NAMES[self.kind]]()
            self._converter.configure({"schema.registry.url": self.url}, False)
        found = self._converter.to_connect_data("", bytes(data))
        return plain(found.value, found.schema)


class _Decoder:
    """Pickled to the executors; parses schemas lazily there."""

    def __init__(self, registry_url: str, reader: dict[str, Any]) -> None:
        self.url = registry_url
        self.reader = reader
        self._state: tuple[Any, Any, dict[int, Any]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "reader": self.reader}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url, self.reader, self._state = state["url"], state["reader"], None

    def __call__(self, data):  # type: ignore[no-untyped-def] # hints make pyspark warn
        import fastavro

        from connect.converters.avro import avro_to_connect, to_connect_value
        from connect.spark.schema import plain

        if data is None:
            return None
        if self._state is None:
            self._state = (fastavro.parse_schema(self.reader), avro_to_connect(self.reader), {})
        reader, connect_schema, writers = self._state
        if len(data) < 5 or data[0] != 0:
            raise ValueError(f"not in the schema registry wire format: {bytes(data[:8])!r}")
        schema_id = int.from_bytes(data[1:5], "big")
        writer = writers.get(schema_id)
        if writer is None:
            text = _client(self.url).get_schema(schema_id).schema
            writer = writers[schema_id] = fastavro.parse_schema(json.loads(text))
        value = fastavro.schemaless_reader(io.BytesIO(data[5:]), writer, reader)
        return plain(to_connect_value(value, connect_schema), connect_schema)
