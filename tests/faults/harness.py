"""One run: a scenario's topology on >= 2 instances over 4 partitions while a fault schedule
runs, its output compared with the TopologyTestDriver's for the same input."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.kafka_io import create_topics, produce

from .catalogue import PARTITIONS, SCENARIOS, InputPlan, Rec, Scenario
from .cluster import START_TIMEOUT, Cluster
from .compare import Comparison, compare
from .faults import Schedule
from .oracle import expected_output
from .output import read_output, wait_committed

INSTANCES = 2


@dataclass
class RunResult:
    scenario: str
    guarantee: str
    schedule: Schedule
    cache_bytes: int
    comparison: Comparison
    read_reason: str
    elapsed: float
    workdir: Path
    input_records: int
    unclean: list[str] = field(default_factory=list)
    incidents: list[str] = field(default_factory=list)  # instances that died or hit ERROR
    standbys: int = 0  # num.standby.replicas

    @property
    def ok(self) -> bool:
        return self.comparison.ok and not self.incidents

    @property
    def differences(self) -> int:
        return self.comparison.differences + len(self.incidents)

    def report(self) -> str:
        status = "PASS" if self.ok else "FAIL"
        lines = [f"{status} {self.scenario} {self.guarantee} seed={self.schedule.seed} "
                 f"cache={self.cache_bytes} standbys={self.standbys} "
                 f"faults=[{self.schedule.describe()}] "
                 f"{self.input_records} input records, {self.elapsed:.0f}s "
                 f"(output read: {self.read_reason})",
                 self.comparison.summary()]
        for incident in self.incidents:
            lines.append(f"  incident: {incident}")
        if self.unclean:
            lines.append(f"  instances that did not close cleanly at the end: {self.unclean}")
        if not self.ok:
            lines.append(f"  logs: {self.workdir}")
        return "\n".join(lines)


def _produce(bootstrap: str, scenario: Scenario, records: list[Rec]) -> None:
    by_topic: dict[str, list[tuple[bytes | None, bytes | None, int]]] = defaultdict(list)
    for topic, key, value, ts in records:
        key_serde, value_serde = scenario.inputs[topic]
        by_topic[topic].append((key_serde.serialize(topic, key),
                                None if value is None else value_serde.serialize(topic, value),
                                ts))
    for topic, batch in by_topic.items():
        # Idempotent: a batch retried across a broker kill must not be written twice, or the
        # oracle's counts would miss the duplicate input (soak seed 623014 on the cluster: a
        # batch of 43 input records written at offsets 159 and 202, every count 12-17 over).
        produce(bootstrap, topic, batch, idempotent=True)


def _decoder(scenario: Scenario):  # noqa: ANN202 - records -> list of (key, value)
    topic, ks, vs = scenario.output, scenario.key_serde, scenario.value_serde
    decoded: list[tuple[Any, Any]] = []

    def decode(records: list[Any]) -> list[tuple[Any, Any]]:
        for r in records[len(decoded):]:
            decoded.append((ks.deserialize(topic, r.key),
                            None if r.value is None else vs.deserialize(topic, r.value)))
        return decoded

    return decode


def replay_bound(plan: InputPlan) -> dict[Any, int]:
    """Per input key: an upper bound of the records at_least_once can process twice.

    A fault can make an instance replay what it had not committed, at most every record
    produced so far (fault ``i`` strikes after chunks ``0 .. 2i+2``); the bound is the sum over
    the faults, plus one replay for the final rebalances.
    """
    bound: dict[Any, int] = defaultdict(int)
    seen: dict[Any, int] = defaultdict(int)
    for index, chunk in enumerate(plan.chunks):
        for _, key, _, _ in chunk:
            seen[key] += 1
        if index % 2 == 0 and index > 0 or index == len(plan.chunks) - 1:
            for key, n in seen.items():
                bound[key] += n
    return dict(bound)


LATE_DROP = "skipping record (expired"  # streams/processor/windowed.py's late-record WARN


def late_drops(cluster: Cluster) -> list[str]:
    """The late-record drops the app instances logged."""
    return [line.strip()[:240] for instance in cluster.instances
            for line in instance.output().splitlines() if LATE_DROP in line]


def input_times(plan: InputPlan) -> dict[Any, list[int]]:
    """Per input key, its records' timestamps in order."""
    times: dict[Any, list[int]] = defaultdict(list)
    for _, key, _, ts in plan.all_records():
        times[key].append(ts)
    return {key: sorted(ts) for key, ts in times.items()}


def run_scenario(name: str, guarantee: str, schedule: Schedule, workdir: Path, *,
                 per_chunk: int = 200, cache_bytes: int = 0, standbys: int = 0,
                 instances: int = INSTANCES, kafka: str = "bundled") -> RunResult:
    scenario = SCENARIOS[name]
    started = time.monotonic()
    chunks = 2 * len(schedule.faults) + 2  # one before the faults, two per fault, one after
    plan: InputPlan = scenario.generate(random.Random(schedule.seed), chunks, per_chunk)
    expected = expected_output(scenario, plan)
    workdir.mkdir(parents=True, exist_ok=True)
    app_args = ["--scenario", name, "--guarantee", guarantee, "--cache-bytes", str(cache_bytes),
                "--standbys", str(standbys)]
    cluster = Cluster(workdir, app_args, kafka)
    group = f"faults-{name}"
    decode = _decoder(scenario)
    cache_on = cache_bytes > 0
    bound = replay_bound(plan) if scenario.bounded_overcount else None
    inputs = input_times(plan)
    records: list[Any] = []
    reason = "not read"
    pending = iter(plan.chunks)
    try:
        cluster.start_broker()
        bootstrap = cluster.bootstrap
        create_topics(bootstrap, {**{t: PARTITIONS for t in scenario.inputs},
                                  scenario.output: PARTITIONS}, cluster.replication)
        _produce(bootstrap, scenario, plan.preload)
        for _ in range(instances):
            cluster.add_instance()
        try:
            cluster.wait_running()
            if plan.sync_topics:
                wait_committed(bootstrap, group, list(plan.sync_topics), START_TIMEOUT)
            _run_schedule(cluster, scenario, pending, schedule)
        except AssertionError as exc:  # an instance never got going: report, then read
            cluster.incidents.append(f"schedule stopped early: {exc}")
            for chunk in pending:  # the oracle saw all of the input: so must the run
                _produce(cluster.bootstrap, scenario, chunk)

        def done(records: list[Any]) -> bool:
            return compare(scenario, expected, decode(records), guarantee, cache_on, bound,
                           inputs).ok

        read = read_output(bootstrap, scenario.output,
                           isolation="read_committed" if guarantee == "exactly_once_v2"
                           else "read_uncommitted",
                           group=group, input_topics=list(scenario.inputs), done=done)
        records, reason = read.records, read.reason
    finally:
        unclean = cluster.close()
    comparison = compare(scenario, expected, decode(records), guarantee, cache_on, bound,
                         inputs)
    late = late_drops(cluster)
    if late:
        cluster.incidents.append(
            f"{len(late)} input records dropped as late (first: {late[0]}): every input "
            f"partition is in timestamp order, so no record is late, also when replayed after "
            f"a fault (Kafka's aggregations restart their stream time from nothing)")
    return RunResult(name, guarantee, schedule, cache_bytes, comparison, reason,
                     time.monotonic() - started, workdir, len(plan.all_records()), unclean,
                     cluster.incidents, standbys)


def _run_schedule(cluster: Cluster, scenario: Scenario, pending: Iterator[list[Rec]],
                  schedule: Schedule) -> None:
    """The first chunk, each fault with its two chunks, the last chunk; then all RUNNING."""
    def next_chunk() -> None:
        _produce(cluster.bootstrap, scenario, next(pending))

    next_chunk()
    for fault in schedule.faults:
        fault.apply(cluster, next_chunk, next_chunk)
    next_chunk()
    cluster.wait_running()
