"""The bounded CI mode of the fault harness: every catalogue scenario and every fault kind at
least once, both guarantees for the count scenario, fixed seeds (``make test-faults`` runs more
pairings: catalogue_suite.py). Each run starts a broker and two app
instances as OS processes and compares the output with the TopologyTestDriver's (see
``harness.py``); a failure prints the diff and the seed (rerun it with ``soak.py --seed``).

``make soak SOAK_MINUTES=30`` runs random schedules over random scenarios instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from .faults import Schedule
from .harness import run_scenario
from .pause_feed import PausePlan, run_pause_feed
from .soak import plan_run

# (scenario, guarantee, cache bytes, faults, seed): every operator family and every fault kind
# at least once, one fault per run so that a failure names its fault. at_least_once runs with
# the record cache on (Kafka's default). The rest of the catalogue (more pairings of family,
# guarantee and fault) is catalogue_suite.py, `make test-faults`, kept apart for the budget.
CI_RUNS = [
    ("count", "exactly_once_v2", 0, ["kill"], 101),
    ("count", "exactly_once_v2", 0, ["broker_restart"], 109),
    ("count", "at_least_once", 10 * 1024 * 1024, ["kill"], 110),
    ("join", "exactly_once_v2", 0, ["pause"], 103),
    ("suppress", "exactly_once_v2", 0, ["kill"], 104),
    ("fk_join", "exactly_once_v2", 0, ["scale_out"], 105),
    ("session", "exactly_once_v2", 0, ["broker_outage"], 106),
    ("cogroup", "exactly_once_v2", 0, ["broker_restart"], 113),
    ("global", "exactly_once_v2", 0, ["scale_in"], 108),
]
# With num.standby.replicas=1: a killed instance's tasks fail over onto promoted standbys.
STANDBY_RUNS = [
    ("count", "exactly_once_v2", 0, ["kill"], 114),
]
# Also run on Apache Kafka by `make test` (marker on_kafka): a broker restart, a zombie.
ON_KAFKA = {"count-exactly_once_v2-cache0-broker_restart", "join-exactly_once_v2-cache0-pause"}
CI_OUTAGE_S = 10.0  # the soak mode holds the broker down for 30 s


def catalogue_params(runs: list[tuple[str, str, int, list[str], int]], standby_runs: list[
        tuple[str, str, int, list[str], int]]) -> list[object]:
    """pytest params named scenario-guarantee-cacheN-faults[-standbyN], on_kafka where listed."""
    return [pytest.param(*run, standbys, id=name,
                         marks=[pytest.mark.on_kafka] if name in ON_KAFKA else [])
            for runs_, standbys in ((runs, 0), (standby_runs, 1))
            for run in runs_
            for name in [f"{run[0]}-{run[1]}-cache{int(run[2] > 0)}-{'+'.join(run[3])}"
                         + (f"-standby{standbys}" if standbys else "")]]


def check_scenario(tmp_path: Path, scenario: str, guarantee: str, cache: int,
                   faults: list[str], seed: int, standbys: int, kafka_kind: str) -> None:
    """One catalogue run; a failure prints the report and the soak command that reruns it."""
    result = run_scenario(scenario, guarantee, Schedule.of(seed, faults, CI_OUTAGE_S),
                          tmp_path, cache_bytes=cache, standbys=standbys, kafka=kafka_kind)
    print(result.report())
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m tests.faults.soak "
                       f"--scenario {scenario} --guarantee {guarantee} --faults "
                       f"{','.join(faults)} --cache {cache} --standbys {standbys} --seed {seed} "
                       f"--outage {CI_OUTAGE_S:.0f} --minutes 0 --kafka {kafka_kind}")


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize(("scenario", "guarantee", "cache", "faults", "seed", "standbys"),
                         catalogue_params(CI_RUNS, STANDBY_RUNS))
def test_scenario_survives_fault(tmp_path: Path, scenario: str, guarantee: str, cache: int,
                                 faults: list[str], seed: int, standbys: int,
                                 kafka_kind: str) -> None:
    check_scenario(tmp_path, scenario, guarantee, cache, faults, seed, standbys, kafka_kind)


# Soak seeds that once failed, rerun as the soak plans them (python -m tests.faults.soak
# --seed S --minutes 0): suppress under at_least_once re-emitting a stale 'final' count after
# broker restarts (900012). Not 900013 (session windows, at_least_once, a pause right after a
# broker restart) yet: it failed now and then (3 of 6 runs), because the paused instance's
# producer held records it could not send during the restart and delivered them the moment the
# process resumed. The membership lease now holds such requests until a Heartbeat confirms the
# member (see docs/deploying.md, "at_least_once and paused instances"); 3 of 3 reruns passed
# since, too few to call it fixed.
SOAK_SEEDS = [900012]


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("seed", SOAK_SEEDS, ids=[f"soak-seed-{s}" for s in SOAK_SEEDS])
def test_a_soak_seed_that_once_failed(tmp_path: Path, seed: int) -> None:
    args = argparse.Namespace(scenario=None, guarantee=None, faults=None, cache=None,
                              standbys=0, outage=30.0, kafka="bundled")  # as when they failed
    scenario, guarantee, cache, standbys, schedule = plan_run(seed, args)
    result = run_scenario(scenario, guarantee, schedule, tmp_path, cache_bytes=cache,
                          standbys=standbys)
    print(result.report())
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m tests.faults.soak "
                       f"--seed {seed} --standbys 0 --minutes 0")


# The pause scenario of issue [15], kept short: input flows without a break while both
# instances are paused in turn past the session timeout; every key's final count (read
# read_committed) must equal the records sent for it. The full shape (10 runs, 14 s pauses,
# three rounds) is `python -m tests.faults.pause_feed --runs 10`.
CI_PAUSE_FEED = PausePlan(seed=7, keys=50, batch=100, interval_s=0.25, rounds=1, hold_s=8.0,
                          gap_s=1.0, settle=False)


@pytest.mark.slow
@pytest.mark.on_kafka
@pytest.mark.timeout(420)
def test_counts_survive_pauses_while_input_flows(tmp_path: Path, kafka_kind: str) -> None:
    result = run_pause_feed(CI_PAUSE_FEED, tmp_path, kafka_kind)
    print(result.report())
    assert result.records_sent > 0 and result.pauses == 2
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.pause_feed --seed 7 --keys 50 --batch 100 --rounds 1 "
                       f"--hold 8 --gap 1 --no-settle --kafka {kafka_kind}")


# at_least_once, the same shape, but the first pause is a stall placed exactly where a SIGSTOP
# lost counts in 3 of 5 runs (python -m tests.faults.pause_feed --guarantee at_least_once
# --seed 300 ...): inside app0's commit, before its record caches are flushed (where the commit
# used to ask a Heartbeat first). app1 takes the tasks and counts on; then app1 is paused just before
# app0 resumes, and the tasks move back to app0, which restores them from the changelog. Before the membership lease
# app0 flushed its stale counts into the changelog after app1's, and that restore counted short.
CI_STALL_IN_COMMIT = PausePlan(seed=8, keys=50, batch=100, interval_s=0.25, rounds=1,
                               hold_s=12.0, gap_s=1.0, guarantee="at_least_once", settle=False,
                               stall_first=True)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_at_least_once_counts_survive_a_stall_inside_the_commit(tmp_path: Path) -> None:
    result = run_pause_feed(CI_STALL_IN_COMMIT, tmp_path)
    print(result.report())
    assert result.records_sent > 0 and result.pauses == 2
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.pause_feed --guarantee at_least_once --stall-first "
                       f"--seed 8 --keys 50 --batch 100 --rounds 1 --hold 12 --gap 1 --no-settle")


# `make test-cluster` (--kafka=cluster): every exactly_once_v2 scenario while one node of a
# 3-node Apache Kafka cluster is SIGKILLed (the leaders of its partitions move to the others)
# and restarted; the internal topics take the cluster's replication factor (3).
CLUSTER_RUNS = [(name, ["broker_kill"], 300 + i) for i, name in enumerate(sorted(
    ["count", "join", "suppress", "fk_join", "session", "cogroup", "global"]))]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("scenario", "faults", "seed"), CLUSTER_RUNS,
                         ids=[f"{r[0]}-exactly_once_v2-broker_kill" for r in CLUSTER_RUNS])
def test_scenario_survives_a_broker_kill_on_a_cluster(tmp_path: Path, scenario: str,
                                                      faults: list[str], seed: int,
                                                      kafka_kind: str) -> None:
    if kafka_kind != "cluster":
        pytest.skip("a broker kill moves partition leaders only on a cluster (--kafka=cluster)")
    result = run_scenario(scenario, "exactly_once_v2", Schedule.of(seed, faults, CI_OUTAGE_S),
                          tmp_path, kafka=kafka_kind)
    print(result.report())
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m tests.faults.soak "
                       f"--scenario {scenario} --guarantee exactly_once_v2 --faults "
                       f"{','.join(faults)} --cache 0 --standbys 0 --seed {seed} --minutes 0 "
                       f"--kafka cluster")
