"""The Spark source's driver-side planning client (streams.kafka.fetch.OffsetClient), without a
SparkSession: planning calls from a synchronous caller, answered by one consumer living on a
LoopThread, and a clean close."""

from __future__ import annotations

import pickle
import threading

from aiokafka import AIOKafkaProducer
from helpers import create_topics

from streams.spark.kafka_read import offset_client
from streams.spark.source_offsets import ClientSettings


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    import asyncio

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(count):
                await producer.send_and_wait(topic, str(i).encode(), partition=partition)
        finally:
            await producer.stop()

    asyncio.run(run())


def _offset_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "streams-spark-offsets"]


def test_planning_calls_share_one_client_and_close_stops_its_thread(broker) -> None:
    create_topics(broker.bootstrap, {"plan": 2})
    _produce(broker.bootstrap, "plan", 1, 3)
    before = len(_offset_threads())
    client = offset_client(ClientSettings(broker.bootstrap, isolation_level="read_uncommitted"))
    with client:
        assert client.cluster()["plan"] == [0, 1]
        assert client.earliest([("plan", 0), ("plan", 1)]) == {("plan", 0): 0, ("plan", 1): 0}
        assert client.latest([("plan", 0), ("plan", 1)]) == {("plan", 0): 0, ("plan", 1): 3}
        assert client.latest([]) == {}
        assert len(_offset_threads()) == before + 1  # every call ran on the same loop thread
    assert len(_offset_threads()) == before
    client.close()  # closing twice is harmless


def test_a_pickled_client_starts_anew_and_a_closed_one_restarts(broker) -> None:
    create_topics(broker.bootstrap, {"again": 1})
    client = offset_client(ClientSettings(broker.bootstrap))
    try:
        assert client.cluster()["again"] == [0]
        copy = pickle.loads(pickle.dumps(client))
        with copy:
            assert copy.latest([("again", 0)]) == {("again", 0): 0}
        client.close()
        assert client.cluster()["again"] == [0]  # the next call starts a new loop and consumer
    finally:
        client.close()

