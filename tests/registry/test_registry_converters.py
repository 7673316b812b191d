"""Confluent's converter class names in Connect: Avro, JSON Schema and Protobuf converters map
Connect schemas and registry schemas both ways and interoperate with Confluent's serializers."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connect.converters import CONVERTERS
from connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SchemaType,
    Struct,
    Timestamp,
)
from streams.serde import Serdes

from .protos import message_classes


def converter(name: str, registry, is_key: bool = False, **extra):
    conv = CONVERTERS[name]()
    conv.configure({"schema.registry.url": registry.url, **extra}, is_key)
    return conv


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def payment_schema() -> Schema:
    address = (SchemaBuilder.struct().name("shop.Address")
               .field("city", Schema.STRING_SCHEMA).build())
    return (SchemaBuilder.struct().name("shop.Payment")
            .field("id", Schema.STRING_SCHEMA)
            .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "10")
                   .build())
            .field("day", Date.SCHEMA)
            .field("at", Timestamp.SCHEMA)
            .field("note", Schema.OPTIONAL_STRING_SCHEMA)
            .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
            .field("scores", SchemaBuilder.map(Schema.STRING_SCHEMA,
                                               Schema.INT32_SCHEMA).build())
            .field("address", address)
            .build())


def payment(schema: Schema) -> Struct:
    address = Struct(schema.field("address").schema).put("city", "Oslo")
    return (Struct(schema).put("id", "p1").put("amount", decimal.Decimal("12.34"))
            .put("day", dt.date(2026, 3, 4))
            .put("at", dt.datetime(2026, 3, 4, 5, 6, 7, 8000, tzinfo=dt.UTC))
            .put("tags", ["a", "b"]).put("scores", {"x": 1}).put("address", address))


def test_avro_converter_both_ways_and_with_confluent(registry) -> None:
    conv = converter("io.confluent.connect.avro.AvroConverter", registry)
    schema = payment_schema()
    data = conv.from_connect_data("payments", schema, payment(schema))
    back = conv.to_connect_data("payments", data)
    assert back.value.get("amount") == decimal.Decimal("12.34")
    assert back.value.get("day") == dt.date(2026, 3, 4)
    assert back.value.get("at") == dt.datetime(2026, 3, 4, 5, 6, 7, 8000, tzinfo=dt.UTC)
    assert back.value.get("address").get("city") == "Oslo"
    assert back.value.get("note") is None and back.value.get("tags") == ["a", "b"]
    assert back.schema.field("amount").schema.name == Decimal.LOGICAL_NAME
    assert back.schema.field("note").schema.optional

    # Confluent's deserializer reads the converter's bytes with Avro logical types.
    client = SchemaRegistryClient({"url": registry.url})
    plain = AvroDeserializer(client)(data, ctx("payments"))
    assert plain["amount"] == decimal.Decimal("12.34") and plain["address"] == {"city": "Oslo"}
    registered = json.loads(client.get_latest_version("payments-value").schema.schema_str)
    assert registered["name"] == "Payment" and registered["namespace"] == "shop"

    # And the converter reads what Confluent's serializer writes, logical types included.
    avro = {"type": "record", "name": "Tick", "fields": [
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 8, "scale": 3}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "side", "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]}},
        {"name": "qty", "type": ["null", "long"], "default": None}]}
    tick = {"price": decimal.Decimal("1.250"), "side": "SELL", "qty": 5,
            "at_us": dt.datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC)}
    raw = AvroSerializer(client, json.dumps(avro))(tick, ctx("ticks"))
    got = conv.to_connect_data("ticks", raw)
    assert got.value.get("price") == decimal.Decimal("1.250")
    assert got.value.get("at_us").microsecond == 123456  # micros kept
    assert got.value.get("side") == "SELL" and got.value.get("qty") == 5
    assert got.schema.field("at_us").schema.name == Timestamp.LOGICAL_NAME
    assert got.schema.field("qty").schema.optional

    with pytest.raises(DataException, match="wire format"):
        conv.to_connect_data("ticks", b"plain")
    with pytest.raises(DataException, match="schema"):
        conv.from_connect_data("ticks", None, {"a": 1})


def test_json_schema_converter(registry) -> None:
    conv = converter("io.confluent.connect.json.JsonSchemaConverter", registry)
    schema = (SchemaBuilder.struct().name("Reading").field("sensor", Schema.STRING_SCHEMA)
              .field("value", Schema.FLOAT64_SCHEMA).field("count", Schema.INT32_SCHEMA)
              .field("label", Schema.OPTIONAL_STRING_SCHEMA).build())
    value = Struct(schema).put("sensor", "t1").put("value", 21.5).put("count", 3)
    data = conv.from_connect_data("readings", schema, value)
    back = conv.to_connect_data("readings", data)
    assert back.value == value and back.schema == schema
    assert JSONDeserializer(None, schema_registry_client=SchemaRegistryClient(
        {"url": registry.url}))(data, ctx("readings")) == \
        {"sensor": "t1", "value": 21.5, "count": 3, "label": None}


def test_protobuf_converter(registry) -> None:
    conv = converter("io.confluent.connect.protobuf.ProtobufConverter", registry)
    proto = """syntax = "proto3"; package iot;
    message Reading { string sensor = 1; double value = 2; repeated int32 samples = 3;
      map<string, string> labels = 4; Kind kind = 5; Place place = 6;
      enum Kind { TEMP = 0; HUMIDITY = 1; }
      message Place { string room = 1; } }"""
    reading_cls = message_classes(proto, "iot/reading.proto")["iot.Reading"]
    msg = reading_cls(sensor="s1", value=1.5, samples=[1, 2], kind=1)
    msg.labels["floor"] = "2"
    msg.place.room = "lab"
    client = SchemaRegistryClient({"url": registry.url})
    raw = ProtobufSerializer(reading_cls, client, {"use.deprecated.format": False})(
        msg, ctx("readings-pb"))
    got = conv.to_connect_data("readings-pb", raw)
    assert got.schema.name == "iot.Reading"
    assert got.value.get("sensor") == "s1" and got.value.get("samples") == [1, 2]
    assert got.value.get("labels") == {"floor": "2"} and got.value.get("kind") == "HUMIDITY"
    assert got.value.get("place").get("room") == "lab"

    # Connect -> Protobuf -> Connect with a generated proto3 schema.
    schema = (SchemaBuilder.struct().name("iot.Alert").field("sensor", Schema.STRING_SCHEMA)
              .field("level", Schema.OPTIONAL_INT64_SCHEMA)
              .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build()).build())
    alert = Struct(schema).put("sensor", "s9").put("level", 3).put("tags", ["hot"])
    data = conv.from_connect_data("alerts", schema, alert)
    back = conv.to_connect_data("alerts", data)
    assert back.value.get("sensor") == "s9" and back.value.get("level") == 3
    assert back.value.get("tags") == ["hot"]
    assert back.schema.field("level").schema.type is SchemaType.INT64
    assert client.get_latest_version("alerts-value").schema.schema_type == "PROTOBUF"


def test_protobuf_well_known_types(registry) -> None:
    """A message importing google/protobuf/timestamp.proto: Confluent's serializer references
    no subject for it (well-known types are built in), nor does our serde; the converter reads
    the Timestamp as a Connect Timestamp, and an unset message field as null."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

    from streams.registry.proto_text import parse_proto

    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(timestamp_pb2.DESCRIPTOR.serialized_pb))
    fdp = parse_proto('syntax = "proto3"; package ev; import "google/protobuf/timestamp.proto";'
                      "message Event { string id = 1; google.protobuf.Timestamp at = 2;"
                      " google.protobuf.Timestamp done = 3; }")
    fdp.name = "ev/event.proto"
    pool.Add(fdp)
    event_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("ev.Event"))
    event = event_cls(id="e1")
    event.at.seconds, event.at.nanos = 1_700_000_000, 250_000_000
    client = SchemaRegistryClient({"url": registry.url})
    data = ProtobufSerializer(event_cls, client, {"use.deprecated.format": False})(
        event, ctx("events"))
    assert Serdes.protobuf(event_cls, registry_url=registry.url).serialize("events", event) \
        == data
    assert not any(s.startswith("google/") for s in client.get_subjects())
    got = converter("io.confluent.connect.protobuf.ProtobufConverter", registry) \
        .to_connect_data("events", data)
    assert got.value.get("at") == dt.datetime(2023, 11, 14, 22, 13, 20, 250000, tzinfo=dt.UTC)
    assert got.value.get("done") is None
    assert got.schema.field("at").schema.name == Timestamp.LOGICAL_NAME


def test_from_registry_decoders_for_json_schema_and_protobuf(registry) -> None:
    """What ``from_registry`` runs per value and the column type it declares, for JSON Schema
    and Protobuf subjects (the Avro path runs in Spark in tests/spark)."""
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    from connect.spark.registry import decoder_for

    client = SchemaRegistryClient({"url": registry.url})
    point = {"type": "object", "title": "Point", "additionalProperties": False,
             "properties": {"x": {"type": "integer"}, "label": {"type": "string"}},
             "required": ["x"]}
    data = JSONSerializer(json.dumps(point), client)({"x": 3, "label": "a"}, ctx("points"))
    decode, data_type = decoder_for(registry.url, subject="points-value")
    assert data_type.simpleString() == "struct<x:bigint,label:string>"
    assert decode(data) == {"x": 3, "label": "a"}

    classes = message_classes('syntax = "proto3"; package geo; message Place {'
                              ' string name = 1; repeated int32 codes = 2; }', "geo/place.proto")
    place = classes["geo.Place"](name="oslo", codes=[1, 2])
    raw = ProtobufSerializer(classes["geo.Place"], client, {"use.deprecated.format": False})(
        place, ctx("places"))
    decode, data_type = decoder_for(registry.url, subject="places-value")
    assert data_type.simpleString() == "struct<name:string,codes:array<int>>"
    assert decode(raw) == {"name": "oslo", "codes": [1, 2]}
