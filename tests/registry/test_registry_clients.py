"""Confluent's own Python client and serializers against the bundled schema registry, and our
registry serdes reading what Confluent's serializers write (and the other way round)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from streams.serde import Serdes, SerializationError

from .protos import message_classes

USER_V1 = {"type": "record", "name": "User", "namespace": "demo",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
USER_V2 = {**USER_V1, "fields": [*USER_V1["fields"],
                                 {"name": "email", "type": ["null", "string"], "default": None}]}


def value_ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_client_api_and_error_codes(registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    subject = "api-value"
    schema_id = client.register_schema(subject, Schema(json.dumps(USER_V1), "AVRO"))
    assert client.register_schema(subject, Schema(json.dumps(USER_V1), "AVRO")) == schema_id
    assert json.loads(client.get_schema(schema_id).schema_str) == USER_V1
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (1, schema_id)
    looked_up = client.lookup_schema(subject, Schema(json.dumps(USER_V1), "AVRO"))
    assert looked_up.version == 1 and looked_up.schema_id == schema_id
    assert subject in client.get_subjects()
    assert {"subject": subject, "version": 1, "id": schema_id, "schema": json.dumps(USER_V1)} \
        in SchemaRegistryClient({"url": registry.url})._rest_client.get("schemas")

    # The same schema under another subject keeps its id (Confluent reuses ids).
    assert client.register_schema("other-value", Schema(json.dumps(USER_V1), "AVRO")) == schema_id

    # Adding a field without a default breaks BACKWARD; the message names the field.
    broken = {**USER_V1, "fields": [*USER_V1["fields"], {"name": "email", "type": "string"}]}
    with pytest.raises(SchemaRegistryError) as incompatible:
        client.register_schema(subject, Schema(json.dumps(broken), "AVRO"))
    assert incompatible.value.http_status_code == 409
    assert "email" in incompatible.value.error_message
    assert not client.test_compatibility(subject, Schema(json.dumps(broken), "AVRO"))
    assert client.test_compatibility(subject, Schema(json.dumps(USER_V2), "AVRO"))

    v2 = client.register_schema(subject, Schema(json.dumps(USER_V2), "AVRO"))
    assert v2 != schema_id
    assert client.get_versions(subject) == [1, 2]

    with pytest.raises(SchemaRegistryError) as unknown:
        client.get_latest_version("nope-value")
    assert (unknown.value.http_status_code, unknown.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as no_version:
        client.get_version(subject, 7)
    assert no_version.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema(subject, Schema('{"type": "record", "name": "X"}', "AVRO"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)

    # Compatibility config: global and per subject.
    assert client.get_compatibility() == "BACKWARD"
    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    client.register_schema(subject, Schema(json.dumps(broken), "AVRO"))

    # Soft delete, then hard delete (which needs the soft delete first).
    with pytest.raises(SchemaRegistryError) as not_soft:
        client.delete_version(subject, 1, permanent=True)
    assert not_soft.value.error_code == 40407
    assert client.delete_version(subject, 1) == 1
    assert client.get_versions(subject) == [2, 3]
    assert client.get_version(subject, 1, deleted=True).version == 1
    assert client.delete_version(subject, 1, permanent=True) == 1
    assert client.delete_subject(subject) == [2, 3]
    assert subject not in client.get_subjects()
    assert client.delete_subject(subject, permanent=True) == [2, 3]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_versions(subject)
    assert gone.value.error_code == 40401
    # The id still resolves (records written with it stay readable).
    assert json.loads(client.get_schema(schema_id).schema_str) == USER_V1


def test_avro_between_confluent_serializers_and_our_serde(registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    topic = "avro-interop"
    confluent_ser = AvroSerializer(client, json.dumps(USER_V1))
    confluent_de = AvroDeserializer(client)
    ours = Serdes.avro(registry_url=registry.url)  # no schema: read with the writer's

    data = confluent_ser({"name": "ada", "age": 36}, value_ctx(topic))
    assert data[0] == 0
    assert ours.deserialize(topic, data) == {"name": "ada", "age": 36}

    # Our serde with the evolved schema registers v2 and Confluent's deserializer reads it.
    ours_v2 = Serdes.avro(USER_V2, registry_url=registry.url)
    out = ours_v2.serialize(topic, {"name": "bob", "age": 7, "email": "b@x"})
    assert confluent_de(out, value_ctx(topic)) == {"name": "bob", "age": 7, "email": "b@x"}
    assert client.get_latest_version(f"{topic}-value").version == 2
    # Reading v1 data with the v2 reader schema fills the default (Avro schema resolution).
    assert ours_v2.deserialize(topic, data) == {"name": "ada", "age": 36, "email": None}

    with pytest.raises(SerializationError, match="age"):
        ours_v2.serialize(topic, {"name": "eve", "age": "old"})
    with pytest.raises(SerializationError, match="wire format"):
        ours.deserialize(topic, b'{"name": "json"}')


def test_avro_serde_options(registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    topic = "avro-options"
    # auto.register.schemas=false: nothing registered yet, so serializing fails clearly.
    strict = Serdes.avro(USER_V1, registry_url=registry.url, auto_register_schemas=False)
    with pytest.raises(SerializationError, match="40401|not found"):
        strict.serialize(topic, {"name": "a", "age": 1})
    client.register_schema(f"{topic}-value", Schema(json.dumps(USER_V1), "AVRO"))
    assert strict.deserialize(topic, strict.serialize(topic, {"name": "a", "age": 1})) == \
        {"name": "a", "age": 1}

    # use.latest.version: write with the subject's latest schema (v2), not the serde's own.
    client.register_schema(f"{topic}-value", Schema(json.dumps(USER_V2), "AVRO"))
    latest = Serdes.avro(registry_url=registry.url, use_latest_version=True)
    data = latest.serialize(topic, {"name": "c", "age": 2, "email": None})
    assert int.from_bytes(data[1:5], "big") == client.get_latest_version(f"{topic}-value").schema_id

    # RecordNameStrategy and TopicRecordNameStrategy; keys get "-key" subjects.
    Serdes.avro(USER_V1, registry_url=registry.url,
                subject_name_strategy="RecordNameStrategy").serialize(topic, {"name": "d", "age": 3})
    Serdes.avro(USER_V1, registry_url=registry.url,
                config={"value.subject.name.strategy":
                        "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"}
                ).serialize(topic, {"name": "d", "age": 3})
    Serdes.avro("string", registry_url=registry.url, is_key=True).serialize(topic, "k")
    subjects = client.get_subjects()
    assert {"demo.User", f"{topic}-demo.User", f"{topic}-key"} <= set(subjects)
    with pytest.raises(SerializationError, match="unknown subject name strategy"):
        Serdes.avro(USER_V1, registry_url=registry.url, subject_name_strategy="Nope")


def test_avro_schema_from_pydantic(registry) -> None:
    import datetime
    import decimal

    from pydantic import BaseModel, Field

    class Order(BaseModel):
        id: int
        item: str
        price: decimal.Decimal = Field(max_digits=10, decimal_places=2)
        placed: datetime.datetime
        note: str | None = None

    serde = Serdes.avro(Order, registry_url=registry.url)
    order = Order(id=1, item="tea", price=decimal.Decimal("3.50"),
                  placed=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC))
    data = serde.serialize("orders", order)
    assert serde.deserialize("orders", data) == order
    # Confluent's deserializer reads the same record as a dict with Avro logical types.
    plain = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))(data, value_ctx("orders"))
    assert plain["price"] == decimal.Decimal("3.50") and plain["note"] is None


def test_json_schema_between_confluent_and_ours(registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    topic = "json-interop"
    schema = {"type": "object", "title": "Point",
              "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
              "required": ["x", "y"], "additionalProperties": False}
    confluent_ser = JSONSerializer(json.dumps(schema), client)
    data = confluent_ser({"x": 1, "y": 2}, value_ctx(topic))
    ours = Serdes.json_schema(registry_url=registry.url)
    assert ours.deserialize(topic, data) == {"x": 1, "y": 2}

    ours_w = Serdes.json_schema(schema, registry_url=registry.url)
    out = ours_w.serialize(topic, {"x": 5, "y": 6})
    assert out[1:5] == data[1:5]  # the same schema, the same id
    assert JSONDeserializer(json.dumps(schema))(out, value_ctx(topic)) == {"x": 5, "y": 6}
    with pytest.raises(SerializationError, match="y"):
        ours_w.serialize(topic, {"x": 5})


PROTO = """
syntax = "proto3";
package shop;
message Envelope { string id = 1; }
message Order {
  string id = 1;
  int64 quantity = 2;
  repeated string tags = 3;
  message Line { string sku = 1; int32 count = 2; }
  repeated Line lines = 4;
}
"""


def test_protobuf_between_confluent_and_ours(registry) -> None:
    classes = message_classes(PROTO, "shop/order.proto")
    order_cls, line_cls = classes["shop.Order"], classes["shop.Order.Line"]
    client = SchemaRegistryClient({"url": registry.url})
    topic = "proto-interop"
    order = order_cls(id="o1", quantity=3, tags=["a", "b"])
    order.lines.add(sku="s1", count=2)

    confluent_ser = ProtobufSerializer(order_cls, client, {"use.deprecated.format": False})
    data = confluent_ser(order, value_ctx(topic))
    assert data[5] != 0  # Order is the second message: indexes [1], not the short [0]
    ours = Serdes.protobuf(order_cls, registry_url=registry.url)
    assert ours.deserialize(topic, data) == order
    out = ours.serialize(topic, order)
    assert out == data  # same id, same indexes, same payload
    assert ProtobufDeserializer(order_cls, {"use.deprecated.format": False})(
        out, value_ctx(topic)) == order

    # A nested message gets indexes [1, 0]; Confluent's deserializer reads ours.
    line = line_cls(sku="s2", count=9)
    line_bytes = Serdes.protobuf(line_cls, registry_url=registry.url).serialize("lines", line)
    assert line_bytes[5:8] == bytes([4, 2, 0])  # zig-zag: count 2, then 1, 0
    assert ProtobufDeserializer(line_cls, {"use.deprecated.format": False})(
        line_bytes, value_ctx("lines")) == line
    # The registry answers the .proto as text for Confluent's default format, and serialized.
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    text = registered.schema.schema_str
    assert "package shop;" in text and "message Line {" in text and "repeated Line lines = 4;" \
        in text
    # The text registers as the same schema (same id) as the descriptor Confluent's client sent.
    assert client.register_schema(f"{topic}-value", Schema(text, "PROTOBUF")) == \
        int.from_bytes(data[1:5], "big")


def test_schema_references(registry) -> None:
    from confluent_kafka.schema_registry import SchemaReference

    client = SchemaRegistryClient({"url": registry.url})
    address = {"type": "record", "name": "Address", "namespace": "refs",
               "fields": [{"name": "city", "type": "string"}]}
    person = {"type": "record", "name": "Person", "namespace": "refs",
              "fields": [{"name": "name", "type": "string"},
                         {"name": "home", "type": "refs.Address"}]}
    client.register_schema("refs-address", Schema(json.dumps(address), "AVRO"))
    refs = [SchemaReference("refs.Address", "refs-address", 1)]
    person_id = client.register_schema("refs-person-value",
                                       Schema(json.dumps(person), "AVRO", refs))
    got = client.get_schema(person_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == \
        [("refs.Address", "refs-address", 1)]
    assert client.get_referenced_by("refs-address", 1) == [person_id]
    with pytest.raises(SchemaRegistryError) as referenced:
        client.delete_version("refs-address", 1)
    assert referenced.value.error_code == 42206
    # Without the reference the named type is unknown: an invalid schema.
    with pytest.raises(SchemaRegistryError) as unknown:
        client.register_schema("refs-orphan-value", Schema(json.dumps(person), "AVRO"))
    assert unknown.value.error_code == 42201
    # Confluent's Avro serializer and deserializer follow the reference.
    ser = AvroSerializer(client, Schema(json.dumps(person), "AVRO", refs),
                         conf={"auto.register.schemas": False, "use.latest.version": True})
    data = ser({"name": "kim", "home": {"city": "Bergen"}}, value_ctx("refs-person"))
    assert AvroDeserializer(client)(data, value_ctx("refs-person")) == \
        {"name": "kim", "home": {"city": "Bergen"}}
    assert Serdes.avro(registry_url=registry.url).deserialize("refs-person", data) == \
        {"name": "kim", "home": {"city": "Bergen"}}
