"""Streams throughput: our KafkaStreams against a hand loop, Quix, Faust and Kafka Streams (JVM).

End-to-end records/s on the bundled broker (its own process, fresh data dir) for four workloads
over the same input, every framework measured the same way in one run.

Run (needs the ``bench`` extra: ``pip install -e '.[bench]'``; Quix Streams pins
confluent-kafka<2.13, which clashes with the repository's 2.16.1 pin, so it runs in its own
virtualenv, ``.bench/quix-venv``, made by ``make bench-deps`` or on first use from
``benchmarks/quix-requirements.txt``)::

    python benchmarks/streams_perf.py                  # full run: 200k records, ~25 min (Faust ~10)
    python benchmarks/streams_perf.py --quick          # 20k records
    python benchmarks/streams_perf.py --only count,ours --json out.json
    python benchmarks/streams_perf.py --profile prof/ --only ours   # py-spy on our runtime
    python benchmarks/streams_perf.py --quick --only ours --rounds 3 --ours-tree /tmp/old
        # medians of 3 rounds, our apps importing streams from another tree (same broker)
    python benchmarks/streams_perf.py --quick --only ours --rounds 3 --before-tree /tmp/old
        # every ours row twice per round, this tree and /tmp/old (``@before`` rows) one after
        # the other on the same broker and input, then a before/after table of their medians

Workloads, over N JSON page views keyed by user id in a 4-partition topic (generated with
confluent-kafka before the runs, not timed; timestamps in order, 10 minutes of event time):

  (a) filter_map    drop short views, map each to a smaller record
  (b) count         count views per user (KTable updates to the output topic)
  (c) window_count  count views per user in 10 s tumbling windows
  (d) join          join views with a pre-loaded users table (inner; ~5 % unknown users)

Variants per workload: ``ours-alos`` and ``ours-eos``, our runtime under at_least_once and
exactly_once_v2 (default commit intervals: 30 s / 100 ms; default record cache, so (b) and (c)
forward deduplicated updates as Kafka Streams does, and the checker only needs every key's
final count); ``ours-alos-nocache`` and ``ours-eos-nocache``, the same with
``statestore.cache.max.bytes=0``, which forward every update: as many output records as the
other variants emit; ``hand`` (an aiokafka consume-transform-produce loop, state in a dict,
batched as ours: records appended to a batch per partition, every batch handed to the producer
with ``send_batch`` once per poll, deliveries awaited before each commit, every 5 s);
``quix`` (Quix Streams, at-least-once default) and ``faust`` (faust-streaming, rocksdict
store, at-least-once default); ``ks-alos``, ``ks-eos``, ``ks-alos-nocache`` and
``ks-eos-nocache``, the same four workloads written for Kafka Streams 4.4.0 in Java
(``benchmarks/kstreams/``, a Maven module pinned as tests/reference/pom.xml is, built on first
use into the git-ignored ``.bench/kstreams/``; default JVM options unless ``--ks-jvm-opt``),
with the same settings as ours: guarantee, cache on or off, default commit intervals, String
keys, JSON values, Long counts and time-windowed keys serialized as ours are, so one checker
verifies every row. Under at_least_once with its cache, Kafka Streams forwards (b)/(c) only at
a commit, every 30 s; ours also flushes when caught up, so those two cells are not like for
like. JVM start-up and class loading happen before READY, outside the clock (like the Python
children's imports); JIT warm-up happens inside it. Without java or mvn those rows are skipped
with one line saying why. Each runs in a child process
(``streams_perf_apps.py``): imports and app construction happen before the clock starts;
the clock runs from "GO" to the moment a read_committed consumer in this process has seen the
complete expected output (the exact output count for (a)/(d); every key's final expected count
for (b)/(c)); then it keeps reading for a quiet second and verifies the whole output (counts,
checksums, no extra or duplicate records), so a fast wrong answer fails the row.

``--broker kafka`` runs every row on Apache Kafka 4.4.0 instead of the bundled broker.
The broker runs with ``group.initial.rebalance.delay.ms=0`` (Kafka's 3 s default would add
the same constant to every row). Every process started (broker, apps, py-spy) is stopped on
exit, including on Ctrl-C and SIGTERM. Exit status: 0 when every row ran (targets missed are
reported, not failed), 1 when a row of ours or hand failed, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_common import (
    REPO_ROOT,
    Processes,
    process_cpu_seconds,
    quix_python,
    quix_versions,
    raise_on_sigterm,
    start_broker,
)

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover - reported to the user
    sys.exit("streams_perf: confluent-kafka is missing; pip install -e '.[bench]'")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import streams_perf_apps as apps  # noqa: E402

APPS = Path(apps.__file__).resolve()
WORKLOADS = ("filter_map", "count", "window_count", "join")
VARIANTS = ("ours-alos", "ours-eos", "ours-alos-nocache", "ours-eos-nocache", "hand", "quix",
            "faust", "ks-alos", "ks-eos", "ks-alos-nocache", "ks-eos-nocache")
HEADS = {"ours-alos": "alos", "ours-eos": "eos", "ours-alos-nocache": "alos-nc",
         "ours-eos-nocache": "eos-nc", "ks-alos-nocache": "ks-alos-nc",
         "ks-eos-nocache": "ks-eos-nc"}  # table column headings
KSTREAMS = Path(__file__).resolve().parent / "kstreams"  # the Maven module of the ks rows
KSTREAMS_BUILD = REPO_ROOT / ".bench" / "kstreams"  # git-ignored: classes and jars
KSTREAMS_MAIN = "streamsperf.StreamsPerfApp"
TARGETS = {"ours/hand time": 1.5, "ours/quix rec/s": 1.5, "ours/faust rec/s": 3.0,
           "eos/alos time": 1.15}
REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-south", "sa-east")
PAGES = ("/", "/search", "/cart", "/checkout", "/account", "/help", "/blog")
COUNTRIES = ("DE", "FR", "US", "BR", "IN", "JP", "GB", "NL", "ES", "SE")
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Safari/605.1.15",
          "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148")

# ------------------------------------------------------------------------------------------------
# processes


def create_topics(bootstrap: str, topics: dict[str, int], compacted: bool = False) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"cleanup.policy": "compact"} if compacted else {}
    futures = admin.create_topics([NewTopic(t, n, 1, config=config) for t, n in topics.items()],
                                  operation_timeout=10, request_timeout=15)
    for fut in futures.values():
        try:
            fut.result(20)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


# ------------------------------------------------------------------------------------------------
# input and expected output


@dataclass
class Dataset:
    records: int
    partitions: int
    users: dict[str, dict[str, Any]]
    filter_count: int
    filter_secs_sum: float
    counts: dict[str, int]
    window_counts: dict[tuple[str, int], int]
    join_count: int


def generate(bootstrap: str, n: int, partitions: int, n_users: int, seed: int = 7) -> Dataset:
    """Produce users and page views (murmur2-partitioned like the Java client); expected outputs."""
    rng = random.Random(seed)
    users = {f"user-{i:05d}": {"user_id": f"user-{i:05d}", "name": f"User {i}",
                               "region": REGIONS[i % len(REGIONS)],
                               "tier": ("free", "pro", "team")[i % 3]}
             for i in range(n_users)}
    unknown = max(1, n_users // 20)  # views from users missing in the table: dropped by the join
    ids = [f"user-{i:05d}" for i in range(n_users + unknown)]
    span_ms = 600_000
    base = (int(time.time() * 1000) - 3_600_000) // apps.WINDOW_MS * apps.WINDOW_MS
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "linger.ms": 20, "batch.size": 1_000_000, "acks": "all",
                         "queue.buffering.max.messages": 2_000_000, "enable.metrics.push": False})
    for u in users.values():
        producer.produce(apps.USERS_TOPIC, json.dumps(u).encode(), u["user_id"].encode(),
                         timestamp=base - 60_000)
    counts: Counter[str] = Counter()
    windows: Counter[tuple[str, int]] = Counter()
    filter_count = join_count = 0
    secs_sum = 0.0
    for i in range(n):
        uid = ids[int(rng.paretovariate(1.2) * 7) % len(ids)] if i % 3 else rng.choice(ids)
        ts = base + i * span_ms // n
        view = {"user_id": uid, "page": f"{rng.choice(PAGES)}/{rng.randrange(500)}",
                "referrer": rng.choice(("https://www.google.com/", "", "https://t.co/x")),
                "ua": rng.choice(AGENTS), "country": rng.choice(COUNTRIES),
                "duration_ms": int(rng.expovariate(1 / 2000)), "ts": ts}
        counts[uid] += 1
        windows[(uid, apps.window_start(ts))] += 1
        if apps.keep(view):
            filter_count += 1
            secs_sum += apps.mapped(view)["secs"]
        if uid in users:
            join_count += 1
        while True:
            try:
                producer.produce(apps.VIEWS_TOPIC, json.dumps(view).encode(), uid.encode(),
                                 timestamp=ts)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("input not delivered")
    return Dataset(n, partitions, users, filter_count, secs_sum, dict(counts), dict(windows),
                   join_count)


def produce_users_to(bootstrap: str, topic: str, users: dict[str, dict[str, Any]],
                     partitions: int) -> None:
    """The users as a Faust table changelog: JSON key and value, partitioned like the views."""
    from aiokafka.partitioner import murmur2

    producer = Producer({"bootstrap.servers": bootstrap, "enable.metrics.push": False})
    for uid, u in users.items():
        # Faust writes table keys as JSON, in the partition of the source record (raw user id).
        partition = (murmur2(uid.encode()) & 0x7FFFFFFF) % partitions
        producer.produce(topic, json.dumps(u).encode(), json.dumps(uid).encode(),
                         partition=partition)
    producer.flush(30)


# ------------------------------------------------------------------------------------------------
# the output checker


class Checker(threading.Thread):
    """Reads the output topic (read_committed) and notes when the expected output is complete."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, workload: str,
                 variant: str, data: Dataset) -> None:
        super().__init__(daemon=True)
        self.workload, self.variant, self.data = workload, variant, data
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}",
                                  "isolation.level": "read_committed",
                                  "enable.auto.commit": False, "enable.partition.eof": False,
                                  "fetch.wait.max.ms": 20, "enable.metrics.push": False})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.done = threading.Event()
        self.done_at = 0.0
        self.first_at = 0.0  # when the first output record arrived (start-up latency)
        self.stopping = threading.Event()
        self.count = 0
        self.values: list[bytes] = []  # (a)/(d): every output value, checked after the run
        self.latest: dict[Any, int] = {}  # (b)/(c): latest count per key
        self.good = 0  # keys whose latest count equals the expected one
        self.error: str | None = None
        if workload == "count":
            self.expected: dict[Any, int] = data.counts
        elif workload == "window_count":
            self.expected = data.window_counts
        else:
            self.expected = {}
        self.target = {"filter_map": data.filter_count, "join": data.join_count}.get(workload, 0)

    def decode(self, key: bytes, value: bytes) -> tuple[Any, int]:
        if self.workload == "count":
            if self.variant.startswith(("ours", "ks")) or self.variant == "hand":
                return key.decode(), int.from_bytes(value, "big", signed=True)
            return key.decode(), int(json.loads(value))
        if self.variant.startswith(("ours", "ks")):
            # Serdes.windowed / Kafka's TimeWindowedSerializer: key bytes + 8-byte window start
            return (key[:-8].decode(), int.from_bytes(key[-8:], "big")), \
                int.from_bytes(value, "big", signed=True)
        v = json.loads(value)
        count = v["value"] if self.variant == "quix" else v["count"]
        return (key.decode(), int(v["start"])), int(count)

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # reported as the row's error
            self.error = f"checker: {exc!r}"
            self.done.set()

    def _run(self) -> None:
        keyed = bool(self.expected)
        expected, latest = self.expected, self.latest
        while not self.stopping.is_set():
            for msg in self.consumer.consume(1000, 0.05):
                if msg.error():
                    raise KafkaException(msg.error())
                if not self.count:
                    self.first_at = time.perf_counter()
                self.count += 1
                if keyed:
                    key, c = self.decode(msg.key(), msg.value())
                    old = latest.get(key)
                    latest[key] = c
                    want = expected.get(key)
                    if old == want and old is not None:
                        self.good -= 1
                    if c == want:
                        self.good += 1
                    if self.good == len(expected) and not self.done.is_set():
                        self.done_at = time.perf_counter()
                        self.done.set()
                else:
                    self.values.append(msg.value())
                    if self.count >= self.target and not self.done.is_set():
                        self.done_at = time.perf_counter()
                        self.done.set()
        self.consumer.close()

    def verify(self) -> str | None:
        """None when the output is exactly right; otherwise what is wrong."""
        d = self.data
        if self.workload in ("count", "window_count"):
            wrong = [k for k, v in self.expected.items() if self.latest.get(k) != v]
            extra = [k for k in self.latest if k not in self.expected]
            if wrong or extra:
                k = (wrong or extra)[0]
                return (f"{len(wrong)} keys with a wrong count, {len(extra)} unexpected keys; "
                        f"e.g. {k}: got {self.latest.get(k)}, want {self.expected.get(k)}")
            return None
        if self.count != self.target:
            wrong = ""
            if self.workload == "join":
                seen = Counter(json.loads(v)["user"] for v in self.values)
                off = sorted(u for u in d.users if seen.get(u, 0) != d.counts.get(u, 0))
                wrong = f"; users with a wrong number of joined views: {off[:8]}"
            return f"{self.count} output records, expected {self.target}{wrong}"
        if self.workload == "filter_map":
            total = sum(json.loads(v)["secs"] for v in self.values)
            if abs(total - d.filter_secs_sum) > 1e-6 * max(1.0, d.filter_secs_sum):
                return f"sum of secs {total:.3f}, expected {d.filter_secs_sum:.3f}"
            return None
        bad = 0
        for v in self.values:
            out = json.loads(v)
            user = d.users.get(out["user"])
            if user is None or out["region"] != user["region"] or out["tier"] != user["tier"]:
                bad += 1
        return f"{bad} joined records with a wrong user" if bad else None


# ------------------------------------------------------------------------------------------------
# one row


@dataclass
class Row:
    workload: str
    variant: str
    seconds: float = 0.0
    first_output_s: float = 0.0  # from GO to the first output record (start-up, first commit)
    records: int = 0
    outputs: int = 0
    app_cpu_s: float = 0.0
    broker_cpu_s: float = 0.0
    error: str | None = None
    version: str = ""

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 and not self.error else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["records_per_s"] = round(self.rate, 1)
        return d


def round_robin(todo: list[tuple[str, str]], rounds: int) -> list[tuple[str, str]]:
    """Every row ``rounds`` times, round after round (a drift of the machine's speed spreads
    over all rows), the order of a workload's variants reversed every other round."""
    order: list[tuple[str, str]] = []
    for i in range(rounds):
        for w in WORKLOADS:
            variants = [v for ww, v in todo if ww == w]
            order += [(w, v) for v in (variants if i % 2 == 0 else variants[::-1])]
    return order


def median_row(runs: list[Row]) -> Row:
    """The run with the median time (the lower middle one for an even count); a failed run
    stands for the row, since a row must work every time."""
    failed = [r for r in runs if r.error]
    if failed:
        return failed[0]
    ranked = sorted(runs, key=lambda r: r.seconds)
    return ranked[(len(ranked) - 1) // 2]


def child_argv(args: argparse.Namespace, variant: str) -> list[str]:
    """The child's command up to the workload: a Python child names its framework first."""
    if variant.startswith("ks"):
        cp = f"{KSTREAMS_BUILD / 'target' / 'classes'}{os.pathsep}{KSTREAMS_BUILD / 'lib'}/*"
        return [args.java, *args.ks_jvm_opts, "-cp", cp, KSTREAMS_MAIN]
    python = args.quix_python if variant == "quix" else sys.executable
    return [python, str(APPS), variant.split("-")[0]]


def run_row(args: argparse.Namespace, procs: Processes, work: Path, bootstrap: str,
            broker: subprocess.Popen[bytes], data: Dataset, workload: str, variant: str,
            versions: dict[str, str], broker_cpu_pid: int | None = None) -> Row:
    """One row; the broker's CPU is read from ``broker_cpu_pid`` (default: ``broker``'s)."""
    cpu_pid = broker_cpu_pid or broker.pid
    row = Row(workload, variant, records=data.records,
              version=versions.get("before" if variant.endswith("@before")
                                   else variant.split("-")[0], ""))
    variant, _, side = variant.partition("@")  # "ours-alos@before": that row on --before-tree
    tag = f"{workload}-{variant}{'-' + side if side else ''}-{int(time.time() * 1000) % 10**8}"
    app_id, out = f"perf-{tag}", f"out-{tag}"
    create_topics(bootstrap, {out: data.partitions})
    framework = variant.split("-")[0]
    guarantee = "exactly_once_v2" if "-eos" in variant else "at_least_once"
    if framework == "faust" and workload == "join":
        changelog = f"{app_id}-users-changelog"
        create_topics(bootstrap, {changelog: data.partitions}, compacted=True)
        produce_users_to(bootstrap, changelog, data.users, data.partitions)
    state_dir = work / "state" / tag
    state_dir.mkdir(parents=True)
    checker = Checker(bootstrap, out, data.partitions, workload, variant, data)
    checker.start()
    log_path = work / f"{tag}.log"
    tree = args.ours_tree if framework == "ours" and args.ours_tree else str(REPO_ROOT)
    if side == "before":
        tree = args.before_tree
    env = dict(os.environ, PYTHONPATH=tree, PYTHONUNBUFFERED="1")
    argv = [*child_argv(args, variant), workload, "--bootstrap", bootstrap,
            "--app-id", app_id, "--out", out, "--state-dir", str(state_dir), "--guarantee",
            guarantee, "--partitions", str(data.partitions)]
    if variant.endswith("-nocache"):
        argv += ["--cache-max-bytes", "0"]
    if framework == "ours":
        for item in args.ours_config or ():
            argv += ["--config", item]
    proc = procs.start(argv, log_path, stdin=subprocess.PIPE, env=env, cwd=str(work))
    profiler: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 120
        while b"READY\n" not in log_path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                row.error = _failure(log_path, proc, "did not start")
                return row
            time.sleep(0.05)
        if args.profile and framework == "ours":
            profiler = start_profiler(args, procs, work, proc.pid, workload, variant)
        b0, a0 = process_cpu_seconds(cpu_pid), process_cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        assert proc.stdin is not None
        proc.stdin.write(b"GO\n")
        proc.stdin.flush()
        end = time.monotonic() + args.timeout
        while not checker.done.wait(0.1):
            if proc.poll() is not None:
                row.error = _failure(log_path, proc, "exited")
                break
            if time.monotonic() > end:
                row.error = (f"timed out after {args.timeout:.0f} s with {checker.count} output "
                             f"records; {checker.verify()}")
                break
        row.app_cpu_s = process_cpu_seconds(proc.pid) - a0
        row.broker_cpu_s = process_cpu_seconds(cpu_pid) - b0
        if checker.error:
            row.error = checker.error
        if row.error is None:
            row.seconds = checker.done_at - t0
            row.first_output_s = checker.first_at - t0
            time.sleep(args.quiet)  # late duplicates would show up now
            row.outputs = checker.count
            wrong = checker.verify()
            if wrong:
                row.error = f"WRONG OUTPUT: {wrong}"
    finally:
        if profiler is not None:
            procs.stop(profiler, signal.SIGINT, 30)
        checker.stopping.set()
        checker.join(10)
        code = procs.stop(proc, signal.SIGTERM, 30)
        if row.error is None and code not in (0, -signal.SIGTERM, 128 + signal.SIGTERM, None):
            row.error = _failure(log_path, proc, f"exited with {code} on SIGTERM")
    return row


def _failure(log_path: Path, proc: subprocess.Popen[bytes], what: str) -> str:
    lines = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.strip()]
    errs = [ln for ln in lines if "Error" in ln or "error" in ln or "Exception" in ln]
    last = (errs or lines or ["(no output)"])[-1].strip()
    return f"{what} (code {proc.poll()}): {last[:300]} [log: {log_path}]"


# ------------------------------------------------------------------------------------------------
# profiling (py-spy raw output: "frame;frame;... count" per line)


def start_profiler(args: argparse.Namespace, procs: Processes, work: Path, pid: int,
                   workload: str, variant: str) -> subprocess.Popen[bytes]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    out = Path(args.profile) / f"{workload}-{variant}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = procs.start([spy, "record", "--format", "raw", "--rate", "200", "--pid", str(pid),
                        "--threads", "--idle", "--output", str(out)], work / "py-spy.log")
    time.sleep(0.5)  # attached before the clock starts
    return proc


def summarize_profile(path: Path, top: int = 15) -> str:
    """Self time per function and inclusive time per streams/ function, in % of samples."""
    selfs: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        count = int(n)
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        selfs[_short(frames[-1])] += count
        for f in {_short(f) for f in frames}:
            incl[f] += count
    if not total:
        return f"{path}: no samples"
    idle = sum(c for f, c in selfs.items() if f.split(" ")[0] in (
        "select", "poll", "epoll_wait", "wait", "_worker", "readline"))
    lines = [f"{path.name}: {total} samples ({100 * idle / total:.0f}% idle in select/wait)",
             "  self time:"]
    lines += [f"    {100 * c / total:5.1f}%  {f}" for f, c in selfs.most_common(top)]
    lines.append("  inclusive (streams/ and aiokafka/ functions):")
    ours = [(f, c) for f, c in incl.most_common() if "streams/" in f or "aiokafka/" in f]
    lines += [f"    {100 * c / total:5.1f}%  {f}" for f, c in ours[:top]]
    return "\n".join(lines)


def _short(frame: str) -> str:
    """'func (path/to/module.py:123)' -> 'func (pkg/module.py)'."""
    name, _, loc = frame.partition(" (")
    loc = loc.rstrip(")").rsplit(":", 1)[0]
    parts = loc.split("/")
    for anchor in ("streams", "aiokafka", "asyncio", "json", "rocksdict", "site-packages"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            loc = "/".join(parts[i:])
            break
    else:
        loc = "/".join(parts[-2:])
    return f"{name} ({loc})"


# ------------------------------------------------------------------------------------------------
# report


def fmt_row(r: Row | None) -> str:
    if r is None:
        return "-"
    if r.error:
        return "FAILED"
    return f"{r.rate:,.0f}"


def ratios(rows: dict[tuple[str, str], Row], workload: str) -> list[dict[str, Any]]:
    def get(v: str) -> Row | None:
        r = rows.get((workload, v))
        return r if r is not None and not r.error else None

    alos, eos, alos_nc, eos_nc, hand, quix, faust = (get(v) for v in VARIANTS[:7])
    ks_alos, ks_eos, ks_alos_nc, ks_eos_nc = (get(v) for v in VARIANTS[7:])

    def time_ratio(a: Row | None, b: Row | None) -> float | None:
        return a.seconds / b.seconds if a and b else None

    def rate_ratio(a: Row | None, b: Row | None) -> float | None:
        return a.rate / b.rate if a and b else None

    def cpu_ratio(a: Row | None, b: Row | None) -> float | None:
        return a.app_cpu_s / b.app_cpu_s if a and b and b.app_cpu_s else None

    # "nocache" rows: statestore.cache.max.bytes=0, so (b)/(c) forward every update, as many
    # records as the hand loop, Quix and Faust emit (the cached rows emit deduplicated ones).
    checks = []
    for name, target_name, value, lower_better in (
        ("ours/hand time", "ours/hand time", time_ratio(alos, hand), True),
        ("nocache/hand time", "ours/hand time", time_ratio(alos_nc, hand), True),
        ("ours/quix rec/s", "ours/quix rec/s", rate_ratio(alos, quix), False),
        ("nocache/quix rec/s", "ours/quix rec/s", rate_ratio(alos_nc, quix), False),
        ("ours/faust rec/s", "ours/faust rec/s", rate_ratio(alos, faust), False),
        ("nocache/faust rec/s", "ours/faust rec/s", rate_ratio(alos_nc, faust), False),
        ("eos/alos time", "eos/alos time", time_ratio(eos, alos), True),
        ("eos/alos nocache time", "eos/alos time", time_ratio(eos_nc, alos_nc), True),
        # No targets: the app's CPU seconds for the same input, the ratio least bent by the
        # machine's other load (a row's time may be bound by the broker or the checker).
        ("nocache/hand app cpu", None, cpu_ratio(alos_nc, hand), True),
        ("ours/quix app cpu", None, cpu_ratio(alos, quix), True),
        # Kafka Streams (JVM), no targets: each guarantee and cache setting against the same.
        # Cached ALOS rows are not like for like on (b)/(c): Kafka Streams flushes its cache
        # only on a commit (every 30 s under at_least_once), ours also when caught up.
        ("ours/ks rec/s", None, rate_ratio(alos, ks_alos), False),
        ("eos/ks-eos rec/s", None, rate_ratio(eos, ks_eos), False),
        ("nocache/ks-nocache rec/s", None, rate_ratio(alos_nc, ks_alos_nc), False),
        ("eos-nc/ks-eos-nc rec/s", None, rate_ratio(eos_nc, ks_eos_nc), False),
        ("nocache/ks-nc app cpu", None, cpu_ratio(alos_nc, ks_alos_nc), True),
        ("eos-nc/ks-eos-nc cpu", None, cpu_ratio(eos_nc, ks_eos_nc), True),
    ):
        target = TARGETS.get(target_name or "")
        if target is None:
            verdict = "info"
        elif value is None:
            verdict = "n/a"
        elif lower_better:
            verdict = "pass" if value <= target else "short"
        else:
            verdict = "pass" if value >= target else "short"
        checks.append({"workload": workload, "ratio": name, "value": value, "target": target,
                       "lower_is_better": lower_better, "verdict": verdict})
    return checks


def render_before_after(rows: dict[tuple[str, str], Row], rounds: int) -> str:
    """Each ours row against its ``@before`` twin: medians of records/s and app CPU seconds."""
    what = f"medians of {rounds} rounds" if rounds > 1 else "one round"
    lines = [f"before/after ({what}; before = --before-tree, after = this tree)",
             f"{'row':<24} {'rec/s before':>12} {'after':>9} {'ratio':>6} "
             f"{'app cpu s before':>16} {'after':>6} {'ratio':>6}"]
    for (w, v), after in rows.items():
        before = rows.get((w, f"{v}@before"))
        if before is None:
            continue
        name = f"{w}/{HEADS.get(v, v)}"
        if after.error or before.error:
            lines.append(f"{name:<24} failed: {(after.error or before.error or '')[:80]}")
            continue
        rate = after.rate / before.rate if before.rate else 0.0
        cpu = after.app_cpu_s / before.app_cpu_s if before.app_cpu_s else 0.0
        lines.append(f"{name:<24} {before.rate:>12,.0f} {after.rate:>9,.0f} {rate:>6.2f} "
                     f"{before.app_cpu_s:>16.2f} {after.app_cpu_s:>6.2f} {cpu:>6.2f}")
    return "\n".join(lines)


def render(rows: dict[tuple[str, str], Row], workloads: list[str], n: int,
           rounds: int = 1) -> tuple[str, list]:
    head = f"{'workload':<13}" + "".join(f"{HEADS.get(v, v):>11}" for v in VARIANTS)
    what = f"medians of {rounds} rounds" if rounds > 1 else "one round"
    lines = [f"records/s ({n:,} input records, {what}; below: output records, and app cpu% / "
             "broker cpu%; alos-nc/eos-nc: statestore.cache.max.bytes=0)", head,
             "-" * len(head)]
    for w in workloads:
        lines.append(f"{w:<13}" + "".join(f"{fmt_row(rows.get((w, v))):>11}" for v in VARIANTS))
        outs, cpu = [], []
        for v in VARIANTS:
            r = rows.get((w, v))
            ok = r is not None and not r.error and r.seconds > 0
            outs.append(f"{r.outputs:>11,}" if ok and r is not None else f"{'':>11}")
            cpu.append(f"{100 * r.app_cpu_s / r.seconds:.0f}/{100 * r.broker_cpu_s / r.seconds:.0f}"
                       if ok and r is not None else "")
            cpu[-1] = f"{cpu[-1]:>11}"
        lines.append(f"{'  outputs':<13}" + "".join(outs))
        lines.append(f"{'  cpu%':<13}" + "".join(cpu))
    checks: list[dict[str, Any]] = []
    for w in workloads:
        checks += ratios(rows, w)
    lines += ["", "targets: ours(alos)/hand time <= 1.5x, ours(alos)/quix rec/s >= 1.5x, "
                  "ours(alos)/faust rec/s >= 3x, eos/alos time <= 1.15x (ours: record cache on;"
                  " nocache: off, the same output count as hand, Quix and Faust)"]
    for c in checks:
        shown = "-" if c["value"] is None else f"{c['value']:.2f}x"
        op = "<=" if c["lower_is_better"] else ">="
        target = "(no target)" if c["target"] is None else f"(target {op} {c['target']:.2f}x)"
        lines.append(f"  {c['workload']:<13} {c['ratio']:<24} {shown:>7}  {target}  "
                     f"{c['verdict']}")
    failed = [r for r in rows.values() if r.error]
    if failed:
        lines += ["", "rows that did not produce a number:"]
        lines += [f"  {r.workload}/{r.variant} ({r.version}): {r.error}" for r in failed]
    return "\n".join(lines), checks


# ------------------------------------------------------------------------------------------------
# main


def kstreams_version() -> str:
    text = (KSTREAMS / "pom.xml").read_text()
    return text.split("<kafka.version>", 1)[1].split("</kafka.version>", 1)[0].strip()


def ensure_kstreams(args: argparse.Namespace) -> str | None:
    """Build the Kafka Streams apps (Maven, into .bench/kstreams/) when missing or older than
    their sources; None when they can run, else the one-line reason to skip them."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        return f"{'java' if java is None else 'mvn'} is not on PATH"
    args.java = java
    sources = [KSTREAMS / "pom.xml", *sorted((KSTREAMS / "src").rglob("*.*"))]
    stamp = KSTREAMS_BUILD / ".built"
    newest = max(p.stat().st_mtime for p in sources)
    if stamp.exists() and stamp.stat().st_mtime >= newest:
        return None
    print(f"  building the Kafka Streams apps ({KSTREAMS} -> {KSTREAMS_BUILD}) ...", flush=True)
    cmd = [mvn, "-B", "-q", "-f", str(KSTREAMS / "pom.xml"),
           f"-Dmaven.repo.local={REPO_ROOT / '.bench' / 'm2'}",
           f"-Dbench.build={KSTREAMS_BUILD}", "compile", "dependency:copy-dependencies",
           "-DincludeScope=runtime", f"-DoutputDirectory={KSTREAMS_BUILD / 'lib'}"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        return "mvn failed: " + " | ".join(tail)
    stamp.touch()
    return None


def versions_of(args: argparse.Namespace, variants: list[str]) -> dict[str, str]:
    import aiokafka

    tree = args.ours_tree or str(REPO_ROOT)
    head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    v = {"ours": f"streams from {tree}" + (f" (commit {head})" if head else ""),
         "hand": f"aiokafka {aiokafka.__version__}"}
    if args.before_tree:
        v["before"] = f"streams from {args.before_tree} (@before rows)"
    if "quix" in variants:
        v["quix"] = quix_versions(args.quix_python)
    if "ks" in variants:
        out = subprocess.run([args.java, "-version"], capture_output=True, text=True)
        jvm = (out.stderr.splitlines() or ["java ?"])[0]
        opts = " ".join(args.ks_jvm_opts) or "default JVM options"
        v["ks"] = f"Kafka Streams {kstreams_version()} ({jvm}; {opts})"
    if "faust" in variants:
        try:
            import faust
            v["faust"] = f"faust-streaming {faust.__version__}"
        except ImportError as exc:
            v["faust"] = f"faust-streaming not importable: {exc}"
    return v


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="20k records instead of 200k")
    p.add_argument("--records", type=int, help="input page views (default 200000, quick 20000)")
    p.add_argument("--users", type=int, default=1000, help="users in the table (default 1000)")
    p.add_argument("--partitions", type=int, default=4, help="input partitions (default 4)")
    p.add_argument("--only", help="comma list of substrings; run only rows whose "
                                  "'workload/variant' name contains one of them (e.g. "
                                  "'count,ours' runs count rows and every ours row; a "
                                  "term ending in $ matches the name's end: 'ours-eos$')")
    p.add_argument("--all-of", help="comma list of substrings that must all match "
                                    "'workload/variant' (e.g. 'join,ours-eos')")
    p.add_argument("--json", metavar="PATH", help="write a JSON summary to PATH")
    p.add_argument("--timeout", type=float, default=600.0, help="per-row timeout, seconds")
    p.add_argument("--quiet", type=float, default=1.0,
                   help="seconds to keep reading after completion, to catch duplicates")
    p.add_argument("--quix-python", help="python that has quixstreams (default: "
                                         ".bench/quix-venv, created on first use)")
    p.add_argument("--profile", metavar="DIR",
                   help="attach py-spy (raw) to our app during its rows; summaries printed")
    p.add_argument("--keep-data", action="store_true", help="keep the temp dir (logs, data)")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every row this many times, round after round; the table shows "
                        "each row's median run (default 1)")
    p.add_argument("--ours-tree", metavar="DIR",
                   help="source tree our apps import streams from (default: this checkout), "
                        "e.g. an older commit exported with git archive, to compare runtimes "
                        "on the same broker")
    p.add_argument("--before-tree", metavar="DIR",
                   help="run every selected ours row also on this tree (an older commit "
                        "exported with git archive), right after the row itself, round after "
                        "round, and print a before/after table of the medians")
    p.add_argument("--ours-config", action="append", metavar="KEY=VALUE",
                   help="an extra config entry for our apps (repeatable), e.g. poll.ms=10")
    p.add_argument("--broker", choices=("bundled", "kafka"), default="bundled",
                   help="the broker every row runs on: ours (bundled, default) or Apache Kafka "
                        "4.4.0 (tests/reference/kafka.py, kafka-server-start.sh JVM options)")
    p.add_argument("--ks-jvm-opt", action="append", dest="ks_jvm_opts", default=[],
                   metavar="OPT", help="a JVM option for the Kafka Streams apps (repeatable; "
                                       "default: none, the JVM's own defaults)")
    args = p.parse_args(argv)
    args.records = args.records or (20_000 if args.quick else 200_000)
    return args


def selected(args: argparse.Namespace) -> list[tuple[str, str]]:
    def matches(term: str, name: str) -> bool:  # "term$": the name ends with term
        return name.endswith(term[:-1]) if term.endswith("$") else term in name

    rows = [(w, v) for w in WORKLOADS for v in VARIANTS]
    if args.only:
        wanted = [s.strip() for s in args.only.split(",") if s.strip()]
        rows = [(w, v) for w, v in rows if any(matches(s, f"{w}/{v}") for s in wanted)]
    if args.all_of:
        needed = [s.strip() for s in args.all_of.split(",") if s.strip()]
        rows = [(w, v) for w, v in rows if all(matches(s, f"{w}/{v}") for s in needed)]
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    todo = selected(args)
    if not todo:
        sys.exit("streams_perf: --only/--all-of matched no row")
    if any(v.startswith("ks") for _w, v in todo):
        why = ensure_kstreams(args)
        if why is not None:
            print(f"streams_perf: skipping the Kafka Streams (JVM) rows: {why}", flush=True)
            todo = [(w, v) for w, v in todo if not v.startswith("ks")]
            if not todo:
                sys.exit("streams_perf: nothing left to run")
    if args.before_tree:
        todo = [(w, x) for w, v in todo
                for x in ((v, f"{v}@before") if v.startswith("ours") else (v,))]
    variants = sorted({v.split("-")[0] for _w, v in todo})
    if "quix" in variants:
        args.quix_python = quix_python(args.quix_python)
    work = Path(tempfile.mkdtemp(prefix="streams-perf-"))
    procs = Processes()
    runs: dict[tuple[str, str], list[Row]] = {}
    rows: dict[tuple[str, str], Row] = {}
    failed = False
    try:
        versions = versions_of(args, variants)
        print(f"streams_perf: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
              f"{args.records:,} records, {args.partitions} partitions, work dir {work}",
              flush=True)
        for k in variants:
            print(f"  {k}: {versions.get(k, '')}", flush=True)
        broker_cpu_pid = None
        if args.broker == "kafka":
            from broker_perf import kafka_unavailable, start_kafka

            why = kafka_unavailable()
            if why is not None:
                sys.exit(f"streams_perf: cannot run on Apache Kafka: {why}")
            node = start_kafka(procs, work, "server", None)
            bootstrap, broker, broker_cpu_pid = node.bootstrap, node.proc, node.cpu_pid
            print(f"  broker: Apache Kafka on {bootstrap} (JVM pid {broker_cpu_pid})",
                  flush=True)
        else:
            bootstrap, broker = start_broker(procs, work)
            print(f"  broker on {bootstrap} (pid {broker.pid})", flush=True)
        create_topics(bootstrap, {apps.VIEWS_TOPIC: args.partitions})
        create_topics(bootstrap, {apps.USERS_TOPIC: args.partitions}, compacted=True)
        t = time.perf_counter()
        data = generate(bootstrap, args.records, args.partitions, args.users)
        print(f"  input produced in {time.perf_counter() - t:.1f} s (not timed): "
              f"{args.records:,} views, {len(data.counts):,} users viewing, "
              f"{len(data.window_counts):,} user-windows, {data.filter_count:,} pass the filter,"
              f" {data.join_count:,} join", flush=True)
        for i, (workload, variant) in enumerate(round_robin(todo, args.rounds)):
            if args.rounds > 1 and i % len(todo) == 0:
                print(f"  round {i // len(todo) + 1} of {args.rounds}", flush=True)
            print(f"  {workload:<13} {variant:<17} ...", end=" ", flush=True)
            row = run_row(args, procs, work, bootstrap, broker, data, workload, variant,
                          versions, broker_cpu_pid)
            runs.setdefault((workload, variant), []).append(row)
            rows[(workload, variant)] = median_row(runs[(workload, variant)])
            if row.error:
                failed |= variant.split("-")[0] in ("ours", "hand")
                print(f"FAILED: {row.error}", flush=True)
            else:
                print(f"{row.rate:>9,.0f} rec/s ({row.seconds:.2f} s, first output after "
                      f"{row.first_output_s:.2f} s, {row.outputs:,} outputs, "
                      f"app cpu {100 * row.app_cpu_s / row.seconds:.0f}%, broker cpu "
                      f"{100 * row.broker_cpu_s / row.seconds:.0f}%)", flush=True)
            if broker.poll() is not None:
                raise RuntimeError(f"the broker died (code {broker.returncode})")
        workloads = [w for w in WORKLOADS if any(w == k[0] for k in rows)]
        table, checks = render({k: r for k, r in rows.items() if "@" not in k[1]}, workloads,
                               args.records, args.rounds)
        print()
        print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print(table)
        if args.before_tree:
            print()
            print(render_before_after(rows, args.rounds))
        if args.rounds > 1:
            print("\nseconds per round (row: each run's time, in run order):")
            for (w, v), rr in runs.items():
                print(f"  {w:<13} {v:<17} " + " ".join(
                    "FAILED" if r.error else f"{r.seconds:.2f}" for r in rr))
        if args.profile:
            print("\nprofiles (py-spy, our app process):")
            for path in sorted(Path(args.profile).glob("*.txt")):
                print(summarize_profile(path))
        if args.json:
            summary = {"command": sys.argv, "broker": args.broker, "python": platform.python_version(),
                       "cpus": os.cpu_count(), "records": args.records,
                       "partitions": args.partitions, "versions": versions,
                       "rounds": args.rounds,
                       "rows": [r.as_dict() for r in rows.values()],
                       "runs": [r.as_dict() for rr in runs.values() for r in rr],
                       "targets": checks}
            Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
            print(f"JSON summary written to {args.json}")
    except KeyboardInterrupt:
        print("\nstreams_perf: interrupted; stopping processes", file=sys.stderr)
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
