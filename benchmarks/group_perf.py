"""Group consumption rates: our broker against Apache Kafka 4.4, same machine, one run.

    .venv/bin/python benchmarks/group_perf.py [--records 50000] [--size 100] [--rounds 3]
        [--rows share:1,share:4,consumer:4,classic:4] [--kafka]

The three group protocols of Kafka 4 on the same load, so their rows compare:

* ``share:N``: a KIP-932 share group of N confluent-kafka ``ShareConsumer`` processes
  (implicit acknowledgement; the group is set to ``share.auto.offset.reset=earliest``, a GROUP
  config, through IncrementalAlterConfigs);
* ``consumer:N``: a KIP-848 consumer group (``group.protocol=consumer``, the broker's default
  server-side assignor) of N confluent-kafka ``Consumer`` processes;
* ``classic:N``: the same N consumers with ``group.protocol=classic`` (JoinGroup/SyncGroup,
  librdkafka's default range,roundrobin assignors): the row the KIP-848 one is read against.

One topic with 4 partitions is filled first (not measured); then the N consumer processes start
and drain it together. A row is records/s from the consumers' start until every record was
received (the join and the first assignment are inside the clock), median of --rounds runs,
each on a fresh topic and group; ``join s`` is the median time from the start to the first
record. The ratio column is ours / Kafka's. Both brokers run in child processes at once, on the
same machine: ours as ``streams broker start`` (each share acknowledgement fsynced to
__share_group_state before the answer), Kafka as tests/reference/kafka.py starts it (no fsync
per write, group.initial.rebalance.delay.ms 0 on both). Everything else is each broker's
default; in particular Kafka 4.4 batches KIP-848 assignment runs
(``group.consumer.assignment.interval.ms`` 1000, KIP-1263) where ours assigns at once.

These rows live here rather than in broker_perf.py: broker_perf measures single-client
produce/fetch loads against several brokers (tansu included, which has no share or KIP-848
groups); group consumption needs a process per member, a GROUP config and the join in the clock.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
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
KINDS = ("share", "consumer", "classic")


def _consume(kind: str, bootstrap: str, group: str, topic: str, done: Any, count: Any,
             first: Any) -> None:
    """One group member in its own process: count what it receives until told to stop."""
    from confluent_kafka import Consumer, ShareConsumer

    conf = {"bootstrap.servers": bootstrap, "group.id": group}
    if kind == "share":
        share = ShareConsumer(conf)
        share.subscribe([topic])

        def poll() -> list[Any]:
            return share.poll(0.2)

        close = share.close
    else:
        conf.update({"group.protocol": kind, "auto.offset.reset": "earliest"})
        consumer = Consumer(conf)
        consumer.subscribe([topic])

        def poll() -> list[Any]:
            return consumer.consume(1000, 0.2)

        close = consumer.close
    while not done.is_set():
        got = sum(1 for m in poll() if m.error() is None)
        if got:
            with count.get_lock():
                if not count.value:
                    first.value = time.monotonic()
                count.value += got
    close()


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


def one_run(bootstrap: str, kind: str, consumers: int, records: int, size: int,
            tag: str) -> tuple[float, float]:
    """(records/s, seconds to the first record) of one drain of a fresh topic."""
    topic = group = f"{kind}-{tag}"
    create_topics(bootstrap, {topic: PARTITIONS})
    _fill(bootstrap, topic, records, size)
    if kind == "share":
        _earliest(bootstrap, group)
    ctx = mp.get_context("spawn")
    done, count, first = ctx.Event(), ctx.Value("q", 0), ctx.Value("d", 0.0)
    procs = [ctx.Process(target=_consume,
                         args=(kind, bootstrap, group, topic, done, count, first))
             for _ in range(consumers)]
    start = time.monotonic()
    for proc in procs:
        proc.start()
    try:
        wait_until(lambda: count.value >= records, 900, interval=0.02,
                   message=f"{records} records through {consumers} {kind} consumer(s)")
        elapsed = time.monotonic() - start
    finally:
        done.set()
        for proc in procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()
    return records / elapsed, first.value - start


def parse_rows(spec: str) -> list[tuple[str, int]]:
    rows = []
    for item in spec.split(","):
        kind, _, n = item.strip().partition(":")
        if kind not in KINDS or not n.isdigit() or int(n) < 1:
            raise SystemExit(f"--rows: '{item}' is not KIND:N with KIND one of "
                             f"{', '.join(KINDS)} and N >= 1")
        rows.append((kind, int(n)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", default="share:1,share:4,consumer:4,classic:4",
                        help="comma list of KIND:CONSUMERS, KIND share, consumer or classic")
    parser.add_argument("--kafka", action="store_true", help="also Apache Kafka 4.4")
    args = parser.parse_args()
    rows = parse_rows(args.rows)
    rates: dict[tuple[str, str, int], tuple[float, float]] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        # Kafka's broker default group.initial.rebalance.delay.ms is 3000; tests/reference/
        # kafka.py starts Kafka with 0, so ours gets 0 too (like for like).
        properties = Path(tmp) / "ours.properties"
        properties.write_text("group.initial.rebalance.delay.ms=0\n")
        ours = BrokerProcess(Path(tmp) / "ours", extra=["--config", str(properties)])
        brokers: list[tuple[str, Any]] = [("ours", ours.start())]
        if args.kafka:
            from kafka_node import SERVER_JVM_OPTS  # kafka-server-start.sh's, like for like
            from reference.kafka import KafkaNode

            brokers.append(("kafka", KafkaNode(free_port(), Path(tmp) / "kafka",
                                               java_opts=SERVER_JVM_OPTS).start()))
        try:
            for kind, consumers in rows:
                for name, broker in brokers:
                    runs = [one_run(broker.bootstrap, kind, consumers, args.records, args.size,
                                    f"{name}-{consumers}-{r}") for r in range(args.rounds)]
                    rates[(name, kind, consumers)] = (
                        statistics.median(r for r, _ in runs),
                        statistics.median(j for _, j in runs))
                    print(f"  {name} {kind}:{consumers}: "
                          + ", ".join(f"{r:.0f} rec/s (join {j:.2f} s)" for r, j in runs),
                          flush=True)
        finally:
            for _name, broker in brokers:
                broker.stop()
    load_after = os.getloadavg()
    print(f"group consumption, {args.records} records of {args.size} B, {PARTITIONS} "
          f"partitions, median of {args.rounds}; load average (1 min) "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'group':>11} {'ours rec/s':>11} {'join s':>7} {'kafka rec/s':>12} {'join s':>7} "
          f"{'ours/kafka':>11}")
    for kind, consumers in rows:
        ours, ours_join = rates[("ours", kind, consumers)]
        kafka, kafka_join = rates.get(("kafka", kind, consumers), (0.0, 0.0))
        ratio = f"{ours / kafka:.2f}" if kafka else "-"
        print(f"{kind + ':' + str(consumers):>11} {ours:>11.0f} {ours_join:>7.2f} "
              f"{kafka:>12.0f} {kafka_join:>7.2f} {ratio:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
