"""Produce and fetch through aiokafka against the embedded broker."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


def test_produce_then_consume_round_trip(broker) -> None:
    async def run() -> list[tuple[bytes | None, bytes, int, list]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(50):
                await producer.send("rt", key=f"k{i}".encode(), value=f"v{i}".encode(),
                                    timestamp_ms=1_000 + i, headers=[("n", str(i).encode())])
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition("rt", 0)])
            got = []
            while len(got) < 50:
                batch = await consumer.getmany(timeout_ms=2000)
                for records in batch.values():
                    got.extend((r.key, r.value, r.timestamp, list(r.headers)) for r in records)
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    assert got == [
        (f"k{i}".encode(), f"v{i}".encode(), 1_000 + i, [("n", str(i).encode())])
        for i in range(50)
    ]
