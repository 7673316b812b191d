"""Spark throughput: the SparkSink connector against Spark writing the same rows itself, and the
`streams` Spark source reading a topic.

Run::

    python benchmarks/spark_perf.py                  # 500k rows, batches of 10k and 50k
    python benchmarks/spark_perf.py --rows 50000 --batches 10000 --rounds 1
    python benchmarks/spark_perf.py --json out.json  # also write a JSON summary
    python benchmarks/spark_perf.py --default-gc     # without streams connect's GC settings

One run starts the bundled broker (``python -m streams.cli.main broker start``, own process, fresh
data dir), produces N JSON rows (six typed fields, string keys) into a 2-partition topic, starts one
local SparkSession (``local[2]``) in this process, then for each batch size B:

* **direct**: Spark writes the same rows itself: the rows are already Arrow tables of B rows in
  memory (built before the clock starts) with the columns the sink's table has (the six value
  fields and the sink's ``_topic``, ``_partition``, ``_offset``, ``_timestamp``), and each is
  written with
  ``spark.createDataFrame(table).write.mode("append").parquet(dir)``, one batch after the other:
  the plain way a PySpark program writes rows it has (the target's reference). For reference
  only, the same with two threads writing a batch each at a time ("direct, 2 jobs at once"),
  since the sink overlaps two flushes' Spark writes;
* **sink**: a standalone Connect worker in this process (``connect.runtime.background``, with the
  garbage-collector settings ``streams connect`` uses, which the direct side then shares) runs the
  SparkSink connector (``flush.size`` = B, ``flush.interval.ms`` = 500 for the last partial
  batch) over the topic: consuming, decoding, converting, writing and its exactly-once commit
  protocol. The connector sets ``value.converter=ByteArrayConverter`` and ``value.format=json``:
  the recommended
  configuration for JSON into Spark, where the sink parses each batch of JSON values in bulk
  with Arrow's JSON reader (the worker's JsonConverter would decode record by record). Its rate
  is the steady state, from its first commit-log entry to the last (a sink runs for hours; its
  start-up: task start, group join, schema inference, first Spark job, is printed apart as the
  end-to-end time).

Each batch size is measured in ``--rounds`` rounds (default 5), each a direct write and a sink run
back to back (their order alternating from round to round, so a drift of the machine's speed
favours neither). The ratio is sink rows/s over direct rows/s within a round; the table prints the
median of each column and the range of the ratio over the rounds (target: a median of at least
0.8x for B >= 10,000): one run of each on a shared 2-core machine varies by 20% or more. Next to
it, the sink over "direct, 2 jobs at once" of the same round (median and range; no target): the
sink overlaps two Spark writes, so this is the like-for-like comparison. Then the
source: ``spark.read.format("streams")`` of the whole topic into Spark's ``noop`` sink (twice: the
first read also starts the Python workers), and
``spark.readStream`` with ``trigger(availableNow=True)`` into ``noop``, rows/s each.

Every process started is stopped on exit. Exit status: 0 when every measurement ran (a missed
target is reported, not failed), 1 when one failed, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench_common import REPO_ROOT, Processes, raise_on_sigterm, start_broker

sys.path.insert(0, str(REPO_ROOT))

from aiokafka import AIOKafkaProducer  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

TARGET = 0.8
WARMUP_ROUNDS = 3  # of 10 writes of 10,000 rows
TOPIC = "spark-bench"
PARTITIONS = 2
_URLS = ["/", "/home", "/search", "/cart", "/checkout", "/product/1", "/help"]


@dataclass
class SinkRound:
    batch: int
    rows: int
    direct_s: float
    sink_s_per_row: float  # steady state
    sink_end_to_end_s: float
    direct_two_jobs_s: float  # for reference: Spark writing two batches at a time

    @property
    def direct_rate(self) -> float:
        return self.rows / self.direct_s

    @property
    def sink_rate(self) -> float:
        return 1 / self.sink_s_per_row if self.sink_s_per_row else 0.0

    @property
    def ratio(self) -> float:
        return self.sink_rate / self.direct_rate

    @property
    def direct_two_jobs_rate(self) -> float:
        return self.rows / self.direct_two_jobs_s

    @property
    def ratio_two_jobs(self) -> float:
        """Sink over Spark writing two batches at once, as the sink's two flushes in flight
        do: the comparison that flatters the sink least."""
        return self.sink_rate / self.direct_two_jobs_rate


def make_row(n: int) -> dict[str, Any]:
    return {"id": n, "user": f"User_{n % 97}", "url": _URLS[n % len(_URLS)],
            "ms": 20 + n * 7 % 900, "score": (n % 1000) / 7.0, "ok": n % 3 != 0}


def table_rows(start: int, end: int) -> Any:
    """Rows ``start..end`` as the sink's table holds them: the value's six columns and the four
    Kafka columns it adds (``_topic``, ``_partition``, ``_offset``, ``_timestamp``), so both sides
    write the same table."""
    import pyarrow as pa

    table = pa.Table.from_pylist([make_row(n) for n in range(start, end)])
    now_ms = int(time.time() * 1000)
    offsets = pa.array(range(start, end), pa.int64())
    return (table.append_column("_topic", pa.array([TOPIC] * (end - start), pa.string()))
            .append_column("_partition", pa.array([n % PARTITIONS for n in range(start, end)],
                                                  pa.int32()))
            .append_column("_offset", offsets)
            .append_column("_timestamp", pa.array([now_ms + n for n in range(start, end)],
                                                  pa.timestamp("ms", tz="UTC"))
                           .cast(pa.timestamp("us", tz="UTC"))))


# ------------------------------------------------------------------------------------------------
# broker and data


async def produce(bootstrap: str, rows: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20,
                                max_batch_size=512 * 1024)
    await producer.start()
    try:
        encode = json.JSONEncoder(separators=(",", ":")).encode
        for n in range(rows):
            row = make_row(n)
            await producer.send(TOPIC, encode(row).encode(), key=row["user"].encode())
        await producer.flush()
    finally:
        await producer.stop()


# ------------------------------------------------------------------------------------------------
# measurements


def direct_write(spark: Any, rows: int, batch: int, out: Path, jobs: int = 1) -> float:
    """Seconds for Spark to write ``rows`` prebuilt rows in batches of ``batch``, one write job
    after the other, or ``jobs`` threads each writing every ``jobs``-th batch (into a directory
    of its own: concurrent jobs appending to one directory clash in its ``_temporary``)."""
    tables = [table_rows(start, min(rows, start + batch)) for start in range(0, rows, batch)]
    outs = [out] if jobs == 1 else [out / f"job-{i}" for i in range(jobs)]

    def write(mine: list[Any], into: Path) -> None:
        for table in mine:
            spark.createDataFrame(table).write.mode("append").parquet(str(into))

    started = time.perf_counter()
    if jobs == 1:
        write(tables, out)
    else:
        threads = [threading.Thread(target=write, args=(tables[i::jobs], outs[i]))
                   for i in range(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elapsed = time.perf_counter() - started
    written = sum(spark.read.parquet(str(d)).count() for d in outs)
    if written != rows:
        raise RuntimeError(f"direct write: {written} rows instead of {rows}")
    return elapsed


def sink_write(worker: Any, spark: Any, rows: int, batch: int, out: Path,
               name: str) -> tuple[float, float]:
    """(steady-state seconds per row, end-to-end seconds) of the SparkSink over ``rows``.

    Steady state runs from the first commit to the last (rows after the first commit over that
    time): a sink runs for hours, so its start (task start, group join, schema inference, first
    Spark job) is reported apart, in the end-to-end time.
    """
    from connect.spark.commit_log import CommitLog

    started = time.time()
    worker.put_connector({
        "name": name, "connector.class": "SparkSink", "topics": TOPIC, "tasks.max": "1",
        "path": str(out), "flush.size": str(batch),
        # JSON values as bytes: the sink parses them in bulk (recommended for JSON into Spark)
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.format": "json",
        # the tail (fewer than B rows) is written when it is this old: realistic, and bounded
        "flush.interval.ms": "500",
    })
    deadline = time.monotonic() + 600
    while not (out / "_streams_sink").exists():
        time.sleep(0.01)
    # Commit times are the entries' file times, read while polling rarely: a poller waking
    # often would take the GIL from the worker it measures (the direct side has none).
    log = CommitLog(out)
    first_rows = 0
    first_at = ended = 0.0
    while log.rows < rows:
        if time.monotonic() > deadline:
            raise RuntimeError(f"sink {name}: {log.rows} of {rows} rows after 600 s")
        time.sleep(0.1)
        for entry in log.refresh():
            if not entry.rows:  # (the entry fixing the table schema has none)
                continue
            ended = log.entry_path(entry.sequence).stat().st_mtime
            if not first_rows:
                first_at, first_rows = ended, entry.rows
    worker.delete_connector(name)
    written = spark.read.parquet(str(out)).count()
    if written != rows:
        raise RuntimeError(f"sink {name}: {written} rows instead of {rows}")
    steady = (ended - first_at) / (rows - first_rows) if rows > first_rows else 0.0
    return steady, ended - started


def source_reads(spark: Any, bootstrap: str, rows: int, work: Path) -> dict[str, float]:
    def reader(read: Any) -> Any:
        return (read.format("streams").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", TOPIC).option("startingOffsets", "earliest"))

    def batch_read() -> float:
        started = time.perf_counter()
        reader(spark.read).load().write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started

    cold_s = batch_read()  # the first read starts the Python workers that decode the records
    batch_s = batch_read()
    started = time.perf_counter()
    query = (reader(spark.readStream).load().writeStream.format("noop")
             .option("checkpointLocation", str(work / "source-checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    stream_s = time.perf_counter() - started
    read = sum(p["numInputRows"] for p in query.recentProgress)
    if read != rows:
        raise RuntimeError(f"streaming read: {read} rows instead of {rows}")
    return {"batch_rows_per_s": rows / batch_s, "batch_cold_rows_per_s": rows / cold_s,
            "stream_rows_per_s": rows / stream_s}


def worker_in_process(bootstrap: str, work: Path) -> Any:
    from connect.runtime.background import BackgroundWorker
    return BackgroundWorker.standalone(bootstrap, work / "connect.offsets", {
        "offset.flush.interval.ms": "100",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    })


# ------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--rounds", type=int, default=5,
                        help="direct/sink pairs per batch size (medians are reported)")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--default-gc", action="store_true",
                        help="keep CPython's garbage-collector defaults (streams connect tunes "
                             "them: connect.runtime.gc_policy)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="spark-perf-"))
    procs = Processes()
    worker = None
    try:
        from connect.runtime.gc_policy import tune_gc
        from streams.spark import get_spark_session

        bootstrap, _broker = start_broker(procs, work)
        asyncio.run(produce(bootstrap, args.rows))
        print(f"{args.rows:,} rows in {TOPIC} ({PARTITIONS} partitions); starting Spark",
              flush=True)
        spark = get_spark_session("local[2]", app_name="spark-perf")
        spark.sparkContext.setLogLevel("ERROR")
        worker = worker_in_process(bootstrap, work)
        if not args.default_gc:
            tune_gc()  # as `streams connect` does once its worker is up (the whole process)
        # Warm-up: the first Spark jobs start Python workers and leave the JVM's write path to
        # its interpreter; until the JIT has compiled it (some 20 jobs here) a write takes up to
        # twice as long, which would favour whichever side runs later.
        for round_ in range(WARMUP_ROUNDS):
            direct_write(spark, 100_000, 10_000, work / f"warmup-{round_}")
        results: dict[int, list[SinkRound]] = {}
        for batch in args.batches:
            for round_ in range(args.rounds):
                def direct(batch: int = batch, round_: int = round_) -> float:
                    return direct_write(spark, args.rows, batch,
                                        work / f"direct-{batch}-{round_}")

                def sink(batch: int = batch, round_: int = round_) -> tuple[float, float]:
                    name = f"bench-sink-{batch}-{round_}"
                    return sink_write(worker, spark, args.rows, batch, work / name, name)

                if round_ % 2 == 0:
                    direct_s = direct()
                    steady, end_to_end = sink()
                else:
                    steady, end_to_end = sink()
                    direct_s = direct()
                two_jobs_s = direct_write(spark, args.rows, batch,
                                          work / f"direct2-{batch}-{round_}", jobs=2)
                results.setdefault(batch, []).append(
                    SinkRound(batch, args.rows, direct_s, steady, end_to_end, two_jobs_s))
        source = source_reads(spark, bootstrap, args.rows, work)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"spark_perf failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if worker is not None:
            worker.stop()
        procs.close()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nmachine: {platform.platform()}, Spark {spark.version}, {args.rows:,} rows, "
          f"medians of {args.rounds} round(s)")
    print(f"{'batch':>8} {'direct rows/s':>14} {'sink rows/s':>12} {'sink/direct':>12} "
          f"{'(range)':>12}  target       {'direct 2 jobs':>14} {'sink/2 jobs':>12} "
          f"{'(range)':>12}  sink end to end incl. start")
    summary = []
    for batch, rounds in results.items():
        ratios = [r.ratio for r in rounds]
        ratio = median(ratios)
        ratios2 = [r.ratio_two_jobs for r in rounds]
        ratio2 = median(ratios2)
        end_to_end = median([r.sink_end_to_end_s for r in rounds])
        verdict = "pass" if ratio >= TARGET else "short"
        print(f"{batch:>8,} {median([r.direct_rate for r in rounds]):>14,.0f} "
              f"{median([r.sink_rate for r in rounds]):>12,.0f} {ratio:>11.2f}x "
              f"({min(ratios):.2f}-{max(ratios):.2f})  >= {TARGET}x: {verdict}   "
              f"{median([r.direct_two_jobs_rate for r in rounds]):>14,.0f} {ratio2:>11.2f}x "
              f"({min(ratios2):.2f}-{max(ratios2):.2f})  "
              f"{args.rows / end_to_end:,.0f} rows/s, {end_to_end:.1f} s")
        summary.append({"batch": batch, "ratio": ratio, "ratio_two_jobs": ratio2, "rounds": [
            asdict(r) | {"ratio": r.ratio, "ratio_two_jobs": r.ratio_two_jobs,
                         "sink_rows_per_s": r.sink_rate, "direct_rows_per_s": r.direct_rate,
                         "direct_two_jobs_rows_per_s": r.direct_two_jobs_rate} for r in rounds]})
    print("sink/direct: against Spark writing one batch after the other (the target's "
          "reference); sink/2 jobs: against Spark writing two batches at once, as the sink's "
          "two flushes in flight do (the comparison that flatters the sink least)")
    print(f"source: spark.read {source['batch_rows_per_s']:,.0f} rows/s "
          f"(first read, starting its workers: {source['batch_cold_rows_per_s']:,.0f}), "
          f"readStream availableNow {source['stream_rows_per_s']:,.0f} rows/s")
    if args.json:
        args.json.write_text(json.dumps({
            "rows": args.rows,
            "sink": summary,
            "source": source}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
