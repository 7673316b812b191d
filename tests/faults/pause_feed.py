"""The pause scenario: input flows *while* instances are paused past the session timeout.

Two instances run the catalogue's ``count`` topology (String keys, ``group_by_key().count()``)
over 4 partitions. A feeder thread produces ``batch`` records every ``interval_s`` seconds for
as long as the pause schedule runs: each instance in turn is stopped with SIGSTOP for
``hold_s`` (past ``session.timeout.ms``), ``rounds`` times. Then the check: once the group has
committed every input record, the final count of every key read with ``read_committed`` equals
the records sent for it, so their sum equals the records sent; and so does the last value of
every key in the store's changelog (what the next owner would restore). Under at_least_once a
record may be counted twice: there no count may be below the records sent.

    python -m tests.faults.pause_feed [--runs 10] [--kafka reference|cluster] [--rounds 3] ...

``--framework kafka-streams`` runs the instances as Kafka Streams 4.4 apps (kstreams_app.py:
the same topology, application.id and settings) to measure the reference in the same scenario.

This is the shape of the loss reported in issue [15] (40,000 records over 100 keys, 500 every
0.25 s, both instances paused for 14 s in turn, three times): the per-chunk fault harness
(harness.py) produces one chunk during a pause, this one never stops producing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from helpers import wait_until
from runtime.kafka_io import create_topics

from . import kstreams_app
from .app_runner import SESSION_TIMEOUT_MS
from .catalogue import PARTITIONS, SCENARIOS
from .cluster import Cluster
from .output import partitions_of, read_output

SCENARIO = "count"  # the catalogue's count topology: count-input -> count-output
CHANGELOG = "faults-count-count-store-changelog"  # its store's changelog (Long values)
INSTANCES = 2
STALL_OVERLAP_S = 0.5  # the next pause begins this long before a stall ends


@dataclass(frozen=True)
class PausePlan:
    """What one run does. The defaults are the issue's shape; CI scales them down."""

    seed: int = 0
    keys: int = 100
    batch: int = 500  # records per feed step
    interval_s: float = 0.25
    rounds: int = 3  # every instance is paused this many times
    hold_s: float = 14.0  # each pause (must pass the session timeout)
    gap_s: float = 2.0  # running time between two pauses (the group rebalances meanwhile)
    guarantee: str = "exactly_once_v2"
    total: int | None = None  # stop feeding after this many records (None: when pauses end)
    settle: bool = True  # wait for every instance to be RUNNING again before the next pause
    cache_bytes: int = 10 * 1024 * 1024  # statestore.cache.max.bytes: Kafka's default
    max_poll_records: int = 1000  # Kafka's default (the catalogue runs use 100)
    # The first pause of the first instance is a stall inside its commit, before the cache
    # flush (commit_stall.py), not a SIGSTOP that lands there only by chance; the second
    # instance is paused just before it ends. at_least_once only (the hook is in its commit).
    stall_first: bool = False
    framework: str = "ours"  # or "kafka-streams" (kstreams_app.py)
    # Where the first pause stalls (commit_stall.py): "commit" (above), or "iteration": right
    # after a regular loop iteration handed its output to the producer, outside the commit
    # (with the cache off, store updates go out that way).
    stall_at: str = "commit"
    commit_ms: int | None = None  # commit.interval.ms (None: Kafka's default for the guarantee)

    def describe(self) -> str:
        return (("" if self.framework == "ours" else f"{self.framework} ")
                + f"seed={self.seed} {self.guarantee} {self.rounds}x{INSTANCES} pauses of "
                f"{self.hold_s:g}s{'' if self.settle else ' back to back'}, {self.batch} "
                f"records every {self.interval_s:g}s over {self.keys} keys, "
                f"cache={self.cache_bytes} max.poll.records={self.max_poll_records}"
                + (f" commit.interval.ms={self.commit_ms}" if self.commit_ms else "")
                + (f" (at most {self.total})" if self.total else "")
                + ((" first pause inside a commit" if self.stall_at == "commit" else
                    " first pause right after an iteration's hand-over to the producer")
                   if self.stall_first else ""))


@dataclass
class PauseResult:
    plan: PausePlan
    sent: Counter[str]
    counts: dict[str, int]
    read_reason: str
    elapsed: float
    workdir: Path
    incidents: list[str] = field(default_factory=list)
    pauses: int = 0
    records_read: int = 0  # output records read to find the final counts

    @property
    def records_sent(self) -> int:
        return sum(self.sent.values())

    @property
    def counted(self) -> int:
        return sum(self.counts.values())

    @property
    def wrong_keys(self) -> list[tuple[str, int, int | None]]:
        return [(k, n, self.counts.get(k)) for k, n in sorted(self.sent.items())
                if self.counts.get(k) != n] + \
               [(k, 0, n) for k, n in sorted(self.counts.items()) if k not in self.sent]

    @property
    def short_keys(self) -> list[tuple[str, int, int | None]]:
        return [(k, n, c) for k, n, c in self.wrong_keys if (c or 0) < n]

    @property
    def ok(self) -> bool:
        """exactly_once_v2: every key's final count equals the records sent for it.
        at_least_once: no key's final count is below them (records may be counted twice)."""
        if self.incidents:
            return False
        if self.plan.guarantee == "at_least_once":
            return not self.short_keys
        return not self.wrong_keys

    @property
    def differences(self) -> int:
        wrong = self.short_keys if self.plan.guarantee == "at_least_once" else self.wrong_keys
        return len(wrong) + len(self.incidents)

    @property
    def overcount(self) -> int:
        return sum((c or 0) - n for _, n, c in self.wrong_keys if (c or 0) > n)

    def report(self) -> str:
        wrong = self.wrong_keys
        short = sum(n - (c or 0) for _, n, c in wrong if (c or 0) < n)
        over = sum((c or 0) - n for _, n, c in wrong if (c or 0) > n)
        lines = [f"{'PASS' if self.ok else 'FAIL'} pause-feed {self.plan.describe()}: "
                 f"{self.pauses} pauses, {self.records_sent} records sent, {self.counted} "
                 f"counted, {len(wrong)} keys wrong (short {short}, over {over}), "
                 f"{self.elapsed:.0f}s (output read: {self.read_reason})"]
        for key, n, c in wrong[:8]:
            lines.append(f"  {key!r}: sent {n}, final count {c}")
        lines.extend(f"  incident: {i}" for i in self.incidents)
        if not self.ok:
            lines.append(f"  logs: {self.workdir}")
        return "\n".join(lines)


class Feeder(threading.Thread):
    """Produces ``plan.batch`` records every ``plan.interval_s`` until ``stop`` is set (then one
    last batch), keyed by murmur2 as any Java-compatible producer; counts what was acked."""

    def __init__(self, bootstrap: str, plan: PausePlan) -> None:
        super().__init__(name="pause-feeder", daemon=True)
        self.bootstrap, self.plan = bootstrap, plan
        self.stop = threading.Event()
        self.sent: Counter[str] = Counter()
        self.error: BaseException | None = None
        self.started_feeding = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._feed())
        except BaseException as exc:  # reported by the run: input not sent is not "lost"
            self.error = exc

    async def _feed(self) -> None:
        rng = random.Random(self.plan.seed)
        keys = [f"key{i}" for i in range(self.plan.keys)]
        key_serde, value_serde = SCENARIOS[SCENARIO].inputs["count-input"]
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                    enable_idempotence=True)
        await producer.start()
        n = 0
        try:
            next_at = time.monotonic()
            last = False
            total = self.plan.total
            while not last:
                last = self.stop.is_set()
                futures, batch_keys = [], []
                size = self.plan.batch if total is None else min(self.plan.batch, total - n)
                if total is not None and n + size >= total:
                    last = True
                for _ in range(size):
                    key = rng.choice(keys)
                    futures.append(await producer.send(
                        "count-input", value_serde.serialize("count-input", f"v{n}"),
                        key=key_serde.serialize("count-input", key)))
                    batch_keys.append(key)
                    n += 1
                await producer.flush()
                for future, key in zip(futures, batch_keys, strict=True):
                    await future  # raises if the record was not acknowledged
                    self.sent[key] += 1
                self.started_feeding.set()
                next_at += self.plan.interval_s
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        finally:
            await producer.stop()


def run_pause_feed(plan: PausePlan, workdir: Path, kafka: str = "bundled") -> PauseResult:
    """One run (see the module docstring) on a fresh broker of kind ``kafka`` (cluster.py)."""
    if plan.hold_s * 1000 <= SESSION_TIMEOUT_MS:
        raise ValueError(f"hold_s={plan.hold_s} does not pass the session timeout "
                         f"({SESSION_TIMEOUT_MS} ms)")
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    if plan.stall_first and plan.guarantee != "at_least_once":
        raise ValueError("stall_first: the stall sits in the at_least_once commit")
    if plan.commit_ms is not None and plan.framework != "ours":
        raise ValueError("commit_ms: the Kafka Streams instances keep Kafka's default")
    if plan.stall_first and plan.framework != "ours":
        raise ValueError("stall_first: the stall is a hook in our runtime's commit")
    app_args = ["--scenario", SCENARIO, "--guarantee", plan.guarantee,
                "--record-delay-ms", "0", "--cache-bytes", str(plan.cache_bytes),
                "--max-poll-records", str(plan.max_poll_records)]
    if plan.stall_first:
        app_args += ["--stall-s", str(plan.hold_s), "--stall-at", plan.stall_at]
    if plan.commit_ms is not None:
        app_args += ["--commit-ms", str(plan.commit_ms)]
    java = kstreams_app.prepare() if plan.framework == "kafka-streams" else None
    cluster = Cluster(workdir, app_args, kafka)
    group = f"faults-{SCENARIO}"
    counts: dict[str, int] = {}
    reason = "not read"
    records_read = 0
    feeder: Feeder | None = None
    pauses = 0
    try:
        cluster.start_broker()
        bootstrap = cluster.bootstrap
        create_topics(bootstrap, {"count-input": PARTITIONS, "count-output": PARTITIONS},
                      cluster.replication)
        for _ in range(INSTANCES):
            cluster.add_instance(None if java is None else _kafka_streams_instance(
                cluster, java, plan))
        cluster.wait_running()
        feeder = Feeder(bootstrap, plan)
        feeder.start()
        feeder.started_feeding.wait(60)
        try:
            for round_ in range(plan.rounds):
                for index, instance in enumerate(list(cluster.instances)):
                    if plan.stall_first and round_ == 0 and index == 0:
                        _stall(cluster, instance, plan)
                    else:
                        _hold(cluster, instance, plan)
                    pauses += 1
            cluster.wait_running()
        except AssertionError as exc:  # an instance never got going again: report, read
            cluster.incidents.append(f"schedule stopped early: {exc}")
        finally:
            feeder.stop.set()
            feeder.join(120)
        if feeder.error is not None:
            cluster.incidents.append(f"the feeder failed: {feeder.error!r}")
        sent = feeder.sent
        stored = input_records(bootstrap)
        if stored != sum(sent.values()):  # then a difference would not be the runtime's
            cluster.incidents.append(f"the input topic holds {stored} records, the feeder had "
                                     f"{sum(sent.values())} acknowledged")
        key_serde = SCENARIOS[SCENARIO].key_serde
        value_serde = SCENARIOS[SCENARIO].value_serde

        def finals(records: list[Any]) -> dict[str, int]:
            result = {}
            for r in records:
                result[key_serde.deserialize("count-output", r.key)] = \
                    value_serde.deserialize("count-output", r.value)
            return result

        read = read_output(bootstrap, "count-output",
                           isolation="read_committed" if plan.guarantee == "exactly_once_v2"
                           else "read_uncommitted", group=group, input_topics=["count-input"],
                           done=lambda records: finals(records) == dict(sent))
        counts, reason, records_read = finals(read.records), read.reason, len(read.records)
        # What the next owner of a task would restore: the last value of every key in the
        # store's changelog must count every record sent too (at_least_once: at least them).
        exact = plan.guarantee == "exactly_once_v2"

        def restorable(records: list[Any]) -> bool:
            last = finals(records)
            return all(last.get(k, 0) == n if exact else last.get(k, 0) >= n
                       for k, n in sent.items())

        logged = read_output(bootstrap, CHANGELOG,
                             isolation="read_committed" if exact else "read_uncommitted",
                             group=group, input_topics=["count-input"], done=restorable,
                             settle=5.0)
        restored = finals(logged.records)
        short_logged = [k for k, n in sent.items() if restored.get(k, 0) < n]
        wrong_logged = short_logged if not exact else \
            [k for k, n in sent.items() if restored.get(k, 0) != n]
        if wrong_logged:
            cluster.incidents.append(
                f"the changelog {CHANGELOG} restores {len(wrong_logged)} keys wrong (short "
                f"{sum(max(0, sent[k] - restored.get(k, 0)) for k in wrong_logged)}; e.g. "
                f"{wrong_logged[0]!r}: {restored.get(wrong_logged[0])} for {sent[wrong_logged[0]]}"
                f" sent)")
    finally:
        if feeder is not None:
            feeder.stop.set()
        cluster.close()
    return PauseResult(plan, feeder.sent if feeder else Counter(), counts, reason,
                       time.monotonic() - started, workdir, cluster.incidents, pauses,
                       records_read)


def input_records(bootstrap: str) -> int:
    """The records in count-input (the sum of its partitions' end offsets: nothing is deleted
    and the feeder is idempotent, so every offset is one record)."""
    async def run() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            parts = await partitions_of(consumer, "count-input", time.monotonic() + 60)
            ends = await consumer.end_offsets([TopicPartition("count-input", p) for p in parts])
            return sum(ends.values())
        finally:
            await consumer.stop()

    return asyncio.run(run())


def _kafka_streams_instance(cluster: Cluster, java: list[str], plan: PausePlan
                            ) -> Callable[[str, Path, Path], Any]:
    """How Cluster.add_instance builds a Kafka Streams instance with the plan's settings."""
    return lambda name, state_dir, log: kstreams_app.KafkaStreamsInstance(
        name, java, cluster.bootstrap, plan.guarantee, plan.cache_bytes, plan.max_poll_records,
        None, state_dir, log)


def _hold(cluster: Cluster, instance: Any, plan: PausePlan) -> None:
    """Pause ``instance`` for ``hold_s`` while the feed goes on; then let the group settle."""
    instance.pause()
    try:
        time.sleep(plan.hold_s)  # the fault itself: a process stopped past its session
    finally:
        instance.resume()
    time.sleep(plan.gap_s)  # running time before the next pause: part of the schedule
    if plan.settle:
        cluster.wait_running()


def _stall(cluster: Cluster, instance: Any, plan: PausePlan) -> None:
    """Make ``instance`` stand still for ``hold_s`` at the plan's stall point (inside its next
    commit, before the cache flush, or right after its next iteration's hand-over
    to the producer: commit_stall.py), while the feed goes on. Returns STALL_OVERLAP_S before
    the stall ends, so the next instance is paused before the stalled one resumes: nothing
    rewrites what the stalled one sends on resuming (the failing SIGSTOP runs were back to
    back too)."""
    Path(f"{instance.state_dir}.stall").touch()
    wait_until(lambda: "STALL begin" in instance.current_output(), timeout=60,
               interval=0.02, message=f"{instance.name} stalls ({plan.stall_at})")
    time.sleep(max(0.0, plan.hold_s - STALL_OVERLAP_S))  # the schedule: the stall goes on


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kafka", choices=("bundled", "reference", "cluster"),
                        default="bundled", help="our broker, Apache Kafka, or 3 of its nodes")
    parser.add_argument("--framework", choices=("ours", "kafka-streams"), default="ours",
                        help="the instances: our runtime or Kafka Streams 4.4 (needs java)")
    parser.add_argument("--guarantee", choices=("exactly_once_v2", "at_least_once"),
                        default="exactly_once_v2")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hold", type=float, default=14.0)
    parser.add_argument("--gap", type=float, default=2.0)
    parser.add_argument("--total", type=int, default=None,
                        help="stop feeding after this many records")
    parser.add_argument("--no-settle", action="store_true",
                        help="pause the next instance without waiting for RUNNING")
    parser.add_argument("--cache", type=int, default=10 * 1024 * 1024,
                        help="statestore.cache.max.bytes")
    parser.add_argument("--max-poll-records", type=int, default=1000)
    parser.add_argument("--commit-ms", type=int, default=None, help="commit.interval.ms")
    parser.add_argument("--keep", action="store_true", help="keep passing runs' directories")
    parser.add_argument("--stall-first", action="store_true",
                        help="at_least_once: the first pause is a stall inside a commit, "
                             "before its cache flush (commit_stall.py)")
    parser.add_argument("--stall-at", choices=("commit", "iteration"), default="commit",
                        help="with --stall-first: stall inside a commit, or right after a "
                             "regular iteration handed its output to the producer")
    args = parser.parse_args(argv)
    failed = 0
    for i in range(args.runs):
        plan = PausePlan(args.seed + i, args.keys, args.batch, args.interval, args.rounds,
                         args.hold, args.gap, args.guarantee, args.total,
                         not args.no_settle, args.cache, args.max_poll_records,
                         args.stall_first, args.framework, args.stall_at, args.commit_ms)
        workdir = Path(tempfile.mkdtemp(prefix=f"pause-feed-{plan.seed}-"))
        result = run_pause_feed(plan, workdir, args.kafka)
        print(f"run {i + 1}/{args.runs}: {result.report()}", flush=True)
        if result.ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        failed += not result.ok
    print(f"pause-feed on {args.kafka}: {args.runs - failed} of {args.runs} runs passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
