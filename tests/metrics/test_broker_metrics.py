"""The bundled broker scraped after real clients produced and partly consumed: topic
throughput, requests, log sizes, consumer lag from the broker's committed offsets."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from helpers import EmbeddedBroker, create_topics, wait_until

from streams.metrics import MetricName

from .scrape import health, scrape, value

RECORDS = 10
CONSUMED = 6


async def produce_and_partly_consume(bootstrap: str) -> int:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    old = int(time.time() * 1000) - 60_000  # a minute ago: lag_seconds must see it
    try:
        for i in range(RECORDS):
            await producer.send_and_wait("orders", f"v{i}".encode(), key=b"k", partition=0,
                                         timestamp_ms=old + i)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="billing",
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition("orders", 0)
        consumer.subscribe(["orders"])
        got: list = []
        while len(got) < CONSUMED:
            batch = await consumer.getmany(timeout_ms=500, max_records=CONSUMED - len(got))
            for records in batch.values():
                got.extend(records)
        await consumer.commit({tp: got[-1].offset + 1})
        return sum(len(r.value) for r in got)
    finally:
        await consumer.stop()


def test_broker_metrics_match_what_clients_did(tmp_path) -> None:
    broker = EmbeddedBroker(tmp_path / "b", metrics_listener="http://127.0.0.1:0").start()
    try:
        url = broker.broker.metrics.url
        status, body = health(url)
        assert status == 200 and body["status"] == "UP"
        create_topics(broker.bootstrap, {"orders": 2})
        asyncio.run(produce_and_partly_consume(broker.bootstrap))
        m = scrape(url)
        topic = "kafka_server_brokertopicmetrics_"
        assert value(m, topic + "messagesin_total", topic="orders") == RECORDS
        assert value(m, topic + "bytesin_total", topic="orders") > 10 * 2
        assert value(m, topic + "bytesout_total", topic="orders") > 0
        requests = "kafka_network_requestmetrics_"
        assert value(m, requests + "requests_total", request="Produce") == RECORDS
        assert value(m, requests + "requests_total", request="OffsetCommit") == 1
        assert value(m, requests + "totaltime_seconds_count", request="Produce") == RECORDS
        assert value(m, requests + "totaltime_seconds_bucket", request="Produce",
                     le="+Inf") == RECORDS
        assert value(m, "kafka_log_log_logendoffset", topic="orders", partition=0) == RECORDS
        assert value(m, "kafka_log_log_logendoffset", topic="orders", partition=1) == 0
        assert value(m, "kafka_log_log_size", topic="orders", partition=0) > 0
        assert value(m, "kafka_server_replicamanager_partitioncount") >= 2
        assert value(m, "kafka_server_socketservermetrics_connection_count") >= 0
        group = {"group": "billing", "topic": "orders", "partition": 0}
        assert value(m, "kafka_consumergroup_lag", **group) == RECORDS - CONSUMED
        assert 59 < value(m, "kafka_consumergroup_lag_seconds", **group) < 3600
        assert value(m, "kafka_consumergroup_members", group="billing") == 0  # it left
        values = broker.call(broker.broker.metrics.registry.metrics)
        assert values[MetricName.of("consumergroup", "lag", group)] == RECORDS - CONSUMED
    finally:
        broker.stop()


def test_consumer_group_members_while_joined(tmp_path) -> None:
    broker = EmbeddedBroker(tmp_path / "b", metrics_listener="http://127.0.0.1:0").start()

    async def joined() -> None:
        consumer = AIOKafkaConsumer("t", bootstrap_servers=broker.bootstrap, group_id="g1")
        await consumer.start()
        try:
            await consumer.getmany(timeout_ms=200)
            wait = time.monotonic() + 20
            while time.monotonic() < wait:
                m = await asyncio.to_thread(scrape, broker.broker.metrics.url)
                if value(m, "kafka_consumergroup_members", group="g1") == 1:
                    return
                await asyncio.sleep(0.1)
            raise AssertionError("the group never showed one member")
        finally:
            await consumer.stop()

    try:
        create_topics(broker.bootstrap, {"t": 1})
        asyncio.run(joined())
        wait_until(lambda: value(scrape(broker.broker.metrics.url),
                                 "kafka_consumergroup_members", group="g1") == 0)
    finally:
        broker.stop()
