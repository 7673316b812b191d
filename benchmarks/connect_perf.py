"""Connect throughput: a standalone worker against plain aiokafka clients moving the same records.

Run::

    python benchmarks/connect_perf.py                  # full run (200k records, 3 rounds; ~5 min)
    python benchmarks/connect_perf.py --quick          # 30k records, 1 round, well under a minute
    python benchmarks/connect_perf.py --json out.json  # also write a JSON summary
    python benchmarks/connect_perf.py --kafka          # the same rows on Apache Kafka 4.4 too
    python benchmarks/connect_perf.py --before-tree /tmp/old  # + the EOS row of an older tree
    python benchmarks/connect_perf.py --help           # counts, rounds, profiling

One run starts the bundled broker (``python -m streams.cli.main broker start``, fresh data dir,
``group.initial.rebalance.delay.ms=0`` so group joins cost the same for both sides) and a
standalone Connect worker (``python -m streams.cli.main connect standalone``, StringConverter keys,
JsonConverter values with ``schemas.enable=false``), each in its own process, then measures per
round (fresh topics each round, median of the rounds reported):

* **source**: a DataGen ``pageviews`` connector (one task, ``iterations`` = N) created over REST,
  timed from the POST until the topic's end offset is N; next to a plain ``AIOKafkaProducer`` in
  this process that builds the same N records with DataGen's own generator, JSON-encodes them as the
  converter does and ``send()``s each (acks=all like the worker), timed until ``flush()`` returns.
* **sink**: a FileStreamSink connector (one task) over the source topic created over REST, timed
  from the POST until the file has N lines (polled every 10 ms, reading only the new bytes); next
  to a plain ``AIOKafkaConsumer`` in a consumer group that ``json.loads`` each value and writes the
  line the sink writes for it (``render``: the worker's JsonConverter decodes and FileStreamSink
  re-encodes, so the lines are the same for any JSON, not only compact ASCII), timed until the
  file has N lines. Neither clock includes the fsync + offset commit that follow (the worker does
  them every ``offset.flush.interval.ms``; the plain consumer does them after its clock stops).

* **source, exactly-once**: the same DataGen connector on a distributed worker with
  ``exactly.once.source.support=enabled`` (KIP-618: a transaction per ``poll()`` batch holding the
  records and their source offsets), timed from the POST until a ``read_committed`` consumer has
  counted N records. The standalone worker's DataGen is timed that way too in each round (its
  ``source`` row above stops when the topic's end offsets reach N, which a reader in this process
  sharing the cores and the broker reaches 10-13 % later). The exactly-once row is shown
  against the standalone worker's at-least-once figure timed by the reader (``EOS / ALOS
  standalone``, the row the target is judged on: like with like in timing, and the least
  flattering worker, since a standalone worker reads no internal topics), against the same
  standalone figure timed by end offsets (``EOS / ALOS st., end offsets``: two clocks, so it
  counts the reader against exactly-once; the figure of record until 2026-11-27), and against
  **source, at least once on a distributed worker** (``EOS / ALOS distrib.``: a second
  distributed worker with the same config but ``exactly.once.source.support=disabled``, timed
  the same way, so the ratio is the cost of the transactions alone). ``ALOS distrib. /
  standalone`` is what the distributed worker itself costs an at-least-once source. The
  read-back runs take turns going first in each round.

It prints a table (median records/s of each, the median of the per-round worker/plain ratios, CPU
of the worker process as a share of the wall time and in CPU seconds per 100,000 records, from
/proc/PID/stat utime+stime: far less noisy than wall time on a shared machine) and checks the
target: worker >= 0.8x plain for every path, the exactly-once source >= 0.8x the standalone
at-least-once one (``pass``/``short``; the rows marked ``-`` explain, they have no target). Each
source line of the round also gives our broker's CPU per 100,000 records over the same clock.
``--profile PREFIX`` attaches ``py-spy record --gil --format raw`` (samples of the thread
holding the GIL: where the CPU goes, not where the worker waits) to the worker of each path,
the distributed ones too (``PREFIX-source-0.txt``, ``-dist-0``, ``-eos-0``, ``-sink-0``, ...;
``pip install py-spy``).

``--before-tree DIR`` starts a second exactly-once worker and a second standalone worker from
another checkout (a ``git archive`` of an older commit) and runs their DataGen rows in the same
rounds: ``EOS --before-tree / ALOS st.`` compares the older exactly-once worker with this
tree's standalone one, ``the same, both --before-tree`` gives the older tree's own ratio (its
exactly-once worker against its standalone one), a before/after under the same machine state.

``--kafka`` runs every row a second time with Apache Kafka 4.4 as the broker (one KRaft node as
tests/reference/kafka.py starts it; needs java), fresh workers, and prints a second table: the
broker's share of a ratio (the exactly-once row above all: AddPartitionsToTxn, EndTxn and the
transaction markers are the broker's) shows as the difference between the two tables.

Every process started (broker, worker, py-spy) is stopped on exit, including on Ctrl-C, SIGTERM and
errors. Exit status: 0 when every path ran (a missed target is reported, not failed), 1 when a path
failed (records missing, a process died), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_common import (
    REPO_ROOT,
    Processes,
    free_port,
    process_cpu_seconds,
    raise_on_sigterm,
    repo_env,
    start_broker,
)

sys.path.insert(0, str(REPO_ROOT))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

from connect.datagen import QUICKSTARTS  # noqa: E402
from connect.file.sink import render  # noqa: E402

TARGET = 0.8
_TICKS = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------
# results


@dataclass
class Figure:
    records: int
    seconds: float
    cpu_s: float = 0.0  # CPU of the process doing the work (worker, or this one for plain)
    broker_cpu_s: float = 0.0  # our broker's CPU over the same clock (0 on Apache Kafka)
    error: str | None = None

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["records_per_s"] = round(self.records_per_s, 1)
        return d


@dataclass
class PathResult:
    name: str
    worker: list[Figure] = field(default_factory=list)
    plain: list[Figure] = field(default_factory=list)


def paired_ratio(res: PathResult) -> float:
    """Median over rounds of worker/plain, each round's pair measured back to back.

    On a shared machine the load changes between rounds; the ratio of two independent medians can
    pair a quiet round of one side with a busy round of the other.
    """
    ratios = sorted(w.records_per_s / p.records_per_s
                    for w, p in zip(res.worker, res.plain, strict=False) if p.records_per_s)
    if not ratios:
        return 0.0
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def median(figs: list[Figure]) -> Figure:
    failed = [f for f in figs if f.error]
    if failed:
        return failed[0]
    ranked = sorted(figs, key=lambda f: f.records_per_s)
    return ranked[(len(ranked) - 1) // 2]


# ------------------------------------------------------------------------------------------------
# process bookkeeping: everything started is stopped


def _check_alive(proc: subprocess.Popen[bytes], name: str, log_path: Path) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"{name} exited with {proc.returncode}; log {log_path}:\n"
                           + log_path.read_text(errors="replace")[-2000:])


def rest(url: str, method: str = "GET", body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


async def start_worker(procs: Processes, work: Path, bootstrap: str, tree: Path | None = None
                       ) -> tuple[str, subprocess.Popen[bytes]]:
    """The standalone worker; ``tree``: run it from that checkout instead (--before-tree)."""
    port = free_port()
    name = "worker" if tree is None else "worker-before"
    props = work / f"{name}.properties"
    props.write_text("\n".join([
        f"bootstrap.servers={bootstrap}",
        f"listeners=http://127.0.0.1:{port}",
        f"offset.storage.file.filename={work / f'{name}-offsets.json'}",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable=false",
        "offset.flush.interval.ms=10000",
    ]) + "\n")
    log_path = work / f"{name}.log"
    env = repo_env()
    if tree is not None:
        env["env"]["PYTHONPATH"] = str(tree)
        env["cwd"] = str(tree)
    proc = procs.start([sys.executable, "-m", "streams.cli.main", "connect", "standalone",
                        str(props)], log_path, **env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        _check_alive(proc, "worker", log_path)
        try:
            rest(url + "/")
            return url, proc
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise RuntimeError("worker REST not ready after 30s") from None
            await asyncio.sleep(0.2)


async def start_eos_worker(procs: Processes, work: Path, bootstrap: str,
                           tree: Path | None = None, exactly_once: bool = True
                           ) -> tuple[str, subprocess.Popen[bytes]]:
    """A distributed worker (exactly-once sources need one) with the standalone one's converters;
    ``tree``: run the worker from that checkout instead of this one (--before-tree);
    ``exactly_once=False``: the same worker with ``exactly.once.source.support=disabled`` (the
    at-least-once row on a distributed worker, like with like for the exactly-once one)."""
    port = free_port()
    name = ("bench-eos" if tree is None else "bench-eos-before") if exactly_once else "bench-dist"
    props = work / f"{name}.properties"
    props.write_text("\n".join([
        f"bootstrap.servers={bootstrap}",
        f"listeners=http://127.0.0.1:{port}",
        f"group.id={name}", f"config.storage.topic={name}-configs",
        f"offset.storage.topic={name}-offsets", f"status.storage.topic={name}-status",
        "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
        "status.storage.replication.factor=1",
        f"exactly.once.source.support={'enabled' if exactly_once else 'disabled'}",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable=false",
        "offset.flush.interval.ms=10000",
    ]) + "\n")
    log_path = work / f"{name}.log"
    env = repo_env()
    if tree is not None:
        env["env"]["PYTHONPATH"] = str(tree)
        env["cwd"] = str(tree)
    proc = procs.start([sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                        str(props)], log_path, **env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        _check_alive(proc, "exactly-once worker", log_path)
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return url, proc
        except (OSError, urllib.error.URLError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("exactly-once worker not ready after 60s")
        await asyncio.sleep(0.2)


async def source_read_back(url: str, bootstrap: str, topic: str, n: int, pid: int, name: str,
                           timeout: float) -> Figure:
    """DataGen on a worker, until a read_committed reader counted N records (the only clock an
    exactly-once row can have: end offsets count transaction markers too)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level="read_committed",
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                max_poll_records=10_000)
    await consumer.start()
    try:
        config = {"connector.class": "DataGen", "quickstart": "pageviews", "kafka.topic": topic,
                  "iterations": str(n), "tasks.max": "1", "random.seed": "1"}
        c0, t0 = process_cpu_seconds(pid), time.perf_counter()
        rest(url + "/connectors", "POST", {"name": name, "config": config})
        got = 0
        while got < n:
            if time.perf_counter() - t0 > timeout:
                return Figure(got, time.perf_counter() - t0, error=f"only {got} of {n} records")
            for batch in (await consumer.getmany(timeout_ms=50)).values():
                got += len(batch)
        fig = Figure(n, time.perf_counter() - t0, process_cpu_seconds(pid) - c0)
        if got != n:
            fig.error = f"{got} committed records in the topic, expected {n}"
        return fig
    finally:
        await consumer.stop()
        with contextlib.suppress(Exception):
            rest(f"{url}/connectors/{name}", "DELETE")


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


async def end_offset_total(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> int:
    ends = await consumer.end_offsets(tps)
    return sum(ends.values())


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


class LineCounter:
    """Lines of a growing file, reading only what was appended since the last call.

    The worker sink is polled every 10 ms while it runs; recounting the whole file each time
    (tens of MB near the end) took a core's worth of CPU from the worker and broker on a small
    machine, a cost the plain consumer (timed in this process, not polled) never paid.
    """

    def __init__(self, path: Path) -> None:
        self.path, self.pos, self.lines = path, 0, 0

    def __call__(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    self.lines += chunk.count(b"\n")
                    self.pos += len(chunk)
        except FileNotFoundError:
            pass
        return self.lines


# ------------------------------------------------------------------------------------------------
# the loads


def _encode_value(value: Any) -> bytes:
    """What JsonConverter (schemas.enable=false) writes for a DataGen value."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


async def plain_produce(bootstrap: str, topic: str, n: int) -> Figure:
    import random

    generate = QUICKSTARTS["pageviews"]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        await producer.partitions_for(topic)  # metadata outside the clock, as a warm worker has
        rng = random.Random(1)
        c0, t0 = time.process_time(), time.perf_counter()
        now = int(time.time() * 1000)
        send = producer.send
        for i in range(n):
            key, value = generate(rng, i, now)
            await send(topic, key=key.encode(), value=_encode_value(value), timestamp_ms=now)
        await producer.flush()
        return Figure(n, time.perf_counter() - t0, time.process_time() - c0)
    finally:
        await producer.stop()


async def worker_source(url: str, bootstrap: str, topic: str, n: int, pid: int, name: str,
                        partitions: int, timeout: float) -> Figure:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        config = {"connector.class": "DataGen", "quickstart": "pageviews", "kafka.topic": topic,
                  "iterations": str(n), "tasks.max": "1", "random.seed": "1"}
        c0, t0 = process_cpu_seconds(pid), time.perf_counter()
        rest(url + "/connectors", "POST", {"name": name, "config": config})
        got = 0
        while got < n:
            if time.perf_counter() - t0 > timeout:
                return Figure(got, time.perf_counter() - t0, error=f"only {got} of {n} records")
            await asyncio.sleep(0.01)
            got = await end_offset_total(consumer, tps)
        fig = Figure(n, time.perf_counter() - t0, process_cpu_seconds(pid) - c0)
        if got != n:
            fig.error = f"{got} records in the topic, expected {n}"
        return fig
    finally:
        await consumer.stop()
        with contextlib.suppress(Exception):
            rest(f"{url}/connectors/{name}", "DELETE")


async def plain_consume(bootstrap: str, topic: str, n: int, path: Path, group: str,
                        timeout: float) -> Figure:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    c0, t0 = time.process_time(), time.perf_counter()
    await consumer.start()
    got = 0
    try:
        with open(path, "a", encoding="utf-8") as out:
            while got < n:
                if time.perf_counter() - t0 > timeout:
                    return Figure(got, time.perf_counter() - t0, error=f"only {got} of {n} lines")
                batch = await consumer.getmany(timeout_ms=200)
                for messages in batch.values():
                    out.write("".join(render(json.loads(m.value)) + "\n" for m in messages))
                    got += len(messages)
            out.flush()
            # The clock stops where the worker's does: all lines in the file. Like the sink
            # (flush = fsync, then commit, every offset.flush.interval.ms) the data is made durable
            # before the offsets are committed, but untimed, as the worker's is.
            fig = Figure(got, time.perf_counter() - t0, time.process_time() - c0)
            os.fsync(out.fileno())
        await consumer.commit()
    finally:
        await consumer.stop()
    lines = count_lines(path)
    if lines != n:
        fig.error = f"{lines} lines in the file, expected {n}"
    return fig


async def worker_sink(url: str, topic: str, n: int, path: Path, pid: int, name: str,
                      timeout: float) -> Figure:
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(path),
              "tasks.max": "1"}
    c0, t0 = process_cpu_seconds(pid), time.perf_counter()
    rest(url + "/connectors", "POST", {"name": name, "config": config})
    try:
        got, lines = 0, LineCounter(path)
        while got < n:
            if time.perf_counter() - t0 > timeout:
                return Figure(got, time.perf_counter() - t0, error=f"only {got} of {n} lines")
            await asyncio.sleep(0.01)
            got = lines()
        fig = Figure(n, time.perf_counter() - t0, process_cpu_seconds(pid) - c0)
    finally:
        with contextlib.suppress(Exception):
            rest(f"{url}/connectors/{name}", "DELETE")
    if count_lines(path) != n:
        fig.error = f"{count_lines(path)} lines in the file, expected {n}"
    return fig


class Profiler:
    """``py-spy record`` attached to the worker of one path (--profile PREFIX): the standalone
    worker for ``source-*``/``sink-*``, the distributed ones for ``dist-*``, ``eos-*`` and
    ``eos_before-*``."""

    def __init__(self, procs: Processes, prefix: str | None, work: Path) -> None:
        self.procs, self.prefix, self.work = procs, prefix, work
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, label: str, pid: int) -> None:
        if not self.prefix:
            return
        pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        out = f"{self.prefix}-{label}.txt"
        self.proc = self.procs.start([pyspy, "record", "--format", "raw", "--rate", "250", "--gil",
                                      "--pid", str(pid), "--output", out],
                                     self.work / f"py-spy-{label}.log",
                                     stop_signal=signal.SIGINT)  # py-spy writes on SIGINT
        time.sleep(0.5)  # let py-spy attach before the clock starts
        print(f"    profiling the worker into {out}", flush=True)

    def stop(self) -> None:
        if self.proc is not None:
            self.procs.stop(self.proc, timeout=20)
            self.proc = None


# ------------------------------------------------------------------------------------------------
# the run


def start_kafka(work: Path) -> Any:
    """Apache Kafka 4.4 (one KRaft node, tests/reference/kafka.py) with kafka-server-start.sh's
    JVM options (kafka_node.py), its data under ``work``."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from kafka_node import SERVER_JVM_OPTS
    from reference.kafka import KafkaNode

    return KafkaNode(free_port(), work / "kafka", java_opts=SERVER_JVM_OPTS).start()


async def run(args: argparse.Namespace, procs: Processes, work: Path,
              bootstrap: str, broker: subprocess.Popen[bytes] | None) -> dict[str, PathResult]:
    """Every round against the broker at ``bootstrap`` (``broker``: its process when ours)."""
    url, worker = await start_worker(procs, work, bootstrap)
    print(f"  worker on {url} (pid {worker.pid})", flush=True)
    eos_url, eos_worker = await start_eos_worker(procs, work, bootstrap)
    print(f"  exactly-once worker on {eos_url} (pid {eos_worker.pid})", flush=True)
    dist_url, dist_worker = await start_eos_worker(procs, work, bootstrap, exactly_once=False)
    print(f"  at-least-once distributed worker on {dist_url} (pid {dist_worker.pid})", flush=True)
    before: tuple[str, subprocess.Popen[bytes]] | None = None
    before_alos: tuple[str, subprocess.Popen[bytes]] | None = None
    if args.before_tree:
        before = await start_eos_worker(procs, work, bootstrap, Path(args.before_tree))
        print(f"  exactly-once worker from {args.before_tree} on {before[0]} "
              f"(pid {before[1].pid})", flush=True)
        before_alos = await start_worker(procs, work, bootstrap, Path(args.before_tree))
        print(f"  standalone worker from {args.before_tree} on {before_alos[0]} "
              f"(pid {before_alos[1].pid})", flush=True)
    profiler = Profiler(procs, args.profile, work)

    def broker_cpu() -> float:
        return process_cpu_seconds(broker.pid) if broker is not None else 0.0

    def cpu_note(fig: Figure) -> str:
        per = 100_000 / max(fig.records, 1)
        return (f"  (CPU s/100k: worker {fig.cpu_s * per:.2f}"
                + (f", broker {fig.broker_cpu_s * per:.2f}" if broker is not None else "") + ")")
    # "eos": the figure of record, against the standalone at-least-once worker timed by the
    # same read_committed reader (like with like in timing; the least flattering worker);
    # "eos_offsets": against that worker's end-offset clock (two clocks: the reader counts
    # against exactly-once);
    # flattering: no internal topics to read); "eos_dist": against an at-least-once distributed
    # worker of the same config (like with like: the cost of the transactions alone);
    # "dist": what the distributed worker itself costs an at-least-once source.
    results = {"source": PathResult("DataGen -> topic"),
               "sink": PathResult("topic -> FileStreamSink"),
               "eos": PathResult("DataGen EOS / ALOS standalone"),
               "eos_offsets": PathResult("EOS / ALOS st., end offsets"),
               "eos_dist": PathResult("DataGen EOS / ALOS distrib."),
               "dist": PathResult("ALOS distrib. / standalone")}
    if before is not None:
        results["eos_before"] = PathResult("  EOS --before-tree / ALOS st.")
        results["before"] = PathResult("  the same, both --before-tree")
    n, timeout = args.records, args.timeout
    for r in range(args.repeat):
        if args.repeat > 1:
            print(f"  -- round {r + 1} of {args.repeat}", flush=True)
        wtopic, ptopic = f"bench-worker-{r}", f"bench-plain-{r}"
        await create_topic(bootstrap, wtopic, args.partitions)
        await create_topic(bootstrap, ptopic, args.partitions)

        profiler.start(f"source-{r}", worker.pid)
        b0 = broker_cpu()
        try:
            fig = await worker_source(url, bootstrap, wtopic, n, worker.pid, f"src-{r}",
                                      args.partitions, timeout)
        finally:
            profiler.stop()
        fig.broker_cpu_s = broker_cpu() - b0
        results["source"].worker.append(fig)
        print(f"    source worker: {fig.records_per_s:>10,.0f} records/s"
              + (f"  ERROR {fig.error}" if fig.error else "") + cpu_note(fig), flush=True)
        before_alos_fig: Figure | None = None
        if before_alos is not None:
            btopic = f"bench-worker-before-{r}"
            await create_topic(bootstrap, btopic, args.partitions)
            b0 = broker_cpu()
            before_alos_fig = await worker_source(before_alos[0], bootstrap, btopic, n,
                                                  before_alos[1].pid, f"src-before-{r}",
                                                  args.partitions, timeout)
            before_alos_fig.broker_cpu_s = broker_cpu() - b0
            print(f"    source (before):{before_alos_fig.records_per_s:>9,.0f} records/s"
                  + (f"  ERROR {before_alos_fig.error}" if before_alos_fig.error else "")
                  + cpu_note(before_alos_fig), flush=True)
        dist_runs = [("dist", dist_url, dist_worker, "ALOS distrib.:"),
                     ("eos", eos_url, eos_worker, "source EOS:   "),
                     ("alos_read", url, worker, "ALOS st. read:")]
        if before is not None:
            dist_runs.append(("eos_before", *before, "EOS (before):"))
        # each distributed worker in turn first, so none is always the one right after the
        # standalone source
        shift = r % len(dist_runs)
        figs: dict[str, Figure] = {}
        for key, e_url, e_worker, label in dist_runs[shift:] + dist_runs[:shift]:
            etopic = f"bench-{key}-{r}"
            await create_topic(bootstrap, etopic, args.partitions)
            profiler.start(f"{key}-{r}", e_worker.pid)
            b0 = broker_cpu()
            try:
                fig = await source_read_back(e_url, bootstrap, etopic, n, e_worker.pid,
                                             f"{key}-{r}", timeout)
            finally:
                profiler.stop()
            fig.broker_cpu_s = broker_cpu() - b0
            figs[key] = fig
            print(f"    {label} {fig.records_per_s:>10,.0f} records/s"
                  + (f"  ERROR {fig.error}" if fig.error else "") + cpu_note(fig), flush=True)
        alos = results["source"].worker[-1]
        results["dist"].worker.append(figs["dist"])
        results["dist"].plain.append(alos)
        results["eos"].worker.append(figs["eos"])
        results["eos"].plain.append(figs["alos_read"])
        results["eos_offsets"].worker.append(figs["eos"])
        results["eos_offsets"].plain.append(alos)
        results["eos_dist"].worker.append(figs["eos"])
        results["eos_dist"].plain.append(figs["dist"])
        if before is not None and before_alos_fig is not None:
            results["eos_before"].worker.append(figs["eos_before"])
            results["eos_before"].plain.append(figs["alos_read"])
            results["before"].worker.append(figs["eos_before"])
            results["before"].plain.append(before_alos_fig)
        fig = await plain_produce(bootstrap, ptopic, n)
        results["source"].plain.append(fig)
        print(f"    source plain:  {fig.records_per_s:>10,.0f} records/s", flush=True)

        # Both sinks read the topic the worker wrote (the same N records).
        profiler.start(f"sink-{r}", worker.pid)
        try:
            fig = await worker_sink(url, wtopic, n, work / f"sink-worker-{r}.txt", worker.pid,
                                    f"sink-{r}", timeout)
        finally:
            profiler.stop()
        results["sink"].worker.append(fig)
        print(f"    sink worker:   {fig.records_per_s:>10,.0f} records/s"
              + (f"  ERROR {fig.error}" if fig.error else ""), flush=True)
        fig = await plain_consume(bootstrap, wtopic, n, work / f"sink-plain-{r}.txt",
                                  f"plain-{r}", timeout)
        results["sink"].plain.append(fig)
        print(f"    sink plain:    {fig.records_per_s:>10,.0f} records/s"
              + (f"  ERROR {fig.error}" if fig.error else ""), flush=True)
        _check_alive(worker, "worker", work / "worker.log")
        _check_alive(eos_worker, "exactly-once worker", work / "bench-eos.log")
        _check_alive(dist_worker, "at-least-once distributed worker", work / "bench-dist.log")
        if broker is not None:
            _check_alive(broker, "broker", work / "broker.log")
        if r == 0:
            same = sorted(Path(work / "sink-worker-0.txt").read_text().splitlines()) == sorted(
                Path(work / "sink-plain-0.txt").read_text().splitlines())
            if not same:
                results["sink"].worker[-1].error = "worker and plain files differ"
    return results


# Rows shown for what they explain, without a target of their own: the exactly-once target is
# judged against the standalone at-least-once worker timed by the same reader ("eos").
INFORMATIVE = {"eos_offsets", "eos_dist", "dist", "eos_before", "before"}


def _median(values: list[float]) -> float:
    if not values:
        return 0.0
    ranked = sorted(values)
    mid = len(ranked) // 2
    return ranked[mid] if len(ranked) % 2 else (ranked[mid - 1] + ranked[mid]) / 2


def render_table(results: dict[str, PathResult]) -> tuple[str, list[dict[str, Any]]]:
    lines = [f"{'path':<31}{'worker rec/s':>13}{'plain rec/s':>13}{'ratio':>8}"
             f"{'worker CPU':>11}{'CPU s/100k':>12}{'target':>8}{'':>7}"]
    checks = []
    for key, res in results.items():
        w, p = median(res.worker), median(res.plain)
        ratio = paired_ratio(res)
        ok = not w.error and not p.error and ratio >= TARGET
        cpu = 100 * w.cpu_s / w.seconds if w.seconds else 0.0
        per_100k = _median([100_000 * f.cpu_s / f.records for f in res.worker if f.records])
        informative = key in INFORMATIVE
        verdict = "-" if informative else ("pass" if ok else "short")
        lines.append(f"{res.name:<31}{w.records_per_s:>13,.0f}{p.records_per_s:>13,.0f}"
                     f"{ratio:>7.2f}x{cpu:>10.0f}%{per_100k:>12.2f}"
                     + (f"{'':>8}" if informative else f"{TARGET:>7.1f}x") + f"{verdict:>7}")
        checks.append({"path": key, "ratio": round(ratio, 3),
                       "target": None if informative else TARGET,
                       "worker_cpu_s_per_100k": round(per_100k, 3),
                       "round_ratios": [round(a.records_per_s / b.records_per_s, 3)
                                        for a, b in zip(res.worker, res.plain, strict=False)
                                        if b.records_per_s],
                       "result": verdict,
                       "worker": w.as_dict(), "plain": p.as_dict(),
                       "runs": {"worker": [f.as_dict() for f in res.worker],
                                "plain": [f.as_dict() for f in res.plain]}})
    return "\n".join(lines), checks


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--quick", action="store_true", help="30k records, 1 round")
    p.add_argument("--records", type=int, default=None, help="records per path (default 200k)")
    p.add_argument("--repeat", type=int, default=None, help="rounds, median reported (default 3)")
    p.add_argument("--partitions", type=int, default=1, help="partitions of the topics")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per path")
    p.add_argument("--json", metavar="PATH", help="also write a JSON summary")
    p.add_argument("--profile", metavar="PREFIX", help="py-spy the worker into PREFIX-*.txt")
    p.add_argument("--data-parent", default=None, help="parent of the temp work dir")
    p.add_argument("--keep-data", action="store_true", help="keep the work dir")
    p.add_argument("--before-tree", metavar="DIR",
                   help="also run the exactly-once row with a worker from this checkout "
                        "(e.g. a git archive of an older commit), in the same rounds")
    p.add_argument("--kafka", action="store_true",
                   help="also run every row with Apache Kafka 4.4 as the broker")
    args = p.parse_args(argv)
    if args.records is None:
        args.records = 30_000 if args.quick else 200_000
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="connect-perf-", dir=args.data_parent))
    procs = Processes()
    failed = False
    try:
        print(f"connect_perf: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
              f"{args.records:,} records x {args.repeat} round(s), work dir {work}", flush=True)
        load = os.getloadavg()
        brokers = ["ours", "kafka"] if args.kafka else ["ours"]
        tables: list[tuple[str, dict[str, PathResult]]] = []
        for name in brokers:
            where = work / name
            where.mkdir()
            if name == "ours":
                bootstrap, broker = start_broker(procs, where)
                print(f"  our broker on {bootstrap} (pid {broker.pid})", flush=True)
                try:
                    tables.append((name, asyncio.run(run(args, procs, where, bootstrap,
                                                         broker))))
                finally:
                    procs.close()  # workers and broker, before the next broker starts
            else:
                kafka = start_kafka(where)
                print(f"  Apache Kafka on {kafka.bootstrap}", flush=True)
                try:
                    tables.append((name, asyncio.run(run(args, procs, where, kafka.bootstrap,
                                                         None))))
                finally:
                    procs.close()
                    kafka.stop()
        load_after = os.getloadavg()
        failed = any(f.error for _n, results in tables for r in results.values()
                     for f in r.worker + r.plain)
        print()
        print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print(f"load average (1/5/15 min) before {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}, "
              f"after {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}")
        summary = []
        for name, results in tables:
            table, checks = render_table(results)
            print(f"\nbroker: {'ours (bundled)' if name == 'ours' else 'Apache Kafka 4.4'}")
            print(table)
            summary.append({"broker": name, "paths": checks})
        print("(the EOS rows' 'plain' column is an at-least-once worker's DataGen figure of the "
              "same round: the standalone worker's (timed by the same read_committed reader, or by "
              "end offsets), or the distributed one's of the same config with "
              "exactly.once.source.support=disabled; the exactly-once target is judged against "
              "the standalone one timed by the reader; 'CPU s/100k' is the worker "
              "process's user+system CPU per 100,000 records, median of the rounds)")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "command": sys.argv, "python": platform.python_version(),
                "cpus": os.cpu_count(), "records": args.records, "repeat": args.repeat,
                "partitions": args.partitions, "load_before": load, "load_after": load_after,
                "brokers": summary}, indent=2) + "\n")
            print(f"JSON summary written to {args.json}")
    except KeyboardInterrupt:
        print("\nconnect_perf: interrupted; stopping processes", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"connect_perf: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        failed = True
        for name in ("ours/worker.log", "ours/bench-eos.log", "ours/bench-dist.log",
                     "ours/broker.log",
                     "kafka/worker.log", "kafka/bench-eos.log"):
            log = work / name
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-20:]
                print(f"--- last lines of {name} ---", *tail, sep="\n", file=sys.stderr)
    finally:
        procs.close()
        if args.keep_data:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
