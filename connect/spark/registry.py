"""``from_registry``: decode a binary column of registry-framed Avro into typed Spark columns.

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
                  schema: str | dict[str, Any] | None = None) -> Any:
    """A Column decoding ``column`` (binary, Confluent wire format) with the registry."""
    from pyspark.sql.functions import udf

    reader = reader_schema(registry_url, subject, schema)
    return udf(_Decoder(registry_url, reader), spark_type(reader))(column)


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
