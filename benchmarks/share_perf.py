"""Share-group (KIP-932) consumption rate: our broker against Apache Kafka 4.4, same machine.

    .venv/bin/python benchmarks/share_perf.py [--records 50000] [--size 100] [--rounds 3]
                                              [--consumers 1,4] [--kafka]

One topic with 4 partitions is filled first (not measured); the share group is set to
``share.auto.offset.reset=earliest`` (a GROUP config, IncrementalAlterConfigs); then N
confluent-kafka ShareConsumer processes (implicit acknowledgement) join and drain it together.
A row is records/s from the consumers' start until every record was received, median of
--rounds runs, each run on a fresh topic and group; the ratio column is ours / Kafka's. Our
broker runs as `streams broker start` in a child process (each acknowledgement is fsynced to
__share_group_state before the answer); Kafka as tests/reference/kafka.py starts it (its
default: no fsync per write). Record locks are the defaults (30 s) on both.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from helpers import BrokerProcess, create_topics, free_port, wait_until  # noqa: E402

PARTITIONS = 4


def _consume(bootstrap: str, group: str, topic: str, done: Any, count: Any) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    while not done.is_set():
        got = sum(1 for m in consumer.poll(0.2) if m.error() is None)
        if got:
            with count.get_lock():
                count.value += got
    consumer.close()


def _fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.size": 256 * 1024})
    payload = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush()


def _earliest(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the answer is in
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def one_run(bootstrap: str, consumers: int, records: int, size: int, tag: str) -> float:
    topic = group = f"share-{tag}"
    create_topics(bootstrap, {topic: PARTITIONS})
    _fill(bootstrap, topic, records, size)
    _earliest(bootstrap, group)
    ctx = mp.get_context("spawn")
    done, count = ctx.Event(), ctx.Value("q", 0)
    procs = [ctx.Process(target=_consume, args=(bootstrap, group, topic, done, count))
             for _ in range(consumers)]
    start = time.monotonic()
    for proc in procs:
        proc.start()
    try:
        wait_until(lambda: count.value >= records, 900, interval=0.02,
                   message=f"{records} records through {consumers} share consumer(s)")
        elapsed = time.monotonic() - start
    finally:
        done.set()
        for proc in procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()
    return records / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--consumers", default="1,4", help="comma list of consumer counts")
    parser.add_argument("--kafka", action="store_true", help="also Apache Kafka 4.4")
    args = parser.parse_args()
    counts = [int(c) for c in args.consumers.split(",")]
    rates: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        brokers: list[tuple[str, Any]] = [("ours", BrokerProcess(Path(tmp) / "ours").start())]
        if args.kafka:
            from reference.kafka import KafkaNode

            brokers.append(("kafka", KafkaNode(free_port(), Path(tmp) / "kafka").start()))
        try:
            for consumers in counts:
                for name, broker in brokers:
                    runs = [one_run(broker.bootstrap, consumers, args.records, args.size,
                                    f"{name}-{consumers}-{r}") for r in range(args.rounds)]
                    rates[(name, consumers)] = statistics.median(runs)
                    print(f"  {name} {consumers} consumer(s): "
                          + ", ".join(f"{r:.0f}" for r in runs) + " records/s", flush=True)
        finally:
            for _name, broker in brokers:
                broker.stop()
    print(f"share-group consumption, {args.records} records of {args.size} B, {PARTITIONS} "
          f"partitions, implicit acknowledgement, median of {args.rounds}")
    print(f"{'consumers':>9} {'ours rec/s':>11} {'kafka rec/s':>12} {'ours/kafka':>11}")
    for consumers in counts:
        ours = rates[("ours", consumers)]
        kafka = rates.get(("kafka", consumers))
        ratio = f"{ours / kafka:.2f}" if kafka else "-"
        print(f"{consumers:>9} {ours:>11.0f} {kafka or 0:>12.0f} {ratio:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
