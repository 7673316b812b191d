"""For group tests that consume while records flow: a producer thread writing numbered records
round-robin over a topic's partitions, consumers that note what they see and commit each
message, and the group's committed offsets next to the partitions' ends."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


class FlowingRecords:
    """Records ``0, 1, 2, ...`` written by ``writer`` until ``stop_producing`` is set; what the
    consumers saw, and the errors their commits met (a commit racing a rebalance may be fenced)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, flush_every: int) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.flush_every = flush_every
        self.produced: list[int] = []
        self.seen: set[int] = set()
        self.commit_errors: list[str] = []
        self.lock = threading.Lock()
        self.stop_producing = threading.Event()
        self.writer = threading.Thread(target=self._produce)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        i = 0
        while not self.stop_producing.is_set():
            producer.produce(self.topic, str(i).encode(), partition=i % self.partitions)
            self.produced.append(i)
            i += 1
            if i % self.flush_every == 0:
                producer.flush()
                time.sleep(0.01)  # pacing the load, not synchronisation
        producer.flush()

    def consume(self, consumer: Consumer, until: threading.Event) -> None:
        """Poll, note and commit each message until ``until`` is set; then close."""
        while not until.is_set():
            m = consumer.poll(0.1)
            if m is None or m.error():
                continue
            with self.lock:
                self.seen.add(int(m.value()))
            try:
                consumer.commit(message=m, asynchronous=False)
            except KafkaException as exc:
                self.commit_errors.append(str(exc))
        consumer.close()

    def committed_and_ends(self, group: str) -> tuple[list[int], list[int]]:
        """The group's committed offset and the end offset of each partition."""
        check = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        try:
            partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
            committed = check.committed(partitions, timeout=10)
            ends = [check.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
        finally:
            check.close()
        return [tp.offset for tp in committed], ends
