"""The plain ``avro`` library (Apache Avro's Python package), as the seeds' example uses it:
a producer that encodes with ``DatumWriter`` and frames the bytes itself (magic byte, schema id
from the registry), read by our serde; and our serde's bytes read back with ``DatumReader``."""

from __future__ import annotations

import io
import json
import struct

import avro.io
import avro.schema

from streams.registry.client import SchemaRegistryClient
from streams.serde import Serdes

PAGEVIEW = {"type": "record", "name": "PageView", "namespace": "seeds", "fields": [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "duration_ms", "type": "long"},
]}


def test_plain_avro_library_both_ways(registry) -> None:
    client = SchemaRegistryClient(registry.url)
    schema_id = client.register("pageviews-value", json.dumps(PAGEVIEW))
    parsed = avro.schema.parse(json.dumps(PAGEVIEW))

    # A producer written with the plain library: header + DatumWriter's binary encoding.
    buf = io.BytesIO()
    buf.write(struct.pack(">bI", 0, schema_id))
    avro.io.DatumWriter(parsed).write({"user": "ann", "page": "/", "duration_ms": 1200},
                                      avro.io.BinaryEncoder(buf))
    serde = Serdes.avro(registry_url=registry.url)
    assert serde.deserialize("pageviews", buf.getvalue()) == \
        {"user": "ann", "page": "/", "duration_ms": 1200}

    # Our serde's bytes: the same header, and a body DatumReader decodes.
    data = Serdes.avro(PAGEVIEW, registry_url=registry.url).serialize(
        "pageviews", {"user": "bo", "page": "/cart", "duration_ms": 7})
    magic, found_id = struct.unpack(">bI", data[:5])
    assert (magic, found_id) == (0, schema_id)
    writer = avro.schema.parse(client.get_schema(found_id).schema)
    decoded = avro.io.DatumReader(writer, parsed).read(avro.io.BinaryDecoder(io.BytesIO(data[5:])))
    assert decoded == {"user": "bo", "page": "/cart", "duration_ms": 7}
