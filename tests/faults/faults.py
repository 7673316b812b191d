"""Faults and schedules of faults. A schedule is fully determined by its seed.

Each fault gets two input chunks: ``before`` is produced just ahead of it (so the fault lands
while that chunk is being processed) and ``during`` while the fault is in effect (or right
after, when the broker is down). Durations held here (a pause, an outage) are the faults
themselves; the harness waits for instances by polling.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .app_runner import SESSION_TIMEOUT_MS
from .cluster import Cluster

KINDS = ("kill", "pause", "broker_restart", "broker_outage", "scale_out", "scale_in")
# Drawn only on request (soak --kafka cluster), so that every earlier seed keeps its schedule:
# a broker SIGKILLed (on a cluster one node: its partitions' leadership moves) and restarted.
CLUSTER_KINDS = (*KINDS, "broker_kill")
ALL_KINDS = CLUSTER_KINDS
Produce = Callable[[], None]


@dataclass(frozen=True)
class Fault:
    kind: str
    pick: int  # which live instance (index modulo the live count)
    lead_ms: int  # how long after ``before`` the fault strikes
    hold_s: float = 0.0  # pause or outage duration

    def describe(self) -> str:
        extra = f" {self.hold_s:.0f}s" if self.hold_s else ""
        return f"{self.kind}{extra}"

    def apply(self, cluster: Cluster, before: Produce, during: Produce) -> None:
        before()
        time.sleep(self.lead_ms / 1000)  # the moment of the fault, not a synchronisation
        getattr(self, f"_{self.kind}")(cluster, during)
        cluster.wait_running()

    def _target(self, cluster: Cluster):  # noqa: ANN202 - an AppInstance
        live = cluster.live()
        return live[self.pick % len(live)]

    def _kill(self, cluster: Cluster, during: Produce) -> None:
        target = self._target(cluster)
        target.kill()
        during()
        target.start()

    def _pause(self, cluster: Cluster, during: Produce) -> None:
        target = self._target(cluster)
        target.pause()
        try:
            during()
            time.sleep(self.hold_s)  # held past the session timeout: the fault itself
        finally:
            target.resume()

    def _broker_restart(self, cluster: Cluster, during: Produce) -> None:
        cluster.stop_broker()
        cluster.start_broker()
        during()

    def _broker_kill(self, cluster: Cluster, during: Produce) -> None:
        node = cluster.kill_broker(self.pick)
        try:
            during()  # on a cluster the other nodes take over; a single broker is away
        finally:
            cluster.restart_killed_broker(node)

    def _broker_outage(self, cluster: Cluster, during: Produce) -> None:
        cluster.stop_broker()
        time.sleep(self.hold_s)  # the outage itself
        cluster.start_broker()
        during()

    def _scale_out(self, cluster: Cluster, during: Produce) -> None:
        cluster.add_instance()
        during()

    def _scale_in(self, cluster: Cluster, during: Produce) -> None:
        if len(cluster.live()) < 2:  # never scale in to nothing: scale out instead
            self._scale_out(cluster, during)
            return
        self._target(cluster).stop()
        during()


@dataclass
class Schedule:
    seed: int
    faults: list[Fault] = field(default_factory=list)

    def describe(self) -> str:
        return ", ".join(f.describe() for f in self.faults) or "no faults"

    @staticmethod
    def of(seed: int, kinds: list[str], outage_s: float = 10.0) -> Schedule:
        """These fault kinds in this order, with seeded targets and timings."""
        rng = random.Random(seed)
        return Schedule(seed, [_fault(rng, kind, outage_s) for kind in kinds])

    @staticmethod
    def random(seed: int, count: int, outage_s: float = 30.0,
               kinds: tuple[str, ...] = KINDS) -> Schedule:
        rng = random.Random(seed)
        return Schedule(seed, [_fault(rng, rng.choice(kinds), outage_s)
                               for _ in range(count)])


def _fault(rng: random.Random, kind: str, outage_s: float) -> Fault:
    if kind not in ALL_KINDS:
        raise ValueError(f"unknown fault {kind!r}; known: {', '.join(ALL_KINDS)}")
    hold = 0.0
    if kind == "pause":
        hold = SESSION_TIMEOUT_MS / 1000 + rng.uniform(2.0, 4.0)
    elif kind == "broker_outage":
        hold = outage_s
    return Fault(kind, rng.randrange(1000), rng.randint(20, 400), hold)
