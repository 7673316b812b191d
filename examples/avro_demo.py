"""Avro with the schema registry, end to end, on the bundled broker and the bundled registry.

    python examples/avro_demo.py [--orders N] [--data-dir DIR]

1. starts the bundled broker and a schema registry (``streams registry start`` does the same
   from a shell) whose schemas live in the compacted ``_schemas`` topic;
2. produces N orders as Avro with ``Serdes.avro`` (the schema is registered on first use;
   each record carries only its 5-byte header: magic byte and schema id);
3. evolves the schema: version 2 adds a field with a default (BACKWARD compatible), and half
   the orders are written with it; an incompatible change is refused with the field named;
4. runs a topology that reads both versions (generic records are dicts), prices each order,
   and writes Avro whose schema comes from a pydantic model;
5. reads the result back and checks every order came through.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))

from demo_support import demo_root  # noqa: E402

from streams import KafkaStreams, Serdes, StreamsBuilder  # noqa: E402
from streams.registry import RegistryError, SchemaRegistry, SchemaRegistryClient  # noqa: E402
from streams.runtime.launcher import BundledBroker  # noqa: E402

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"},
    {"name": "item", "type": "string"},
    {"name": "quantity", "type": "int"},
]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"],
                                   {"name": "coupon", "type": ["null", "string"],
                                    "default": None}]}
PRICES = {"tea": 3.5, "cake": 4.25, "soup": 6.0}


class PricedOrder(BaseModel):
    """The output record; its Avro schema is derived from the model."""

    id: str
    total: float
    discounted: bool = False


def price(order: dict) -> PricedOrder:
    total = PRICES[order["item"]] * order["quantity"]
    coupon = order.get("coupon")  # None for v1 records: the v2 reader schema's default
    return PricedOrder(id=order["id"], total=total * 0.9 if coupon else total,
                       discounted=bool(coupon))


def topology(registry_url: str):
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream("orders", key_serde=s,
                    value_serde=Serdes.avro(ORDER_V2, registry_url=registry_url))
        .map_values(price)
        .to("priced-orders", key_serde=s,
            value_serde=Serdes.avro(PricedOrder, registry_url=registry_url)))
    return builder.build()


async def produce(bootstrap: str, registry_url: str, n: int) -> None:
    v1 = Serdes.avro(ORDER_V1, registry_url=registry_url)
    v2 = Serdes.avro(ORDER_V2, registry_url=registry_url)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(n):
            item = list(PRICES)[i % len(PRICES)]
            order = {"id": f"o{i}", "item": item, "quantity": 1 + i % 4}
            if i < n // 2:
                value = v1.serialize("orders", order)
            else:
                value = v2.serialize("orders", {**order, "coupon": "SAVE10" if i % 2 else None})
            await producer.send("orders", value, key=order["id"].encode())
        await producer.flush()
    finally:
        await producer.stop()


async def read_output(bootstrap: str, registry_url: str, n: int,
                      timeout: float = 60) -> dict[str, PricedOrder]:
    serde = Serdes.avro(PricedOrder, registry_url=registry_url)
    consumer = AIOKafkaConsumer("priced-orders", bootstrap_servers=bootstrap,
                                auto_offset_reset="earliest", isolation_level="read_committed")
    await consumer.start()
    out: dict[str, PricedOrder] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for r in records:
                    order = serde.deserialize("priced-orders", r.value)
                    out[order.id] = order
    finally:
        await consumer.stop()
    return out


async def create_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("orders", 2, 1), NewTopic("priced-orders", 2, 1)])
    finally:
        await admin.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    with demo_root(args.data_dir, "avro-demo-") as root:
        code = run(args, root)
        if code:
            raise SystemExit(code)  # keeps the data directory for a look at the logs
    return 0


def run(args: argparse.Namespace, root: Path) -> int:
    broker = BundledBroker(root / "broker").start()
    streams = None
    try:
        with SchemaRegistry(broker.bootstrap, port=0) as registry:
            print(f"broker on {broker.bootstrap}, schema registry on {registry.url}")
            asyncio.run(create_topics(broker.bootstrap))
            asyncio.run(produce(broker.bootstrap, registry.url, args.orders))
            client = SchemaRegistryClient(registry.url)
            for version in client.get_versions("orders-value"):
                registered = client.get_version("orders-value", version)
                print(f"subject orders-value version {version}: schema id {registered.id}")
            broken = {**ORDER_V2, "fields": [*ORDER_V2["fields"],
                                             {"name": "table", "type": "int"}]}
            try:
                client.register("orders-value", json.dumps(broken))
            except RegistryError as exc:
                print(f"incompatible change refused ({exc.status}): {exc.message}")
            streams = KafkaStreams(topology(registry.url), {
                "application.id": "avro-demo", "bootstrap.servers": broker.bootstrap,
                "processing.guarantee": "exactly_once_v2",
                "state.dir": str(root / "state")})
            streams.start()
            priced = asyncio.run(read_output(broker.bootstrap, registry.url, args.orders))
            streams.close(timeout=30)
            streams = None
            discounted = sum(o.discounted for o in priced.values())
            revenue = sum(o.total for o in priced.values())
            print(f"{len(priced):,}/{args.orders:,} orders priced, {discounted} with a coupon, "
                  f"revenue {revenue:,.2f}")
            print("output schema (from the pydantic model):",
                  client.get_latest_version("priced-orders-value").schema)
            if len(priced) != args.orders:
                print("MISSING ORDERS", file=sys.stderr)
                return 1
            print("every order came through")
    finally:
        if streams is not None:
            streams.close(timeout=30)
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
