"""Recovery: how long a restarted instance takes to answer again, and what it restores.

A count per key over ``--keys`` distinct keys (default 1,000,000, so the store holds that many
entries) on the bundled broker, 4 input partitions, one instance. For each guarantee:

1. the app counts the whole input; once every input offset is committed it is SIGKILLed;
2. it is restarted on the same state directory while a probe record (a new key) is written;
   measured: seconds from the restart (process spawn) to the probe's count in the output
   (read_committed), and the changelog records restored (the app's StateRestoreListener);
3. after that everything is committed again, it is stopped cleanly (SIGTERM, ``close``);
4. it is restarted and measured the same way.

``--frameworks ours,ks`` adds Kafka Streams 4.4 (``benchmarks/kstreams/.../RecoveryApp.java``,
the same topology, compiled with javac against the jars ``tests/reference/kafka.py`` prepares,
into the git-ignored ``.bench/recovery-ks``); ours runs first. Without java the ks rows are
skipped with one line saying why. Kafka Streams does not leave the group on ``close()``
(``internal.leave.group.on.close=false``), so its clean restart may wait for the session timeout
too.

``quix`` adds Quix Streams (``recovery_perf_quix_app.py``: the same count with a stateful
``apply``, RocksDB state and its changelog topic, ``processing_guarantee`` at-least-once or
exactly-once, Quix's defaults otherwise: a 5 s commit interval under both, no record cache). It
runs in its own virtualenv (``--quix-python``, default ``.bench/quix-venv`` made from
``benchmarks/quix-requirements.txt`` on first use: Quix pins an older confluent-kafka than ours).
Quix has no restore listener: the app counts the changelog records Quix's recovery consumer
hands each partition (``RecoveryPartition.recover_from_changelog_message``) and prints them when
Quix completes that partition's recovery; RUNNING is the first pass of its processing loop with
the input assigned and no recovery pending. Under exactly-once Quix's first result waits for the
transaction of its 5 s commit interval. Quix closes its consumer on SIGTERM, so it leaves the
group and its clean restart does not wait for the session timeout.

A killed member stays in the group until its session times out, so after SIGKILL the
rebalance that gives the new instance its tasks waits up to ``session.timeout.ms``
(``--session-timeout-ms``, default 10 s, set in the app). Targets (issue [15]): after SIGKILL,
records restored <= the last commit interval's records, and time <= 1.5 x the clean restart's
time + the session timeout. The last commit interval's records are taken from the group's
committed input offsets, polled every second while the app counts the input: the last poll step
that moved them (several commit intervals when more than one commit falls between two polls, so
the bound is never smaller than the last interval). Each row also shows the machine's 1-minute
load average when it was measured.

Run::

    python benchmarks/recovery_perf.py                       # 1,000,000 keys, both guarantees
    python benchmarks/recovery_perf.py --keys 100000 --guarantees eos
    python benchmarks/recovery_perf.py --ours-tree /tmp/old  # another tree (e.g. git archive
                                                             # of an older commit) for "before"
    python benchmarks/recovery_perf.py --frameworks ours,ks  # and Kafka Streams 4.4
    python benchmarks/recovery_perf.py --frameworks ours,ks,quix   # and Quix Streams

Every process started (broker, apps) is stopped on exit, including on Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench_common import (
    REPO_ROOT,
    Processes,
    quix_python,
    quix_versions,
    raise_on_sigterm,
    start_broker,
)

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover - reported to the user
    sys.exit("recovery_perf: confluent-kafka is missing; pip install -e '.[bench]'")

APP = Path(__file__).resolve().with_name("recovery_perf_app.py")
QUIX_APP = Path(__file__).resolve().with_name("recovery_perf_quix_app.py")
KS_SOURCE = (Path(__file__).resolve().parent / "kstreams" / "src" / "main" / "java"
             / "streamsperf" / "RecoveryApp.java")
KS_BUILD = REPO_ROOT / ".bench" / "recovery-ks"
INPUT = "recovery-input"
GUARANTEES = {"alos": "at_least_once", "eos": "exactly_once_v2"}
FRAMEWORKS = ("ours", "ks", "quix")


@dataclass
class Restart:
    framework: str
    guarantee: str
    after: str  # "SIGKILL" | "clean stop"
    seconds_to_first_result: float
    seconds_to_running: float
    restored: int
    load1: float  # the machine's 1-minute load average when the row was measured
    last_commit_records: int | None = None  # bound for the restored target (SIGKILL rows)


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()],
                                  operation_timeout=10, request_timeout=15)
    for fut in futures.values():
        try:
            fut.result(20)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def produce(bootstrap: str, records: list[tuple[str, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "partitioner": "murmur2_random", "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000})
    for key, value in records:
        while True:
            try:
                producer.produce(INPUT, value.encode(), key.encode())
                break
            except BufferError:
                producer.poll(0.05)
    remaining = producer.flush(60)
    if remaining:
        raise RuntimeError(f"{remaining} input records not delivered")


def input_ends(bootstrap: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "recovery-perf-probe"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(INPUT, p), timeout=10)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def committed_input(bootstrap: str, app_id: str, partitions: int) -> tuple[int, bool]:
    """The input records the group has committed, and whether that is all of them."""
    ends = input_ends(bootstrap, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": app_id,
                         "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(INPUT, p) for p in range(partitions)],
                                       timeout=10)
    finally:
        consumer.close()
    return (sum(max(tp.offset, 0) for tp in committed),
            all(tp.offset == ends[tp.partition] for tp in committed))


def all_committed(bootstrap: str, app_id: str, partitions: int) -> bool:
    return committed_input(bootstrap, app_id, partitions)[1]


class CommitSteps:
    """Polls the group's committed input offsets while the app loads its input, and keeps the
    last step that moved them: the records of the last commit interval, or of the last few
    intervals when several commits fall between two polls (an upper bound, never less)."""

    def __init__(self, bootstrap: str, app_id: str, partitions: int) -> None:
        self.args = (bootstrap, app_id, partitions)
        self.total = 0
        self.last_step = 0

    def all_committed(self) -> bool:
        total, done = committed_input(*self.args)
        if total > self.total:
            self.last_step, self.total = total - self.total, total
        return done


def compile_ks() -> str:
    """The classpath of the Kafka Streams app (compiled when its source changed)."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.reference import kafka as reference

    if shutil.which("java") is None or shutil.which("javac") is None:
        raise RuntimeError("java/javac are not on PATH")
    libs = reference.prepare()
    marker = KS_BUILD / ".source"
    source = KS_SOURCE.read_text()
    if not marker.exists() or marker.read_text() != source:
        shutil.rmtree(KS_BUILD, ignore_errors=True)
        KS_BUILD.mkdir(parents=True)
        done = subprocess.run(["javac", "-nowarn", "-d", str(KS_BUILD), "-cp", f"{libs}/*",
                               str(KS_SOURCE)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"javac failed: {done.stderr.strip()[:2000]}")
        marker.write_text(source)
    return f"{KS_BUILD}:{libs}/*"


class App:
    """One run of the counting app; its stdout lines are read from its log."""

    def __init__(self, procs: Processes, args: argparse.Namespace, bootstrap: str,
                 app_id: str, guarantee: str, state_dir: Path, log: Path) -> None:
        app_args = [bootstrap, app_id, GUARANTEES[guarantee], str(state_dir),
                    str(args.session_timeout_ms)]
        self.log = log
        self.started = time.monotonic()
        if app_id.startswith("ks-"):
            self.proc = procs.start(["java", "-cp", args.ks_classpath, "streamsperf.RecoveryApp",
                                     *app_args], log)
        elif app_id.startswith("quix-"):
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            env.pop("PYTHONPATH", None)  # its own venv: nothing of this tree on its path
            self.proc = procs.start([args.quix_python, str(QUIX_APP), *app_args], log, env=env)
        else:
            tree = args.ours_tree or str(REPO_ROOT)
            env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=tree)
            self.proc = procs.start([sys.executable, str(APP), *app_args], log, env=env,
                                    cwd=tree)
        self.procs = procs
        self.running_at: float | None = None

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"app exited with {self.proc.returncode}; see {self.log}")
        if self.running_at is None and "STATE RUNNING" in self.lines():
            self.running_at = time.monotonic()

    def restored(self) -> int:
        return sum(int(line.split()[3]) for line in self.lines() if line.startswith("RESTORED "))

    def stop(self, sig: int) -> None:
        self.procs.stop(self.proc, sig, timeout=90)


def wait(condition, timeout: float, what: str, poll: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


class OutputWatch:
    """A read_committed consumer at the end of the output topic, looking for one key."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "recovery-watch",
                                  "isolation.level": "read_committed",
                                  "enable.auto.commit": False})
        tps = []
        for p in range(partitions):
            _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            tps.append(TopicPartition(topic, p, high))
        self.consumer.assign(tps)

    def wait_for(self, key: bytes, app: App, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            app.check()
            for message in self.consumer.consume(1000, 0.05):
                if message.error() is None and message.key() == key:
                    return time.monotonic()
        raise RuntimeError(f"no result for {key!r} within {timeout:.0f} s; see {app.log}")

    def close(self) -> None:
        self.consumer.close()


def restart(procs: Processes, args: argparse.Namespace, bootstrap: str, framework: str,
            app_id: str, guarantee: str, state_dir: Path, work: Path, label: str,
            probe: str) -> tuple[App, Restart]:
    watch = OutputWatch(bootstrap, f"{app_id}-counts", args.partitions)
    try:
        app = App(procs, args, bootstrap, app_id, guarantee, state_dir,
                  work / f"{app_id}-{label.replace(' ', '-')}.log")
        produce(bootstrap, [(probe, "x")])
        seen = watch.wait_for(probe.encode(), app, args.timeout)
    finally:
        watch.close()
    # The probe's partition may answer before the others finished restoring: count what was
    # restored once every task is (RUNNING).
    wait(lambda: (app.check(), app.running_at is not None)[1], args.timeout,
         f"{app_id} RUNNING")
    running = app.running_at - app.started  # type: ignore[operator]
    return app, Restart(framework, guarantee, label, round(seen - app.started, 2),
                        round(running, 2), app.restored(), round(os.getloadavg()[0], 2))


def run_guarantee(procs: Processes, args: argparse.Namespace, bootstrap: str, work: Path,
                  framework: str, guarantee: str) -> list[Restart]:
    app_id = f"{framework}-recovery-{guarantee}"
    state_dir = work / f"state-{framework}-{guarantee}"
    started = time.monotonic()
    app = App(procs, args, bootstrap, app_id, guarantee, state_dir, work / f"{app_id}-load.log")
    steps = CommitSteps(bootstrap, app_id, args.partitions)
    wait(lambda: (app.check(), steps.all_committed())[1],
         args.timeout, f"{app_id} to count the input", poll=1.0)
    print(f"  {framework} {guarantee}: counted {args.keys:,} keys in "
          f"{time.monotonic() - started:.1f} s (last commit step {steps.last_step:,} records)",
          flush=True)
    app.stop(signal.SIGKILL)
    rows = []
    app, row = restart(procs, args, bootstrap, framework, app_id, guarantee, state_dir, work,
                       "SIGKILL", f"probe-{framework}-{guarantee}-kill")
    row.last_commit_records = steps.last_step
    rows.append(row)
    print(f"  {row}", flush=True)
    wait(lambda: (app.check(), all_committed(bootstrap, app_id, args.partitions))[1],
         args.timeout, f"{app_id} to commit after the restart", poll=0.5)
    app.stop(signal.SIGTERM)
    if "CLOSED" not in app.lines():
        raise RuntimeError(f"{app_id} did not close cleanly; see {app.log}")
    app, row = restart(procs, args, bootstrap, framework, app_id, guarantee, state_dir, work,
                       "clean stop", f"probe-{framework}-{guarantee}-clean")
    rows.append(row)
    print(f"  {row}", flush=True)
    app.stop(signal.SIGTERM)
    return rows


def render(rows: list[Restart], args: argparse.Namespace) -> str:
    session_s = args.session_timeout_ms / 1000
    out = [f"recovery after restart: count over {args.keys:,} keys, {args.partitions} "
           f"partitions, session.timeout.ms={args.session_timeout_ms}, tree "
           f"{args.ours_tree or REPO_ROOT}; load1 = the machine's 1-minute load average "
           f"({os.cpu_count()} CPUs)",
           f"{'framework':<10} {'guarantee':<10} {'after':<11} {'first result s':>14} "
           f"{'RUNNING s':>10} {'restored':>10} {'load1':>6}  targets (SIGKILL rows)"]
    for row in rows:
        target = ""
        if row.after == "SIGKILL":
            clean = next((r for r in rows if (r.framework, r.guarantee) ==
                          (row.framework, row.guarantee) and r.after == "clean stop"), None)
            if row.last_commit_records is not None:
                bound = row.last_commit_records
                target = (f"restored <= {bound:,} (last commit step): "
                          f"{'met' if row.restored <= bound else 'MISSED'}; ")
            if clean is not None:
                limit = 1.5 * clean.seconds_to_first_result + session_s
                target += (f"time <= {limit:.2f} s: "
                           f"{'met' if row.seconds_to_first_result <= limit else 'MISSED'}")
        out.append(f"{row.framework:<10} {row.guarantee:<10} {row.after:<11} "
                   f"{row.seconds_to_first_result:>14.2f} {row.seconds_to_running:>10.2f} "
                   f"{row.restored:>10,} {row.load1:>6.2f}  {target}")
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=1_000_000, help="distinct keys (default 1M)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--guarantees", default="alos,eos", help="comma list of alos, eos")
    p.add_argument("--frameworks", default="ours",
                   help="comma list of ours, ks (Kafka Streams 4.4), quix (Quix Streams); "
                        "default ours")
    p.add_argument("--quix-python", help="python that has quixstreams (default: "
                                         ".bench/quix-venv, created on first use)")
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument("--timeout", type=float, default=900, help="per step, seconds")
    p.add_argument("--ours-tree", metavar="DIR",
                   help="source tree the app imports streams from (default: this checkout)")
    p.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    p.add_argument("--keep-data", action="store_true", help="keep the temp dir")
    args = p.parse_args(argv)
    args.guarantee_list = [g.strip() for g in args.guarantees.split(",") if g.strip()]
    unknown = set(args.guarantee_list) - set(GUARANTEES)
    if unknown:
        p.error(f"unknown guarantee(s) {sorted(unknown)}; use alos, eos")
    args.framework_list = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    if set(args.framework_list) - set(FRAMEWORKS):
        p.error(f"unknown framework(s) {sorted(set(args.framework_list) - set(FRAMEWORKS))}; "
                f"use {', '.join(FRAMEWORKS)}")
    if args.keys < 1:
        p.error("--keys must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="recovery-perf-"))
    procs = Processes()
    try:
        bootstrap, _ = start_broker(procs, work)
        frameworks = list(args.framework_list)
        if "ks" in frameworks:
            try:
                args.ks_classpath = compile_ks()
            except Exception as exc:  # reported, and the ks rows skipped
                print(f"skipping Kafka Streams: {exc}", flush=True)
                frameworks.remove("ks")
        if "quix" in frameworks:
            args.quix_python = quix_python(args.quix_python)
            version = quix_versions(args.quix_python)
            print(f"quix: {version}", flush=True)
            if "not importable" in version:
                print("skipping Quix Streams", flush=True)
                frameworks.remove("quix")
        create_topics(bootstrap, {INPUT: args.partitions, **{
            f"{f}-recovery-{g}-counts": args.partitions
            for f in frameworks for g in args.guarantee_list}})
        started = time.monotonic()
        produce(bootstrap, [(f"key-{i:08d}", "x") for i in range(args.keys)])
        print(f"input: {args.keys:,} keys in {time.monotonic() - started:.1f} s", flush=True)
        rows: list[Restart] = []
        for framework in frameworks:
            for guarantee in args.guarantee_list:
                rows.extend(run_guarantee(procs, args, bootstrap, work, framework, guarantee))
        print(render(rows, args))
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        procs.close()
        if args.keep_data:
            print(f"data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
