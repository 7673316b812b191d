"""SIGKILL the broker process mid-stream; every acknowledged record must survive the restart.

A confluent-kafka producer with acks=all keeps sending while the broker is killed, then keeps
going against the restarted broker (same data directory, same port). Afterwards every
acknowledged (partition, offset, value) must be readable exactly there, and each partition's
offsets must run from 0 to the high watermark without a gap.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import BrokerProcess, wait_until

PARTITIONS = 3
MAX_UNACKED = 300


class Stream:
    """A producer that records every delivery report."""

    def __init__(self, bootstrap: str, idempotent: bool) -> None:
        self.producer = Producer({
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 2,
            "partitioner": "murmur2_random",
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
        })
        self.sent = 0
        self.acked: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.append((msg.partition(), msg.offset(), msg.value()))

    def send(self, count: int, bounded: bool = True) -> None:
        """Send ``count`` more records; ``bounded`` keeps at most MAX_UNACKED unreported."""
        target = self.sent + count
        while self.sent < target:
            if bounded and self.sent - len(self.acked) - len(self.errors) >= MAX_UNACKED:
                self.producer.poll(0.01)
                continue
            value = f"{self.sent:08d}".encode()
            self.producer.produce("crash", key=str(self.sent % 17).encode(), value=value,
                                  on_delivery=self._on_delivery)
            self.sent += 1
            self.producer.poll(0)


def read_everything(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-reader",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition("crash", p), timeout=10)
                for p in range(PARTITIONS)}
        for low, _high in ends.values():
            assert low == 0
        consumer.assign([TopicPartition("crash", p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}

        def complete() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got[msg.partition()].append((msg.offset(), msg.value()))
            return all(len(got[p]) >= ends[p][1] for p in range(PARTITIONS))

        wait_until(complete, 60, interval=0, message="every stored record")
        return got
    finally:
        consumer.close()


@pytest.mark.slow
@pytest.mark.parametrize("idempotent", [False, True], ids=["acks-all", "idempotent"])
def test_acknowledged_records_survive_sigkill(tmp_path: Path, idempotent: bool) -> None:
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir).start()
    restarted: BrokerProcess | None = None
    stream: Stream | None = None
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("crash", PARTITIONS, 1)])["crash"].result(15)

        stream = Stream(broker.bootstrap, idempotent)
        acked_before_kill = 1500
        while len(stream.acked) < acked_before_kill:
            stream.send(100)
        broker.kill()  # mid-stream: up to MAX_UNACKED records are in flight or queued
        in_flight_at_kill = stream.sent - len(stream.acked)
        stream.send(200, bounded=False)  # queued in the client while the broker is down

        restarted = BrokerProcess(data_dir, port=broker.port).start()
        stream.send(1000)
        deadline = time.monotonic() + 90
        while stream.producer.flush(1) and time.monotonic() < deadline:
            pass
        assert stream.producer.flush(0) == 0, "producer could not deliver after the restart"
        assert stream.errors == []
        assert len(stream.acked) == stream.sent
        assert in_flight_at_kill > 0

        got = read_everything(restarted.bootstrap)
        stored = {p: dict(records) for p, records in got.items()}
        for p, records in got.items():
            offsets = [o for o, _ in records]
            assert offsets == list(range(len(offsets))), f"gap or reorder in partition {p}"
        for partition, offset, value in stream.acked:
            assert stored[partition].get(offset) == value, (partition, offset, value)
        # Within a partition, acknowledged records keep their send order.
        for p in range(PARTITIONS):
            acked_offsets = sorted((o, v) for q, o, v in stream.acked if q == p)
            values = [v for _, v in acked_offsets]
            assert values == sorted(values)
        if idempotent:
            # The idempotent producer's retries across the restart were deduplicated.
            everything = [v for records in got.values() for _, v in records]
            assert sorted(everything) == sorted(v for _, _, v in stream.acked)
    finally:
        if stream is not None:
            stream.producer.purge()
            stream.producer.flush(0)
        broker.stop()
        if restarted is not None:
            restarted.stop()
