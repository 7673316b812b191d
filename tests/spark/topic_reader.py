"""Reading a whole topic back in the Spark tests, with librdkafka as a user's checker would."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CTopicPartition

Row = tuple[int, int, bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed",
               **extra: str) -> list[Row]:
    """Every record of ``topic`` as (partition, offset, key, value, timestamp ms, headers), read
    with librdkafka until each partition reports its end (past any transaction markers)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": True, **extra})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([CTopicPartition(topic, p, 0) for p in partitions])
        rows: list[Row] = []
        done: set[int] = set()
        deadline = time.monotonic() + 60
        while len(done) < len(partitions):
            assert time.monotonic() < deadline, f"reading {topic}: no end of {done} in 60 s"
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    done.add(message.partition())
                    continue
                raise AssertionError(message.error())
            done.discard(message.partition())
            rows.append((message.partition(), message.offset(), message.key(), message.value(),
                         message.timestamp()[1], list(message.headers() or [])))
        return rows
    finally:
        consumer.close()
