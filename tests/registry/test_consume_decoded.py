"""`streams consume` prints what people can read: Avro, Protobuf and JSON Schema values through
the registry (as JSON), and a hint naming the deserializer when values are not text."""

from __future__ import annotations

import struct
import subprocess
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from .protos import message_classes

USER = {"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Order { string id = 1; int64 qty = 2; }\n'


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", "consume", topic,
                           "--from-beginning", "--max-messages", str(count),
                           "--bootstrap-servers", bootstrap, *extra],
                          capture_output=True, timeout=120)


def test_registry_values_print_as_json(registry_broker, registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    avro = AvroSerializer(client, __import__("json").dumps(USER))
    users = [avro({"name": n, "age": a}, SerializationContext("people", MessageField.VALUE))
             for n, a in (("ada", 36), ("bob", 7))]
    produce(registry_broker.bootstrap, "people", users)
    done = consume(registry_broker.bootstrap, "people", 2, "--value-deserializer", "avro",
                   "--registry-url", registry.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == ['{"name":"ada","age":36}',
                                                 '{"name":"bob","age":7}']

    order = message_classes(PROTO, "shop/order.proto")["shop.Order"]
    proto = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    produce(registry_broker.bootstrap, "orders-pb",
            [proto(order(id="o-1", qty=3), SerializationContext("orders-pb", MessageField.VALUE))])
    done = consume(registry_broker.bootstrap, "orders-pb", 1, "--value-deserializer",
                   "protobuf", "--registry-url", registry.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == ['{"id":"o-1","qty":3}']

    # Without --registry-url: one line saying what is missing.
    done = consume(registry_broker.bootstrap, "people", 1, "--value-deserializer", "avro")
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "streams consume: --value-deserializer avro needs --registry-url URL"]


def test_values_that_are_not_text_get_a_hint(registry_broker) -> None:
    produce(registry_broker.bootstrap, "counts-long", [struct.pack(">q", n) for n in (3, 1024)])
    done = consume(registry_broker.bootstrap, "counts-long", 2)
    assert done.returncode == 0, done.stderr
    hints = [line for line in done.stderr.decode().splitlines() if "not text" in line]
    assert hints == ["streams consume: the values of counts-long are not text: 8 bytes "
                     "(00 00 00 00 00 00 00 03): try long (or double) (--value-deserializer)"]
    done = consume(registry_broker.bootstrap, "counts-long", 2, "--value-deserializer", "long")
    assert done.stdout.decode().splitlines() == ["3", "1024"]
    assert "not text" not in done.stderr.decode()
