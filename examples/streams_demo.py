"""The streams-only demo: a topology running end to end, exactly-once, on the bundled broker.

    python examples/streams_demo.py [--views N] [--data-dir DIR]

It starts the bundled broker, loads a users table and N page views spread over five minutes of
event time, runs examples/pageviews_app.py (page views joined with users, counted per region in
one-minute tumbling windows, under exactly_once_v2), shows live progress, then prints the
per-region counts for each minute and checks them against what was produced.
(The full pipeline with Connect and Spark is examples/demo.py; the broker alone:
examples/broker_demo.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).parent))

from demo_support import Progress, demo_root  # noqa: E402
from pageviews_app import WINDOW_MS, build_topology  # noqa: E402

from streams import KafkaStreams, Serdes  # noqa: E402
from streams.runtime.launcher import BundledBroker  # noqa: E402

REGIONS = ["americas", "emea", "apac"]
PAGES = ["/", "/search", "/cart", "/checkout", "/products/1", "/products/2"]
USERS = 300
PARTITIONS = 3
START_MS = 1_700_000_000_000 - 1_700_000_000_000 % WINDOW_MS
DEADLINE_S = 120.0


async def create_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic("users", PARTITIONS, 1, topic_configs={"cleanup.policy": "compact"}),
            NewTopic("page-views", PARTITIONS, 1),
            NewTopic("region-views", 1, 1),
        ])
    finally:
        await admin.close()


async def produce_input(bootstrap: str, views: int, rng: random.Random) -> Counter:
    """Users first, then page views; returns the expected count per (region, window start)."""
    region_of = {f"user-{n}": REGIONS[n % len(REGIONS)] for n in range(USERS)}
    expected: Counter = Counter()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    await producer.start()
    try:
        for user, region in region_of.items():
            await producer.send("users", json.dumps({"name": user, "region": region}).encode(),
                                key=user.encode(), timestamp_ms=START_MS)
        await producer.flush()
        for n in range(views):
            user = f"user-{rng.randrange(USERS)}"
            ts = START_MS + 1_000 + n * (5 * WINDOW_MS) // views
            view = {"page": rng.choice(PAGES), "ms": rng.randrange(20, 900)}
            await producer.send("page-views", json.dumps(view).encode(), key=user.encode(),
                                timestamp_ms=ts)
            expected[(region_of[user], ts - ts % WINDOW_MS)] += 1
        await producer.flush()
    finally:
        await producer.stop()
    return expected


async def follow_output(bootstrap: str, views: int, expected: Counter) -> dict:
    """Read region-views (read_committed) until the counts add up, printing progress."""
    key_serde = Serdes.windowed(Serdes.string(), WINDOW_MS)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    latest: dict = {}
    try:
        consumer.assign([TopicPartition("region-views", 0)])
        started = time.monotonic()
        last_print = 0.0
        updates = 0
        progress = Progress()
        while True:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for record in records:
                    windowed = key_serde.deserialize("region-views", record.key)
                    count = Serdes.long().deserialize("region-views", record.value)
                    latest[(windowed.key, windowed.window.start)] = count
                    updates += 1
            counted = sum(latest.values())
            now = time.monotonic()
            if now - last_print >= 1.0 or counted >= views:
                last_print = now
                bar = "#" * int(30 * counted / views)
                progress.show(f"  [{bar:<30}] {counted:>7,}/{views:,} views counted, "
                              f"{updates:,} committed updates, {now - started:5.1f} s")
            if latest == dict(expected):
                progress.show(f"  [{'#' * 30}] {counted:>7,}/{views:,} views counted, "
                              f"{updates:,} committed updates, {now - started:5.1f} s",
                              done=True)
                return latest
            if now - started > DEADLINE_S:
                print()
                raise TimeoutError(f"output incomplete after {DEADLINE_S:.0f} s")
    finally:
        await consumer.stop()


def print_results(latest: dict) -> None:
    windows = sorted({w for _, w in latest})
    print(f"\n  {'minute (event time)':<22}" + "".join(f"{r:>10}" for r in REGIONS))
    for window in windows:
        label = time.strftime("%H:%M", time.gmtime(window / 1000)) + "-" + time.strftime(
            "%H:%M", time.gmtime((window + WINDOW_MS) / 1000))
        print(f"  {label:<22}" + "".join(f"{latest.get((r, window), 0):>10,}" for r in REGIONS))
    totals = defaultdict(int)
    for (region, _), count in latest.items():
        totals[region] += count
    print(f"  {'total':<22}" + "".join(f"{totals[r]:>10,}" for r in REGIONS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=20_000, help="page views to produce")
    parser.add_argument("--data-dir", type=Path, help="keep broker and state data here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with demo_root(args.data_dir, "streams-demo-") as root:
        code = run(args, root)
        if code:
            raise SystemExit(code)  # keeps the data directory for a look at the logs
    return 0


def run(args: argparse.Namespace, root: Path) -> int:
    broker = BundledBroker(root / "broker").start()
    streams = None
    try:
        print(f"bundled broker on {broker.bootstrap} (data in {root})")
        asyncio.run(create_topics(broker.bootstrap))
        started = time.monotonic()
        expected = asyncio.run(produce_input(broker.bootstrap, args.views, random.Random(7)))
        print(f"produced {USERS} users and {args.views:,} page views over 5 minutes of event "
              f"time in {time.monotonic() - started:.1f} s")
        print("running examples/pageviews_app.py: views JOIN users -> count per region per "
              "minute (exactly_once_v2)")
        streams = KafkaStreams(build_topology(), {
            "application.id": "pageviews-demo", "bootstrap.servers": broker.bootstrap,
            "processing.guarantee": "exactly_once_v2", "state.dir": str(root / "state"),
        })
        started = time.monotonic()
        streams.start()
        latest = asyncio.run(follow_output(broker.bootstrap, args.views, expected))
        elapsed = time.monotonic() - started
        print_results(latest)
        print(f"\n  {args.views:,} views processed end to end in {elapsed:.1f} s "
              f"({args.views / elapsed:,.0f} views/s); every count matches what was produced.")
        return 0
    except Exception as exc:  # one clear line, then a non-zero exit
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if streams is not None:
            streams.close(30)
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
