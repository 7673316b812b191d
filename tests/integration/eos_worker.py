"""A consume-transform-produce loop with exactly-once transactions (run as a child process).

Usage: eos_worker.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID
Reads INPUT under read_committed in GROUP, writes each value upper-cased to OUTPUT, and commits
the output together with the input offsets (send_offsets_to_transaction). The test kills it
with SIGKILL at random moments and starts it again.
"""

from __future__ import annotations

import sys

from confluent_kafka import Consumer, Producer


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20000,
    })
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 10000})
    producer.init_transactions(30)
    consumer.subscribe([source])
    print("ready", flush=True)
    while True:
        messages = [m for m in consumer.consume(200, 0.5) if not m.error()]
        if not messages:
            continue
        producer.begin_transaction()
        for message in messages:
            producer.produce(sink, key=message.key(), value=message.value().upper(),
                             partition=message.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        print("committed", len(messages), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
