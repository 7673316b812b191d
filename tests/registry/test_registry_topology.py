"""A topology that reads Avro written by Confluent's AvroSerializer and writes Avro that
Confluent's AvroDeserializer reads: in the TopologyTestDriver, and in the real runtime on the
bundled broker with confluent-kafka's producer and consumer at the edges."""

from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from helpers import create_topics

from streams import KafkaStreams, Serdes, StreamsBuilder
from streams.testing import TopologyTestDriver

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "quantity", "type": "int"},
    {"name": "unit_price", "type": "double"},
]}
PRICED = {"type": "record", "name": "PricedOrder", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "total", "type": "double"},
    {"name": "bulk", "type": "boolean", "default": False},
]}
ORDERS = [{"id": f"o{i}", "quantity": i, "unit_price": 2.5} for i in range(1, 8)]


def expected() -> list[dict]:
    return [{"id": o["id"], "total": o["quantity"] * o["unit_price"], "bulk": o["quantity"] >= 5}
            for o in ORDERS if o["quantity"] != 3]


def topology(registry_url: str, source: str, sink: str):
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream(source, key_serde=s, value_serde=Serdes.avro(registry_url=registry_url))
        .filter(lambda _k, order: order["quantity"] != 3)
        .map_values(lambda order: {"id": order["id"],
                                   "total": order["quantity"] * order["unit_price"],
                                   "bulk": order["quantity"] >= 5})
        .to(sink, key_serde=s, value_serde=Serdes.avro(PRICED, registry_url=registry_url)))
    return builder.build()


def test_topology_test_driver_with_confluent_avro(registry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    ser = AvroSerializer(client, json.dumps(ORDER))
    de = AvroDeserializer(client)
    with TopologyTestDriver(topology(registry.url, "orders-ttd", "priced-ttd")) as driver:
        source = driver.create_input_topic("orders-ttd", Serdes.string(), Serdes.bytes())
        sink = driver.create_output_topic("priced-ttd", Serdes.string(), Serdes.bytes())
        for order in ORDERS:
            source.pipe_input(order["id"], ser(order, SerializationContext(
                "orders-ttd", MessageField.VALUE)))
        out = [de(r.value, SerializationContext("priced-ttd", MessageField.VALUE))
               for r in sink.read_records_to_list()]
    assert out == expected()
    assert json.loads(client.get_latest_version("priced-ttd-value").schema.schema_str) == PRICED


def test_runtime_with_confluent_producer_and_consumer(registry, registry_broker, tmp_path) -> None:
    bootstrap = registry_broker.bootstrap
    create_topics(bootstrap, {"orders-rt": 2, "priced-rt": 2})
    client = SchemaRegistryClient({"url": registry.url})
    ser = AvroSerializer(client, json.dumps(ORDER))
    producer = Producer({"bootstrap.servers": bootstrap})
    for order in ORDERS:
        producer.produce("orders-rt", key=order["id"].encode(),
                         value=ser(order, SerializationContext("orders-rt", MessageField.VALUE)))
    assert producer.flush(30) == 0

    streams = KafkaStreams(topology(registry.url, "orders-rt", "priced-rt"), {
        "application.id": "avro-app", "bootstrap.servers": bootstrap,
        "commit.interval.ms": 100, "state.dir": str(tmp_path / "state")})
    streams.start()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-check",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["priced-rt"])
        de = AvroDeserializer(client)
        got: list[dict] = []
        deadline = time.monotonic() + 60
        while len(got) < len(expected()) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            got.append(de(msg.value(), SerializationContext("priced-rt", MessageField.VALUE)))
        assert sorted(got, key=lambda o: o["id"]) == expected()
    finally:
        consumer.close()
        assert streams.close(timeout=30)


def test_table_regrouping_with_avro_values(registry) -> None:
    """A table of Avro values re-grouped (its repartition topic carries old/new Avro halves,
    serialized without a topic: the record name is their subject) and summed into an Avro
    aggregate store."""
    from streams.dsl.materialized import Materialized

    account = {"type": "record", "name": "Account", "namespace": "bank", "fields": [
        {"name": "branch", "type": "string"}, {"name": "balance", "type": "long"}]}
    total = {"type": "record", "name": "BranchTotal", "namespace": "bank", "fields": [
        {"name": "sum", "type": "long"}]}
    s = Serdes.string()
    value = Serdes.avro(account, registry_url=registry.url)
    builder = StreamsBuilder()
    (builder.table("accounts", key_serde=s, value_serde=value)
        .group_by(lambda k, v: (v["branch"], v), key_serde=s, value_serde=value)
        .aggregate(lambda: {"sum": 0},
                   lambda _k, v, agg: {"sum": agg["sum"] + v["balance"]},
                   lambda _k, v, agg: {"sum": agg["sum"] - v["balance"]},
                   Materialized("totals", key_serde=s,
                                value_serde=Serdes.avro(total, registry_url=registry.url)))
        .to_stream().to("branch-totals", key_serde=s,
                        value_serde=Serdes.avro(total, registry_url=registry.url)))
    with TopologyTestDriver(builder.build()) as driver:
        source = driver.create_input_topic("accounts", s, value)
        sink = driver.create_output_topic("branch-totals", s, Serdes.avro(
            registry_url=registry.url))
        source.pipe_input("a1", {"branch": "north", "balance": 10})
        source.pipe_input("a2", {"branch": "north", "balance": 5})
        source.pipe_input("a1", {"branch": "south", "balance": 10})  # moves branch
        latest = {r.key: r.value for r in sink.read_records_to_list()}
        store = driver.get_key_value_store("totals")
        assert store.get("north") == {"sum": 5} and store.get("south") == {"sum": 10}
    assert latest == {"north": {"sum": 5}, "south": {"sum": 10}}
