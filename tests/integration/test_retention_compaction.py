"""Retention, DeleteRecords and compaction observed through real clients."""

from __future__ import annotations

import asyncio
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams.broker import maintenance


def consume_all(bootstrap: str, topic: str, start: int, expected: int,
                timeout: float = 15) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ret",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, start)])
    out: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                out.append((message.offset(), message.key(), message.value()))
        return out
    finally:
        consumer.close()


def create(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, config=configs)])[topic].result(15)


def test_delete_records_moves_log_start_and_resets_readers(broker) -> None:
    create(broker.bootstrap, "trim")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("trim", key=b"k", value=str(i).encode())
    assert producer.flush(15) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (future,) = admin.delete_records([TopicPartition("trim", 0, 5)]).values()
    assert future.result(15).low_watermark == 5
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("trim", 0), 10) == (5, 10)
    finally:
        consumer.close()
    # A reader positioned below the log start gets OFFSET_OUT_OF_RANGE and resets to earliest.
    assert [offset for offset, _, _ in consume_all(broker.bootstrap, "trim", 2, 5)] == [
        5, 6, 7, 8, 9
    ]


def test_compacted_topic_keeps_the_latest_value_per_key(broker) -> None:
    create(broker.bootstrap, "latest", **{"cleanup.policy": "compact", "segment.bytes": "1024",
                                          "min.cleanable.dirty.ratio": "0.01"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(60):
        producer.produce("latest", key=f"k{i % 4}".encode(), value=f"v{i}".encode())
        producer.flush(15)  # one batch each, so segments roll at 1 KiB
    producer.produce("latest", key=b"k0", value=None)  # tombstone
    assert producer.flush(15) == 0
    plog = broker.broker.topics.partition("latest", 0)
    plog.roll()  # close the active segment so all of it is cleanable
    assert broker.loop is not None
    asyncio.run_coroutine_threadsafe(maintenance.run_once(broker.broker), broker.loop).result(30)
    records = consume_all(broker.bootstrap, "latest", 0, 4)
    assert [(k, v) for _, k, v in records] == [
        (b"k1", b"v57"), (b"k2", b"v58"), (b"k3", b"v59"), (b"k0", None)
    ]
    assert [offset for offset, _, _ in records] == [57, 58, 59, 60]


def test_keyless_record_on_compacted_topic_is_rejected(broker) -> None:
    create(broker.bootstrap, "keyed-only", **{"cleanup.policy": "compact"})
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    producer.produce("keyed-only", value=b"no key",
                     on_delivery=lambda err, msg: errors.append(err.name() if err else "ok"))
    producer.flush(15)
    assert errors == ["INVALID_RECORD"]
