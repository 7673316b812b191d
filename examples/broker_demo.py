"""The first demo: a Kafka-protocol broker, a topic, a producer and a consumer group, all in one
process, talking to each other through aiokafka exactly as they would to an Apache Kafka cluster.

    python examples/broker_demo.py [--records N] [--data-dir DIR]

It starts the bundled broker on a free port, creates a 3-partition topic, produces page views
keyed by user, reads them back with a group of two consumers, checks that every record arrived
exactly once and each user's views in order, commits, prints a summary and stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from streams.broker import Broker, BrokerConfig

TOPIC = "page-views"
GROUP = "page-view-readers"
PARTITIONS = 3
USERS = 500
PAGES = ["/", "/search", "/cart", "/checkout"] + [f"/products/{n}" for n in range(20)]
DEADLINE_S = 45.0  # the whole demo normally takes a few seconds


@dataclass
class Tally:
    """What the consumers saw of this run's records, to check count and per-user order."""

    run: str
    expected: int
    per_reader: Counter[str] = field(default_factory=Counter)
    next_seq: dict[str, int] = field(default_factory=dict)
    out_of_order: int = 0
    older_runs: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def total(self) -> int:
        return sum(self.per_reader.values())

    def add(self, reader: str, value: bytes) -> None:
        view = json.loads(value)
        if view["run"] != self.run:  # left over from an earlier run in the same --data-dir
            self.older_runs += 1
            return
        user, seq = view["user"], view["seq"]
        if seq != self.next_seq.get(user, 0):
            self.out_of_order += 1
        self.next_seq[user] = seq + 1
        self.per_reader[reader] += 1
        if self.total >= self.expected:
            self.done.set()


def page_views(run: str, count: int) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs: JSON page views keyed by user, numbered per user."""
    rng = random.Random(42)
    seq: Counter[str] = Counter()
    views = []
    for n in range(count):
        user = f"user-{rng.randrange(USERS):03d}"
        view = {"run": run, "user": user, "seq": seq[user], "page": rng.choice(PAGES),
                "n": n}
        seq[user] += 1
        views.append((user.encode(), json.dumps(view).encode()))
    return views


async def create_topic(bootstrap: str) -> int:
    """Create the topic (or reuse it from an earlier run); return its partition count."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        for _name, code, *_ in response.topic_errors:
            if code and for_code(code) is not TopicAlreadyExistsError:
                raise SystemExit(f"demo: cannot create topic {TOPIC}: {for_code(code).__name__}")
        (topic,) = await admin.describe_topics([TOPIC])
        return len(topic["partitions"])
    finally:
        await admin.close()


async def produce(bootstrap: str, views: list[tuple[bytes, bytes]]) -> float:
    """Send every view (acks=all: each is on disk when acknowledged); return seconds taken."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                max_batch_size=256 * 1024)
    await producer.start()
    try:
        started = time.perf_counter()
        pending = [await producer.send(TOPIC, key=key, value=value) for key, value in views]
        await asyncio.gather(*pending)
        return time.perf_counter() - started
    finally:
        await producer.stop()


def reader(bootstrap: str, name: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, client_id=name,
        enable_auto_commit=False, auto_offset_reset="earliest",
        heartbeat_interval_ms=500, session_timeout_ms=10_000,
    )


async def balanced(readers: dict[str, AIOKafkaConsumer], partitions: int) -> dict[str, list[int]]:
    """Wait until the group has settled: each reader owns partitions, together all of them."""
    deadline = time.monotonic() + 20
    while True:
        owned = {name: sorted(tp.partition for tp in c.assignment()) for name, c in readers.items()}
        flat = [p for ps in owned.values() for p in ps]
        if all(owned.values()) and sorted(flat) == list(range(partitions)):
            return owned
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: the consumer group did not settle (assignment {owned})")
        await asyncio.sleep(0.05)


async def read_until_done(name: str, consumer: AIOKafkaConsumer, tally: Tally) -> None:
    """Read and tally batches, committing each one, until the run's records are all in."""
    while not tally.done.is_set():
        batches = await consumer.getmany(timeout_ms=200)
        positions = {}
        for tp, records in batches.items():
            for record in records:
                tally.add(name, record.value)
            positions[tp] = records[-1].offset + 1
        if positions:
            await consumer.commit(positions)


async def consume(bootstrap: str, partitions: int, tally: Tally
                  ) -> tuple[dict[str, list[int]], float, dict[int, int]]:
    """Two readers in one group share the partitions; returns (ownership, seconds, committed)."""
    readers = {name: reader(bootstrap, name) for name in ("reader-1", "reader-2")}
    try:
        await asyncio.gather(*(c.start() for c in readers.values()))
        owned = await balanced(readers, partitions)
        started = time.perf_counter()
        await asyncio.gather(*(read_until_done(n, c, tally) for n, c in readers.items()))
        seconds = time.perf_counter() - started
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        committed = {}
        for c in readers.values():
            for tp in c.assignment():
                committed[tp.partition] = await c.committed(tp)
        ends = await next(iter(readers.values())).end_offsets(tps)
        lag = sum(ends[tp] - (committed.get(tp.partition) or 0) for tp in tps)
        if lag:
            raise SystemExit(f"demo: {lag} records left uncommitted")
        return owned, seconds, committed
    finally:
        await asyncio.gather(*(c.stop() for c in readers.values()))


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f} records/s" if seconds > 0 else "-"


async def run_demo(data_dir: Path, records: int, note: str) -> int:
    config = BrokerConfig.from_mapping({"data_dir": data_dir, "port": 0,
                                        "group_initial_rebalance_delay_ms": 500})
    broker = Broker(config)
    await broker.start()
    bootstrap = f"127.0.0.1:{broker.port}"
    try:
        print(f"  broker    listening on {bootstrap}, data in {data_dir} ({note})")
        partitions = await create_topic(bootstrap)
        print(f"  topic     {TOPIC} with {partitions} partitions")

        run = uuid.uuid4().hex[:8]
        views = page_views(run, records)
        produce_s = await produce(bootstrap, views)
        print(f"  produce   {records:,} JSON page views from {USERS} users, keyed by user, "
              f"in {produce_s:.2f} s ({rate(records, produce_s)}, acks=all)")

        tally = Tally(run, records)
        owned, consume_s, committed = await consume(bootstrap, partitions, tally)
        shares = ", ".join(f"{n} owns partition(s) {ps}" for n, ps in owned.items())
        print(f"  group     {GROUP}: {shares}")
        got = ", ".join(f"{n} got {tally.per_reader[n]:,}" for n in owned)
        print(f"  consume   {tally.total:,} records in {consume_s:.2f} s "
              f"({rate(tally.total, consume_s)}): {got}")
        if tally.older_runs:
            print(f"            (skipped {tally.older_runs:,} records from earlier runs)")
        if tally.total != records or tally.out_of_order:
            print(f"  check     FAILED: {tally.total:,} of {records:,} records, "
                  f"{tally.out_of_order} out of order")
            return 1
        print("  check     every record arrived exactly once, each user's views in send order")
        offsets = ", ".join(f"p{p}={o:,}" for p, o in sorted(committed.items()))
        print(f"  commit    group offsets committed: {offsets} (lag 0)")
        return 0
    finally:
        await broker.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="page views to produce")
    parser.add_argument("--data-dir", type=Path,
                        help="keep the broker's data here (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.records < 1:
        parser.error("--records must be at least 1")
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # rebalance chatter is expected

    print("streams demo: the bundled Kafka-protocol broker with aiokafka clients, in one process")
    started = time.perf_counter()
    try:
        if args.data_dir:
            code = asyncio.run(asyncio.wait_for(
                run_demo(args.data_dir, args.records, "kept"), DEADLINE_S))
        else:
            with tempfile.TemporaryDirectory(prefix="streams-demo-") as tmp:
                code = asyncio.run(asyncio.wait_for(
                    run_demo(Path(tmp), args.records, "removed at exit"), DEADLINE_S))
    except TimeoutError:
        print(f"demo: did not finish within {DEADLINE_S:.0f} s", file=sys.stderr)
        return 1
    except Exception as exc:  # a newcomer gets one line, not a traceback
        print(f"demo failed: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    if code == 0:
        print(f"done in {time.perf_counter() - started:.1f} s. Next: `streams broker start` in one "
              "terminal, then `streams topics create demo --partitions 3` in another.")
    return code


if __name__ == "__main__":
    sys.exit(main())
