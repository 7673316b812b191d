"""Consume-transform-produce under transactions survives SIGKILL of the worker: every input
appears in the output exactly once (read_committed)."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import wait_until

WORKER = Path(__file__).with_name("eos_worker.py")
RECORDS = 3000


def committed_output(bootstrap: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        ends = [consumer.get_watermark_offsets(CTopicPartition("eos-out", p), 10)[1]
                for p in range(2)]
        consumer.assign([CTopicPartition("eos-out", p, 0) for p in range(2)])
        values: list[bytes] = []
        positions = [0, 0]
        deadline = time.monotonic() + 30
        while positions != ends and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                positions = [max(pos.offset, 0) for pos in consumer.position(
                    [CTopicPartition("eos-out", p) for p in range(2)])]
                continue
            if not message.error():
                values.append(message.value())
        return values
    finally:
        consumer.close()


def group_offsets_total(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-group"})
    try:
        committed = consumer.committed([CTopicPartition("eos-in", p) for p in range(2)], 10)
        return sum(max(tp.offset, 0) for tp in committed)
    finally:
        consumer.close()


def start_worker(bootstrap: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, str(WORKER), bootstrap, "eos-in", "eos-out", "eos-group", "eos-txn"],
            stdout=out, stderr=subprocess.STDOUT,
        )


def test_worker_killed_repeatedly_still_produces_each_input_once(broker, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("eos-in", 2), NewTopic("eos-out", 2)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    expected = [f"record-{i}".encode() for i in range(RECORDS)]
    rng = random.Random(7)
    worker = start_worker(broker.bootstrap, tmp_path / "worker.log")
    try:
        for kill in range(3):
            # Feed a slice of the input, let the worker get part way, then SIGKILL it.
            for value in expected[kill * 1000 : (kill + 1) * 1000]:
                producer.produce("eos-in", key=value, value=value)
            assert producer.flush(15) == 0
            progress = group_offsets_total(broker.bootstrap)
            wait_until(lambda p=progress: group_offsets_total(broker.bootstrap) > p, 60,
                       interval=0.2, message="the worker to commit a transaction")
            time.sleep(rng.uniform(0.0, 0.3))  # a random moment, not a synchronisation
            worker.kill()
            worker.wait(10)
            worker = start_worker(broker.bootstrap, tmp_path / "worker.log")
        wait_until(lambda: group_offsets_total(broker.bootstrap) == RECORDS, 90, interval=0.5,
                   message="the worker to commit every input offset")
    finally:
        worker.kill()
        worker.wait(10)
    output = committed_output(broker.bootstrap)
    assert Counter(output) == Counter(v.upper() for v in expected)
