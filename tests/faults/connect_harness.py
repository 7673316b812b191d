"""Connect under faults: FileStreamSource -> topic -> FileStreamSink pipelines on distributed
workers (OS processes) while lines keep being appended to the source files and a fault schedule
runs: workers killed (SIGKILL), paused past their session timeout (SIGSTOP), added and removed
(SIGTERM); connectors created, restarted, stopped and resumed, deleted and re-created while the
group rebalances; stuck tasks restarted beside the pipelines.

The oracle is the input files. After the run every appended line must be in its topic and in
its sink's output file. Duplicates are allowed only where at-least-once allows them: after a
worker was killed or paused (a replay of what was not committed); a torn line only after a
kill (the process died inside a write). Under ``exactly.once.source.support=enabled`` each
topic, read ``read_committed``, holds every line exactly once and in file order.

    python -m tests.faults.connect_harness --minutes 20          # random schedules (soak)
    python -m tests.faults.connect_harness --seed S --minutes 0  # reproduce one run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from helpers import create_topics, wait_until

from .connect_cluster import SESSION_TIMEOUT_MS, ConnectCluster

PIPELINES = 3
WORKERS = 2  # at the start; ``add`` grows the group, ``remove`` shrinks it (never below 1)
MAX_WORKERS = 3
KINDS = ("kill", "pause", "add", "remove", "restart", "stop_resume", "delete_recreate",
         "create", "stuck")
UNCLEAN = {"kill", "pause"}  # faults after which at-least-once may replay records
LINE = re.compile(r"^L(\d+)-(\d{8})$")
SIDE_RECORDS = 300  # records of a DataGen connector created during a rebalance
SIDE_TASKS = 2  # its tasks; task t generates order ids t+1, t+1+SIDE_TASKS, ... (datagen.py)
SIDE_RATE = 200.0  # its records per second over all tasks (DataGen max.rate)


def source_name(p: int) -> str:
    return f"src-{p}"


def sink_name(p: int) -> str:
    return f"sink-{p}"


@dataclass(frozen=True)
class Fault:
    kind: str
    pick: int  # which worker or pipeline (modulo the count)
    hold_s: float  # how long the fault lasts while lines flow (a pause, a dead worker)

    def describe(self) -> str:
        return f"{self.kind}{f' {self.hold_s:.0f}s' if self.hold_s else ''}"


@dataclass
class Schedule:
    seed: int
    faults: list[Fault]

    def describe(self) -> str:
        return ", ".join(f.describe() for f in self.faults) or "no faults"

    @staticmethod
    def of(seed: int, kinds: list[str]) -> Schedule:
        rng = random.Random(seed)
        return Schedule(seed, [_fault(rng, kind) for kind in kinds])

    @staticmethod
    def random(seed: int, count: int) -> Schedule:
        rng = random.Random(seed)
        return Schedule(seed, [_fault(rng, rng.choice(KINDS)) for _ in range(count)])


def _fault(rng: random.Random, kind: str) -> Fault:
    if kind not in KINDS:
        raise ValueError(f"unknown Connect fault {kind!r}; known: {', '.join(KINDS)}")
    hold = {"pause": SESSION_TIMEOUT_MS / 1000 + rng.uniform(2.0, 4.0),
            "kill": rng.uniform(1.0, 5.0)}.get(kind, 0.0)
    return Fault(kind, rng.randrange(1000), hold)


class Writer(threading.Thread):
    """Appends ``batch`` lines to every source file each ``interval`` seconds until stopped."""

    def __init__(self, files: list[Path], batch: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.files, self.batch, self.interval = files, batch, interval
        self.written = [0] * len(files)
        self.halt = threading.Event()

    def run(self) -> None:
        handles = [open(f, "a") for f in self.files]  # noqa: SIM115 - closed below
        try:
            while not self.halt.is_set():
                for p, handle in enumerate(handles):
                    start = self.written[p]
                    handle.write("".join(f"L{p}-{n:08d}\n"
                                         for n in range(start, start + self.batch)))
                    handle.flush()
                    self.written[p] = start + self.batch
                self.halt.wait(self.interval)
        finally:
            for handle in handles:
                handle.close()


@dataclass
class Run:
    """What one run needs while its faults happen."""

    cluster: ConnectCluster
    workdir: Path
    exactly_once: bool
    rng: random.Random
    side_rate: float = SIDE_RATE
    side: list[str] = field(default_factory=list)  # DataGen connectors created by ``create``
    log: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.log.append(f"{time.strftime('%H:%M:%S')} {text}")

    def source_config(self, p: int) -> dict[str, str]:
        config = {"connector.class": "FileStreamSource", "topic": f"lines-{p}",
                  "file": str(self.workdir / f"in-{p}.txt"), "batch.size": "500"}
        if self.exactly_once:
            config["exactly.once.support"] = "required"
        return config

    def sink_config(self, p: int) -> dict[str, str]:
        config = {"connector.class": "FileStreamSink", "topics": f"lines-{p}",
                  "file": str(self.workdir / f"out-{p}.txt")}
        if self.exactly_once:  # Kafka leaves sink consumers at read_uncommitted
            config["consumer.override.isolation.level"] = "read_committed"
        return config

    def pipeline_names(self) -> list[str]:
        return [n for p in range(PIPELINES) for n in (source_name(p), sink_name(p))]

    def config_of(self, name: str) -> dict[str, str]:
        p = int(name.rsplit("-", 1)[1])
        return self.source_config(p) if name.startswith("src-") else self.sink_config(p)

    # -- faults -----------------------------------------------------------------------------

    def apply(self, fault: Fault) -> None:
        self.note(f"fault {fault.describe()}")
        getattr(self, f"_{fault.kind}")(fault)
        self.cluster.wait_running(self.pipeline_names() + self.side)
        self.note(f"settled after {fault.kind}")

    def _target(self, fault: Fault):  # noqa: ANN202 - a ConnectWorker
        live = self.cluster.reachable()
        return live[fault.pick % len(live)]

    def _kill(self, fault: Fault) -> None:
        target = self._target(fault)
        target.kill()
        time.sleep(fault.hold_s)  # lines flow while the worker is dead: the fault itself
        target.start()
        target.wait_ready()

    def _pause(self, fault: Fault) -> None:
        target = self._target(fault)
        target.pause()
        try:
            time.sleep(fault.hold_s)  # held past the session timeout: the fault itself
        finally:
            target.resume()

    def _add(self, fault: Fault) -> None:
        self.cluster.add_worker()

    def _remove(self, fault: Fault) -> None:
        if len(self.cluster.reachable()) < 2:
            self._add(fault)
            return
        target = self._target(fault)
        target.terminate()
        assert target.wait_stopped(60), f"{target.name} did not stop on SIGTERM"

    def _rebalance(self, fault: Fault) -> None:
        """Start a rebalance (a worker joins, or one leaves when there are MAX_WORKERS) and
        return while it is under way."""
        if len(self.cluster.reachable()) >= MAX_WORKERS:
            self._target(fault).terminate()
        else:
            self.cluster.add_worker(wait=False)

    def _connector(self, fault: Fault) -> str:
        names = self.pipeline_names()
        return names[fault.pick % len(names)]

    def _restart(self, fault: Fault) -> None:
        name = self._connector(fault)
        self._rebalance(fault)
        self.cluster.rest("POST", f"/connectors/{name}/restart?includeTasks=true")
        self._settle_new_workers()

    def _stop_resume(self, fault: Fault) -> None:
        name = self._connector(fault)
        self._rebalance(fault)
        self.cluster.rest("PUT", f"/connectors/{name}/stop")
        wait_until(lambda: (self.cluster.statuses([name]) or {}).get(name, {})
                   .get("connector", {}).get("state") == "STOPPED", 60, interval=0.3,
                   message=f"{name} STOPPED")
        self.cluster.rest("PUT", f"/connectors/{name}/resume")
        self._settle_new_workers()

    def _delete_recreate(self, fault: Fault) -> None:
        name = self._connector(fault)
        self._rebalance(fault)
        self.cluster.rest("DELETE", f"/connectors/{name}")
        self.cluster.rest("PUT", f"/connectors/{name}/config", self.config_of(name))
        self._settle_new_workers()

    def _create(self, fault: Fault) -> None:
        name = f"side-{len(self.side)}"
        self._rebalance(fault)
        config = {"connector.class": "DataGen", "quickstart": "orders", "kafka.topic": name,
                  "tasks.max": str(SIDE_TASKS), "iterations": str(SIDE_RECORDS),
                  "max.rate": str(self.side_rate)}
        if self.exactly_once:
            config["exactly.once.support"] = "required"
        self.cluster.rest("PUT", f"/connectors/{name}/config", config)
        self.side.append(name)
        self._settle_new_workers()

    def _stuck(self, fault: Fault) -> None:
        """A source stuck in poll() and stop() and a sink stuck in put(), restarted three times
        each while the pipelines run, then deleted (their threads are abandoned)."""
        stuck = {"stuck-src": {"connector.class": "stuck_plugins.StuckSourceConnector"},
                 "stuck-sink": {"connector.class": "stuck_plugins.StuckSinkConnector",
                                "topics": "lines-0"}}
        for name, config in stuck.items():
            self.cluster.rest("PUT", f"/connectors/{name}/config", config)
        for _ in range(3):
            self.cluster.wait_running(list(stuck))
            for name in stuck:
                self.cluster.rest("POST", f"/connectors/{name}/restart?includeTasks=true")
        for name in stuck:
            self.cluster.rest("DELETE", f"/connectors/{name}")

    def _settle_new_workers(self) -> None:
        for worker in self.cluster.workers:
            if worker.stopped:
                worker.wait_stopped(60)
            elif worker.alive():
                worker.wait_ready()


@dataclass
class Verdict:
    pipeline: int
    written: int
    topic_records: int
    topic_missing: int
    topic_duplicates: int
    topic_in_order: bool
    sink_lines: int
    sink_missing: int
    sink_duplicates: int
    torn: int

    def summary(self) -> str:
        return (f"pipeline {self.pipeline}: {self.written} lines written; topic "
                f"{self.topic_records} records ({self.topic_missing} missing, "
                f"{self.topic_duplicates} duplicates, "
                f"{'in order' if self.topic_in_order else 'OUT OF ORDER'}); sink file "
                f"{self.sink_lines} lines ({self.sink_missing} missing, "
                f"{self.sink_duplicates} duplicates, {self.torn} torn)")


@dataclass
class RunResult:
    guarantee: str
    schedule: Schedule
    verdicts: list[Verdict]
    side_problems: list[str]
    problems: list[str]
    elapsed: float
    workdir: Path
    log: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> str:
        lines = [f"{'PASS' if self.ok else 'FAIL'} connect {self.guarantee} "
                 f"seed={self.schedule.seed} faults=[{self.schedule.describe()}] "
                 f"{sum(v.written for v in self.verdicts)} lines, {self.elapsed:.0f}s"]
        lines += [f"  {v.summary()}" for v in self.verdicts]
        lines += [f"  problem: {p}" for p in self.problems]
        if not self.ok:
            lines += [f"  {entry}" for entry in self.log]
            lines.append(f"  logs: {self.workdir}")
        return "\n".join(lines)


def read_topic(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every record value of ``topic`` up to its end offsets."""
    return [value for _key, value in read_records(bootstrap, topic, isolation)]


def read_records(bootstrap: str, topic: str, isolation: str
                 ) -> list[tuple[bytes | None, bytes | None]]:
    """Every record (key, value) of ``topic`` up to its end offsets."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    async def run() -> list[tuple[bytes | None, bytes | None]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            parts = consumer.partitions_for_topic(topic)
            deadline = time.monotonic() + 60
            while not parts:
                await consumer._client.force_metadata_update()  # noqa: SLF001
                parts = consumer.partitions_for_topic(topic)
                if time.monotonic() > deadline:
                    raise AssertionError(f"topic {topic} never appeared")
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            records: list[tuple[bytes | None, bytes | None]] = []
            while any([await consumer.position(tp) < ends[tp] for tp in tps]):
                if time.monotonic() > deadline + 120:
                    raise AssertionError(f"timed out reading {topic}")
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    records.extend((r.key, r.value) for r in batch)
            return records
        finally:
            await consumer.stop()

    return asyncio.run(run())


def sink_file_lines(path: Path) -> tuple[list[str], int]:
    """(well-formed lines, torn lines) of a sink's output file."""
    good, torn = [], 0
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            if LINE.match(line):
                good.append(line)
            elif line:
                torn += 1
    return good, torn


def run_connect(guarantee: str, schedule: Schedule, workdir: Path, *, batch: int = 40,
                interval: float = 0.1, settle_timeout: float = 240.0,
                side_rate: float = SIDE_RATE) -> RunResult:
    """One run: start the broker and two workers, the pipelines, the writer; the faults; then
    wait until every sink has every line and every DataGen connector created by a fault has
    written all its records, stop everything and judge."""
    started = time.monotonic()
    exactly_once = guarantee == "exactly_once"
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = ConnectCluster(workdir, exactly_once)
    run = Run(cluster, workdir, exactly_once, random.Random(schedule.seed), side_rate)
    inputs = [workdir / f"in-{p}.txt" for p in range(PIPELINES)]
    outputs = [workdir / f"out-{p}.txt" for p in range(PIPELINES)]
    for path in inputs:
        path.write_text("")
    writer = Writer(inputs, batch, interval)
    problems: list[str] = []
    try:
        try:
            cluster.broker.start()
            create_topics(cluster.bootstrap, {f"lines-{p}": 1 for p in range(PIPELINES)})
            for _ in range(WORKERS):
                cluster.add_worker()
            for p in range(PIPELINES):
                cluster.rest("PUT", f"/connectors/{sink_name(p)}/config", run.sink_config(p))
                cluster.rest("PUT", f"/connectors/{source_name(p)}/config",
                             run.source_config(p))
            cluster.wait_running(run.pipeline_names())
            writer.start()
            run.note("pipelines running, lines flowing")
            try:
                for fault in schedule.faults:
                    wait_until(lambda: min(_count_lines(o) for o in outputs) > 0, 60,
                               interval=0.2, message="lines reaching the sinks")
                    run.apply(fault)
            except AssertionError as exc:  # the group never settled: report, judge the data
                problems.append(f"schedule stopped early: {exc}")
            time.sleep(1.0)  # a last second of lines after the faults, then the input ends
            writer.halt.set()
            writer.join()
            run.note(f"input ended: {writer.written} lines per pipeline")

            def complete() -> bool:
                return all(len(set(sink_file_lines(out)[0])) >= writer.written[p]
                           for p, out in enumerate(outputs))

            settle_by = time.monotonic() + settle_timeout
            try:
                wait_until(complete, settle_timeout, interval=0.5,
                           message="every line in every sink file")
            except AssertionError as exc:
                problems.append(str(exc))
            # A DataGen connector created by the last fault may still be generating when the
            # input ends (its records take SIDE_RECORDS / side_rate seconds from its start):
            # stopping the workers then ends it early, and its ungenerated records would look
            # lost (CI, seed 21: 23 of 300, the tail of its tasks, offsets committed up to
            # exactly there). The workers stop only once it is done.
            for name in run.side:
                isolation = "read_committed" if exactly_once else "read_uncommitted"
                try:
                    wait_until(lambda name=name, isolation=isolation: len(_side_ids(
                        cluster.bootstrap, name, isolation)) >= SIDE_RECORDS,
                        max(settle_by - time.monotonic(), 10.0), interval=0.5,
                        message=f"all {SIDE_RECORDS} records of {name}")
                except AssertionError as exc:
                    problems.append(f"{exc}; its tasks: {_task_states(cluster, name)}")
        finally:
            writer.halt.set()
            unclean = cluster.stop_workers()
        if unclean:
            problems.append(f"workers that did not end on SIGTERM: {unclean}")
        # Judged with the workers gone, so nothing more can arrive.
        verdicts = [_judge(p, writer.written[p], cluster.bootstrap, outputs[p], exactly_once)
                    for p in range(PIPELINES)]
        side_problems = [_judge_side(name, cluster.bootstrap, exactly_once,
                                     cluster.settings()["offset.storage.topic"])
                         for name in run.side]
    finally:
        cluster.close()
    kinds = {f.kind for f in schedule.faults}
    replays_allowed = bool(kinds & UNCLEAN)
    for v in verdicts:
        if v.topic_missing or v.sink_missing:
            problems.append(f"pipeline {v.pipeline} lost lines")
        if exactly_once and (v.topic_duplicates or not v.topic_in_order):
            problems.append(f"pipeline {v.pipeline}: exactly-once topic has duplicates or "
                            "is out of order")
        if not replays_allowed and (v.topic_duplicates or v.sink_duplicates):
            problems.append(f"pipeline {v.pipeline}: duplicates without a kill or pause")
        if v.torn and "kill" not in kinds:
            problems.append(f"pipeline {v.pipeline}: torn lines without a kill")
    problems += [p for p in side_problems if p]
    return RunResult(guarantee, schedule, verdicts, [p for p in side_problems if p], problems,
                     time.monotonic() - started, workdir, run.log)


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _judge(p: int, written: int, bootstrap: str, output: Path, exactly_once: bool) -> Verdict:
    expected = [f"L{p}-{n:08d}" for n in range(written)]
    topic = [v.decode(errors="replace") for v in read_topic(
        bootstrap, f"lines-{p}", "read_committed" if exactly_once else "read_uncommitted")]
    in_topic = Counter(topic)
    sink, torn = sink_file_lines(output)
    in_sink = Counter(sink)
    wanted = set(expected)
    return Verdict(
        p, written, len(topic),
        topic_missing=sum(1 for line in expected if line not in in_topic),
        topic_duplicates=sum(n - 1 for line, n in in_topic.items() if n > 1)
        + sum(1 for line in in_topic if line not in wanted),
        topic_in_order=topic == expected,
        sink_lines=len(sink),
        sink_missing=sum(1 for line in expected if line not in in_sink),
        sink_duplicates=sum(n - 1 for n in in_sink.values() if n > 1)
        + sum(1 for line in in_sink if line not in wanted),
        torn=torn)


def _side_ids(bootstrap: str, name: str, isolation: str) -> Counter[int]:
    """How often each order id of a DataGen connector's topic occurs."""
    return Counter(json.loads(v)["orderid"] for v in read_topic(bootstrap, name, isolation))


def _task_states(cluster: ConnectCluster, name: str) -> list[str]:
    """The connector's task states as a reachable worker answers them (for a report)."""
    body = (cluster.statuses([name]) or {}).get(name) or {}
    return [f"{t.get('id')}: {t.get('state')}" + (f" ({str(t.get('trace')).splitlines()[0]})"
                                                 if t.get("trace") else "")
            for t in body.get("tasks", [])]


def committed_source_offsets(bootstrap: str, offsets_topic: str, name: str) -> dict[int, int]:
    """DataGen task -> the record count its committed source offset says it has written
    (``read_committed``: an aborted transaction's offsets do not count)."""
    counts: dict[int, int] = {}
    for key, value in read_records(bootstrap, offsets_topic, "read_committed"):
        try:
            connector, partition = json.loads(key or b"")
        except ValueError:
            continue
        if connector == name:
            counts[int(partition["task"])] = int(json.loads(value)["count"]) if value else 0
    return counts


def _judge_side(name: str, bootstrap: str, exactly_once: bool, offsets_topic: str) -> str:
    """A DataGen connector created during a rebalance: all its order ids (once each under
    exactly-once), and never a committed source offset past the records written: an id below
    its task's committed count that is not in the topic is lost for good (a restarted task
    resumes after it)."""
    ids = _side_ids(bootstrap, name, "read_committed" if exactly_once else "read_uncommitted")
    counts = committed_source_offsets(bootstrap, offsets_topic, name)
    lost = [i for i in range(1, SIDE_RECORDS + 1)
            if i not in ids and (i - 1) // SIDE_TASKS < counts.get((i - 1) % SIDE_TASKS, 0)]
    missing = [i for i in range(1, SIDE_RECORDS + 1) if i not in ids]
    dups = sum(n - 1 for n in ids.values() if n > 1)
    if lost:
        return (f"{name}: {len(lost)} order ids LOST: their source offsets were committed "
                f"without them ({_few(lost)}; committed counts per task {counts})")
    if missing:
        return (f"{name}: {len(missing)} of {SIDE_RECORDS} order ids missing, never generated "
                f"({_few(missing)}; committed counts per task {counts} stop where the "
                "records stop: nothing lost, the tasks were stopped early)")
    if exactly_once and dups:
        return f"{name}: {dups} duplicate order ids under exactly-once"
    return ""


def _few(ids: list[int]) -> str:
    """The first six ids and the last, for a report line."""
    shown = ", ".join(map(str, ids[:6]))
    return shown + (f", ... {ids[-1]}" if len(ids) > 6 else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--guarantee", choices=("at_least_once", "exactly_once"))
    parser.add_argument("--faults", help="comma-separated fault kinds (default: 2-4 random)")
    parser.add_argument("--keep", action="store_true", help="keep passing runs' directories")
    parser.add_argument("--side-rate", type=float, default=SIDE_RATE,
                        help="records/s of the DataGen connectors the create fault makes")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    deadline = time.monotonic() + args.minutes * 60
    passed = failed = 0
    i = 0
    while i == 0 or time.monotonic() < deadline:
        run_seed = seed + i
        rng = random.Random(run_seed)
        guarantee = args.guarantee or rng.choice(("at_least_once", "exactly_once"))
        schedule = Schedule.of(run_seed, args.faults.split(",")) if args.faults \
            else Schedule.random(run_seed, rng.randint(2, 4))
        workdir = Path(tempfile.mkdtemp(prefix=f"connect-faults-{run_seed}-"))
        result = run_connect(guarantee, schedule, workdir, side_rate=args.side_rate)
        print(result.report(), flush=True)
        if result.ok:
            passed += 1
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        else:
            failed += 1
            # The seed alone replays the run (a pinned choice is pinned again).
            pins = (f" --guarantee {args.guarantee}" if args.guarantee else "") + \
                (f" --faults {args.faults}" if args.faults else "") + \
                (f" --side-rate {args.side_rate:g}" if args.side_rate != SIDE_RATE else "")
            print(f"reproduce: python -m tests.faults.connect_harness --seed {run_seed} "
                  f"--minutes 0{pins}", flush=True)
        i += 1
    print(f"{passed} passed, {failed} failed (seeds {seed}..{seed + i - 1})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
