"""Spark in both directions: page views in, windowed counts out exactly once, a streams app on top.

    python examples/spark_roundtrip.py [--views N] [--rate R] [--data-dir DIR]

1. starts the bundled broker and writes a `pages` table (page -> category);
2. the streams app of examples/spark_roundtrip_app.py starts (exactly_once_v2): it joins the
   `page-counts` topic with `pages` and sums views per category;
3. N page views (key user, JSON {"page"}, record timestamps = event time, a little out of order)
   flow into `pageviews` at R views/s while Spark reads them with
   ``spark.readStream.format("streams")``, counts views per page and 10-second event-time
   window with a 10-second watermark (append mode: a window is written once, when the
   watermark has passed it) and writes the counts with ``writeStream.format("streams")`` and
   ``processing.guarantee=exactly_once_v2`` into `page-counts`;
4. checks, exactly: the windows in `page-counts` (read back with ``spark.read.format("streams")``)
   equal a batch recomputation from `pageviews`, window by window, each once; and the streams
   app's totals per category equal the batch totals.

The last view is followed by one marker view an hour later in event time, which moves the
watermark past every window of the real views; its own window never closes, so it is never
written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).parent))

from spark_roundtrip_app import build_topology  # noqa: E402

from streams import KafkaStreams  # noqa: E402
from streams.runtime.launcher import BundledBroker  # noqa: E402

PARTITIONS = 3
WINDOW = "10 seconds"
WATERMARK = "10 seconds"
JITTER_MS = 2_000  # how far out of order views arrive: well inside the watermark's delay
MARKER_PAGE = "__watermark__"
CATEGORIES = {f"/page/{i}": ("news", "sport", "shop", "help")[i % 4] for i in range(12)}
DEADLINE_S = 600.0


def log(message: str) -> None:
    print(message, flush=True)


async def create_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic("pages", PARTITIONS, 1, topic_configs={"cleanup.policy": "compact"}),
            NewTopic("pageviews", PARTITIONS, 1),
            NewTopic("page-counts", PARTITIONS, 1),
        ])
    finally:
        await admin.close()


async def write_pages(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for page, category in CATEGORIES.items():
            await producer.send_and_wait("pages", key=page.encode(),
                                         value=json.dumps({"category": category}).encode())
    finally:
        await producer.stop()


async def write_views(bootstrap: str, views: int, rate: float) -> None:
    """``views`` page views at ``rate`` per second, event time one view per 10 ms, jittered."""
    rng = random.Random(42)
    base = int(time.time() * 1000) - views * 10 - 60_000
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10)
    await producer.start()
    try:
        started = time.monotonic()
        pending = []
        for i in range(views):
            page = rng.choice(list(CATEGORIES))
            pending.append(await producer.send(
                "pageviews", key=f"user-{rng.randrange(50)}".encode(),
                value=json.dumps({"page": page}).encode(),
                timestamp_ms=base + i * 10 + rng.randrange(-JITTER_MS, JITTER_MS)))
            if i % 500 == 499:
                await asyncio.gather(*pending)
                pending.clear()
                ahead = (i + 1) / rate - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        await asyncio.gather(*pending)
        await producer.send_and_wait("pageviews", key=b"marker",
                                     value=json.dumps({"page": MARKER_PAGE}).encode(),
                                     timestamp_ms=base + views * 10 + 3_600_000)
    finally:
        await producer.stop()


def start_spark() -> Any:
    from streams.spark import get_spark_session

    spark = get_spark_session("local[2]", app_name="streams-spark-roundtrip")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def windowed_counts_query(spark: Any, bootstrap: str, checkpoint: Path) -> Any:
    """pageviews -> counts per page and window -> page-counts, exactly once."""
    from pyspark.sql.functions import window

    views = (spark.readStream.format("streams")
             .option("kafka.bootstrap.servers", bootstrap).option("subscribe", "pageviews")
             .option("startingOffsets", "earliest")
             .load()
             .selectExpr("get_json_object(CAST(value AS STRING), '$.page') AS page", "timestamp")
             .withWatermark("timestamp", WATERMARK))
    # The marker is counted too, in a window of its own that never closes (no later event
    # time), so it is never written; a filter on it would be pushed below the watermark.
    counts = views.groupBy("page", window("timestamp", WINDOW)).count()
    return (counts
            .selectExpr("page AS key",
                        "to_json(named_struct('page', page, 'window_start', "
                        "unix_millis(window.start), 'views', count)) AS value")
            .writeStream.format("streams")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", "page-counts")
            .option("processing.guarantee", "exactly_once_v2")
            .option("checkpointLocation", str(checkpoint))
            .outputMode("append")
            .trigger(processingTime="2 seconds")
            .start())


def batch_counts(spark: Any, bootstrap: str) -> Any:
    """The same counts from the whole `pageviews` topic, in one batch query."""
    views = (spark.read.format("streams").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "pageviews").load())
    views.createOrReplaceTempView("pageviews_topic")
    return spark.sql(f"""
        SELECT page, unix_millis(window.start) AS window_start, count(*) AS views
        FROM (SELECT get_json_object(CAST(value AS STRING), '$.page') AS page, timestamp
              FROM pageviews_topic)
        WHERE page <> '{MARKER_PAGE}'
        GROUP BY page, window(timestamp, '{WINDOW}')""")


def written_counts(spark: Any, bootstrap: str) -> Any:
    """What the streaming query wrote, read back (read_committed)."""
    written = (spark.read.format("streams").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", "page-counts").load())
    return written.selectExpr(
        "get_json_object(CAST(value AS STRING), '$.page') AS page",
        "CAST(get_json_object(CAST(value AS STRING), '$.window_start') AS BIGINT) "
        "AS window_start",
        "CAST(get_json_object(CAST(value AS STRING), '$.views') AS BIGINT) AS views")


def wait_for(condition: Any, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not done after {timeout:.0f} s")
        time.sleep(1.0)


def category_totals(streams: KafkaStreams) -> dict[str, int]:
    try:
        return dict(streams.store("views-per-category").all())
    except Exception:  # not queryable yet (restoring or rebalancing)
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=20_000, help="page views to generate")
    parser.add_argument("--rate", type=float, default=2_000, help="page views per second")
    parser.add_argument("--data-dir", type=Path, help="keep broker, state and checkpoint here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="streams-spark-roundtrip-"))
    broker = BundledBroker(root / "broker").start()
    streams = query = None
    try:
        bootstrap = broker.bootstrap
        log(f"1. bundled broker on {bootstrap} (data in {root})")
        asyncio.run(create_topics(bootstrap))
        asyncio.run(write_pages(bootstrap))
        streams = KafkaStreams(build_topology(), {
            "application.id": "spark-roundtrip", "bootstrap.servers": bootstrap,
            "processing.guarantee": "exactly_once_v2", "state.dir": str(root / "state")})
        streams.start()
        if not streams.wait_for_state("RUNNING", timeout=DEADLINE_S):
            raise TimeoutError(f"the streams app did not start: {streams.state.name}")
        log("2. examples/spark_roundtrip_app.py is RUNNING: page-counts JOIN pages -> "
            "views per category")

        spark = start_spark()
        query = windowed_counts_query(spark, bootstrap, root / "checkpoint")
        log(f"3. Spark {spark.version}: readStream.format('streams') -> counts per page and "
            f"{WINDOW} window (watermark {WATERMARK}) -> writeStream.format('streams') "
            "exactly_once_v2 -> page-counts")
        producer = threading.Thread(target=lambda: asyncio.run(
            write_views(bootstrap, args.views, args.rate)), name="views", daemon=True)
        producer.start()
        producer.join(DEADLINE_S)
        log(f"   {args.views:,} page views written to `pageviews`")

        expected = batch_counts(spark, bootstrap).cache()
        windows = expected.count()

        def all_windows_written() -> bool:
            if query.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {query.exception()}")
            return written_counts(spark, bootstrap).count() >= windows

        wait_for(all_windows_written, f"{windows} windows in page-counts")
        query.stop()
        written = written_counts(spark, bootstrap)
        missing = expected.exceptAll(written).count()
        extra = written.exceptAll(expected).count()
        if missing or extra:
            raise RuntimeError(f"page-counts differs from the batch recomputation: {missing} "
                               f"windows missing, {extra} unexpected or duplicated")
        log(f"4. page-counts holds {windows} (page, window) counts, each exactly once, equal "
            "to the batch recomputation from pageviews")

        by_page = {row["page"]: row["views"] for row in
                   expected.groupBy("page").sum("views").withColumnRenamed("sum(views)", "views")
                   .collect()}
        totals: dict[str, int] = {}
        for page, views in by_page.items():
            totals[CATEGORIES[page]] = totals.get(CATEGORIES[page], 0) + int(views)
        try:
            wait_for(lambda: category_totals(streams) == totals, "the streams app's totals",
                     timeout=120)
        except TimeoutError:
            raise RuntimeError(f"the streams app's totals {category_totals(streams)} differ "
                               f"from the batch totals {totals}") from None
        log(f"5. the streams app's views per category equal the batch totals: "
            f"{dict(sorted(totals.items()))} ({sum(totals.values()):,} views)")
        return 0
    except Exception as exc:  # one clear line, then a non-zero exit
        print(f"\nexample failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if query is not None and query.isActive:
            query.stop()
        if streams is not None:
            streams.close(30)
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
