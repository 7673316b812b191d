"""The scenario catalogue: one topology per operator family, its input and how to compare.

Each ``Scenario`` names a topology builder (run by the app runner in child processes and by the
TopologyTestDriver oracle in-process), a seeded input generator, the output topic and its
serdes, and the comparison rules. Inputs are designed so that the result does not depend on how
the runtime interleaves partitions: timestamps only grow in produce order (no record is ever
late, whatever a partition's stream time), tables that a stream joins against are loaded first
and never change, and windowed inputs end with a "flush" record on every partition so each
task's stream time closes every window, as the driver's single stream time does.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams import (
    Materialized,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from streams.kafka.batching import default_partition
from streams.topology.topology import Topology

PARTITIONS = 4
S, L, J = Serdes.string(), Serdes.long(), Serdes.json()
# The full hour before the last one (1-2 hours ago): within retention of now, since a broker
# deletes older segments from 30 s after it starts (log.initial.task.delay.ms), and windowed
# changelogs keep only the store's retention + 1 day (windowstore.changelog.additional.
# retention.ms): records from yesterday's midnight (24-48 hours old) had their session and
# window changelogs deleted during a run (seen after a broker restart in soak seed 4250).
# Hour-aligned, so that windows fall as from any other hour (not helpers.RECENT_TS, which app
# instances would import too).
BASE_TS = (int(time.time() * 1000) // 3_600_000 - 1) * 3_600_000

Rec = tuple[str, Any, Any, int]  # (topic, key, value, timestamp)


@dataclass
class InputPlan:
    """What to produce: ``preload`` before the instances start, then ``chunks`` during faults.

    ``sync_topics`` must be fully committed by the application's group before the first chunk
    (a stream-table join would otherwise race the table's loading, which is not a fault).
    """

    preload: list[Rec] = field(default_factory=list)
    sync_topics: tuple[str, ...] = ()
    chunks: list[list[Rec]] = field(default_factory=list)

    def all_records(self) -> list[Rec]:
        return [*self.preload, *(r for chunk in self.chunks for r in chunk)]


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[float], Topology]  # record delay in seconds (0 in the oracle)
    inputs: dict[str, tuple[Any, Any]]  # input topic -> (key serde, value serde)
    generate: Callable[[random.Random, int, int], InputPlan]  # rng, chunks, records per chunk
    output: str
    key_serde: Any
    value_serde: Any
    # The per-key output order is the same in any run (one input partition feeds each output
    # key): with the record cache off, whole per-key sequences can be compared.
    sequences: bool = False
    # A tombstone and no record at all mean the same final state (table-like outputs).
    tombstone_is_absent: bool = False
    # at_least_once acceptance for aggregates: over-counting is allowed, loss is not.
    # ``excess(expected, actual)`` returns how much was over-counted, or None if anything is
    # below the expected value. None here: values must be equal under at_least_once too.
    excess: Callable[[Any, Any], int | None] | None = None
    # Output keys are input keys and values count input records: at_least_once may over-count
    # a key by at most the records a replay can repeat (see harness.replay_bound).
    bounded_overcount: bool = False
    # at_least_once, windowed aggregations ("windows" or "sessions"): input replayed after a
    # crash is processed again from a stream time of nothing, as Kafka's processors do, while
    # the restored store hides what is older than its retention; a window the store hides is
    # rebuilt from the replayed records alone and forwarded after the full one (a smaller
    # value may come last), and a hidden session is rebuilt in pieces (extra session keys
    # inside the real one). compare.py accepts exactly that.
    rebuilt_on_replay: str | None = None


def _delay(seconds: float) -> Callable[[Any, Any], None]:
    """A peek that slows processing so that faults land mid-batch (a no-op in the oracle)."""
    if seconds <= 0:
        return lambda key, value: None
    return lambda key, value: time.sleep(seconds)


def _count_excess(expected: Any, actual: Any) -> int | None:
    if actual is None or actual < expected:
        return None
    return actual - expected


def _fields_excess(expected: dict[str, int], actual: Any) -> int | None:
    if not isinstance(actual, dict) or any(actual.get(k, 0) < v for k, v in expected.items()):
        return None
    return sum(actual[k] - v for k, v in expected.items())


def _flush_keys(prefix: str) -> list[str]:
    """One key per input partition (murmur2, as producers partition), to advance every task's
    stream time at the end of a windowed input."""
    keys: dict[int, str] = {}
    i = 0
    while len(keys) < PARTITIONS:
        key = f"{prefix}{i}"
        keys.setdefault(default_partition(key.encode(), PARTITIONS), key)
        i += 1
    return [keys[p] for p in range(PARTITIONS)]


def _spread(rng: random.Random, chunks: int, per_chunk: int,
            make: Callable[[random.Random, int], tuple[str, Any, Any]],
            step: Callable[[random.Random], int] = lambda rng: 10) -> list[list[Rec]]:
    """``chunks`` lists of records with strictly growing timestamps."""
    ts = BASE_TS + 100_000
    result = []
    for c in range(chunks):
        chunk = []
        for i in range(per_chunk):
            ts += step(rng)
            topic, key, value = make(rng, c * per_chunk + i)
            chunk.append((topic, key, value, ts))
        result.append(chunk)
    return result


# -- (g) count by key ---------------------------------------------------------------------------


def count_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("count-input", key_serde=S, value_serde=S)
        .peek(_delay(delay))
        .group_by_key()
        .count("count-store")
        .to_stream()
        .to("count-output", key_serde=S, value_serde=L))
    return builder.build()


def count_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    keys = [f"key{i}" for i in range(16)]
    return InputPlan(chunks=_spread(
        rng, chunks, per_chunk, lambda r, i: ("count-input", r.choice(keys), f"v{i}")))


# -- (a) select_key + stream-table join -----------------------------------------------------------


def join_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    users = builder.table("join-users", key_serde=S, value_serde=S)
    (builder.stream("join-clicks", key_serde=S, value_serde=S)
        .peek(_delay(delay))
        .select_key(lambda key, value: key.upper())  # a real re-key: a repartition topic
        # explicit serdes: the default-serde repartition path is being fixed separately
        .join(users, lambda click, region: f"{click}@{region}", key_serde=S, value_serde=S)
        .to("join-output", key_serde=S, value_serde=S))
    return builder.build()


def join_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    users = [f"user{i}" for i in range(24)]
    regions = ["eu", "us", "ap"]
    # user23 has no table row: the inner join drops its clicks (in both runs)
    preload = [("join-users", u.upper(), rng.choice(regions), BASE_TS + i)
               for i, u in enumerate(users[:-1])]
    return InputPlan(preload=preload, sync_topics=("join-users",), chunks=_spread(
        rng, chunks, per_chunk, lambda r, i: ("join-clicks", r.choice(users), f"page{i}")))


# -- (b) tumbling count + suppress(until_window_closes) -----------------------------------------


WINDOW_MS = 2_000
WINDOWED = Serdes.windowed(S, WINDOW_MS)


def suppress_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("window-input", key_serde=S, value_serde=S)
        .peek(_delay(delay))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, 3_000))
        .count(Materialized("window-counts"))
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to("window-output", key_serde=WINDOWED, value_serde=L))
    return builder.build()


def suppress_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    keys = [f"sensor{i}" for i in range(10)]
    plan = InputPlan(chunks=_spread(
        rng, chunks, per_chunk, lambda r, i: ("window-input", r.choice(keys), "x"),
        step=lambda r: r.randint(5, 25)))
    end = plan.chunks[-1][-1][3] + 10 * WINDOW_MS
    plan.chunks[-1].extend(("window-input", k, "flush", end) for k in _flush_keys("flush"))
    return plan


# -- (c) KTable-KTable foreign-key join ----------------------------------------------------------


def fk_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    orders = builder.table("fk-orders", key_serde=S, value_serde=S)
    products = builder.table("fk-products", key_serde=S, value_serde=S)
    (orders.join(products, lambda order, product: f"{order}->{product}",
                 foreign_key_extractor=lambda order: order.split(":")[0])
        .to_stream()
        .peek(_delay(delay))
        .to("fk-output", key_serde=S, value_serde=S))
    return builder.build()


def fk_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    products = [f"prod{i}" for i in range(12)]
    orders = [f"order{i}" for i in range(40)]

    def make(r: random.Random, i: int) -> tuple[str, Any, Any]:
        roll = r.random()
        if roll < 0.25:
            return "fk-products", r.choice(products), f"name{i}"
        if roll < 0.30:
            return "fk-orders", r.choice(orders), None  # a deleted order
        return "fk-orders", r.choice(orders), f"{r.choice(products)}:{i}"

    return InputPlan(chunks=_spread(rng, chunks, per_chunk, make))


# -- (d) session windows count ------------------------------------------------------------------


SESSION_GAP_MS = 300
SESSIONED = Serdes.session_windowed(S)


def session_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("session-input", key_serde=S, value_serde=S)
        .peek(_delay(delay))
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(SESSION_GAP_MS))
        .count(Materialized("session-counts"))
        .to_stream()
        .to("session-output", key_serde=SESSIONED, value_serde=L))
    return builder.build()


def session_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    users = [f"visitor{i}" for i in range(8)]
    # mostly small steps (sessions grow and merge), now and then a pause that ends sessions
    return InputPlan(chunks=_spread(
        rng, chunks, per_chunk, lambda r, i: ("session-input", r.choice(users), "hit"),
        step=lambda r: r.randint(1, 40) if r.random() > 0.03 else r.randint(400, 1500)))


# -- (e) cogroup --------------------------------------------------------------------------------


def cogroup_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    clicks = builder.stream("cogroup-clicks", key_serde=S, value_serde=L).peek(_delay(delay))
    views = builder.stream("cogroup-views", key_serde=S, value_serde=L).peek(_delay(delay))
    (clicks.group_by_key()
        .cogroup(lambda k, v, agg: {**agg, "clicks": agg["clicks"] + v})
        .cogroup(views.group_by_key(), lambda k, v, agg: {**agg, "views": agg["views"] + v})
        .aggregate(lambda: {"clicks": 0, "views": 0}, Materialized("profiles", value_serde=J))
        .to_stream()
        .to("cogroup-output", key_serde=S, value_serde=J))
    return builder.build()


def cogroup_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    customers = [f"cust{i}" for i in range(14)]

    def make(r: random.Random, i: int) -> tuple[str, Any, Any]:
        topic = "cogroup-clicks" if r.random() < 0.5 else "cogroup-views"
        return topic, r.choice(customers), r.randint(1, 5)

    return InputPlan(chunks=_spread(rng, chunks, per_chunk, make))


# -- (f) global table join ----------------------------------------------------------------------


def global_topology(delay: float) -> Topology:
    builder = StreamsBuilder()
    customers = builder.global_table("global-customers", key_serde=S, value_serde=S)
    (builder.stream("global-orders", key_serde=S, value_serde=S)
        .peek(_delay(delay))
        .join(customers, lambda order, name: f"{order} for {name}",
              key_selector=lambda key, value: value.split("|")[0])
        .to("global-output", key_serde=S, value_serde=S))
    return builder.build()


def global_input(rng: random.Random, chunks: int, per_chunk: int) -> InputPlan:
    customers = [f"c{i}" for i in range(30)]
    orders = [f"order{i}" for i in range(50)]
    preload = [("global-customers", c, f"Customer {c}", BASE_TS + i)
               for i, c in enumerate(customers[:-2])]  # c28, c29: no match, dropped
    return InputPlan(preload=preload, chunks=_spread(
        rng, chunks, per_chunk,
        lambda r, i: ("global-orders", r.choice(orders), f"{r.choice(customers)}|item{i}")))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("count", count_topology, {"count-input": (S, S)}, count_input,
             "count-output", S, L, sequences=True, excess=_count_excess,
             bounded_overcount=True),
    Scenario("join", join_topology, {"join-users": (S, S), "join-clicks": (S, S)}, join_input,
             "join-output", S, S, sequences=True),
    Scenario("suppress", suppress_topology, {"window-input": (S, S)}, suppress_input,
             "window-output", WINDOWED, L, sequences=True, excess=_count_excess,
             rebuilt_on_replay="windows"),
    Scenario("fk_join", fk_topology, {"fk-orders": (S, S), "fk-products": (S, S)}, fk_input,
             "fk-output", S, S, tombstone_is_absent=True),
    Scenario("session", session_topology, {"session-input": (S, S)}, session_input,
             "session-output", SESSIONED, L, sequences=True, tombstone_is_absent=True,
             excess=_count_excess, rebuilt_on_replay="sessions"),
    Scenario("cogroup", cogroup_topology, {"cogroup-clicks": (S, L), "cogroup-views": (S, L)},
             cogroup_input, "cogroup-output", S, J, excess=_fields_excess),
    Scenario("global", global_topology, {"global-customers": (S, S), "global-orders": (S, S)},
             global_input, "global-output", S, S, sequences=True),
]}
