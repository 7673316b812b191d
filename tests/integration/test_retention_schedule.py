"""The retention pass runs as Kafka's LogManager schedules it: first log.initial.task.delay.ms
after start (30 s by default), then every log.retention.check.interval.ms (5 minutes). Segments
that expired while the broker was down are deleted soon after a restart, not 5 minutes later."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from helpers import EmbeddedBroker, wait_until

TOPIC = "expiring"
OLD_TS = 1_000_000_000_000  # 2001: far beyond any retention


def _fill(bootstrap: str) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs={
                "segment.bytes": "1024", "retention.ms": "60000"})])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        await producer.start()
        try:
            for i in range(40):  # several closed segments of old records
                await producer.send_and_wait(TOPIC, b"x" * 200, timestamp_ms=OLD_TS + i)
        finally:
            await producer.stop()
    asyncio.run(run())


def _log_start(bootstrap: str) -> int:
    async def run() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            tp = TopicPartition(TOPIC, 0)
            return (await consumer.beginning_offsets([tp]))[tp]
        finally:
            await consumer.stop()
    return asyncio.run(run())


def test_expired_segments_go_after_the_initial_delay_not_the_check_interval(tmp_path) -> None:
    data = tmp_path / "broker"
    first = EmbeddedBroker(data, log_initial_task_delay_ms=3_600_000).start()
    try:
        _fill(first.bootstrap)
        assert _log_start(first.bootstrap) == 0  # no pass has run yet
    finally:
        first.stop()
    # Restarted with Kafka's schedule shortened: the first pass comes after 200 ms although
    # the check interval (the default 5 minutes) is far longer than this test may wait.
    second = EmbeddedBroker(data, log_initial_task_delay_ms=200).start()
    try:
        assert second.broker.config.log_retention_check_interval_ms == 300_000
        wait_until(lambda: _log_start(second.bootstrap) > 0, timeout=30,
                   message="the expired segments deleted by the first retention pass")
    finally:
        second.stop()
