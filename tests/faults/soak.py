"""Soak mode: random fault schedules over random scenarios for a given time.

    python -m tests.faults.soak --minutes 30 [--seed S]
    python -m tests.faults.soak --seed S --minutes 1          # reproduce the run with seed S

Run ``i`` uses seed ``S + i``; everything about it (scenario, guarantee, cache, schedule,
input) follows from that seed, so a failing run's seed reproduces it as the first run.
``--scenario``/``--guarantee``/``--faults`` pin those choices (the CI tests print such a line).
Failing runs keep their directory (logs, broker data); passing ones are removed.

A share of the runs (``--pause-feed-share``) are pause-feed runs (pause_feed.py): input flows
without a break while the instances are paused in turn past the session timeout, with seeded
guarantee, hold times, rounds, keys and cache. Under exactly_once_v2 every key's final count
must equal the records sent for it; under at_least_once no key may be short (over-counts are
reported), and half of those runs place their first pause inside a commit, before its cache
flush (``stall_first``).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .app_runner import SESSION_TIMEOUT_MS
from .catalogue import SCENARIOS
from .faults import CLUSTER_KINDS, KINDS, Schedule
from .harness import RunResult, run_scenario
from .pause_feed import PausePlan, PauseResult, run_pause_feed

GUARANTEES = ("exactly_once_v2", "at_least_once")
CACHE_ON = 10 * 1024 * 1024


def plan_run(seed: int, args: argparse.Namespace) -> tuple[str, str, int, int, Schedule]:
    rng = random.Random(seed)
    scenario = args.scenario or rng.choice(sorted(SCENARIOS))
    guarantee = args.guarantee or rng.choice(GUARANTEES)
    cache = rng.choice([0, CACHE_ON]) if args.cache is None else args.cache
    if args.faults:
        schedule = Schedule.of(seed, args.faults.split(","), args.outage)
    else:
        schedule = Schedule.random(seed, rng.randint(2, 4), args.outage,
                                   CLUSTER_KINDS if args.kafka == "cluster" else KINDS)
    # Drawn apart, so that adding this choice left every earlier seed's plan as it was.
    standbys = random.Random(seed * 7919 + 1).choice([0, 1]) if args.standbys is None \
        else args.standbys
    return scenario, guarantee, cache, standbys, schedule


def plan_pause_feed(seed: int, args: argparse.Namespace) -> PausePlan | None:
    """A pause-feed run for this seed, or None (a catalogue run). Drawn apart from plan_run,
    so that every catalogue seed that stays one keeps its plan."""
    if args.scenario or args.faults:
        return None
    rng = random.Random(seed * 7919 + 2)
    if rng.random() >= args.pause_feed_share:
        return None
    # Drawn apart too: the runs that were pause-feed runs under exactly_once_v2 only keep
    # every other choice.
    extra = random.Random(seed * 7919 + 3)
    guarantee = args.guarantee or extra.choice(GUARANTEES)
    stall_first = guarantee == "at_least_once" and extra.random() < 0.5
    return PausePlan(seed=seed, keys=rng.choice([20, 100]), batch=max(1, args.per_chunk // 2),
                     interval_s=0.25, rounds=rng.randint(1, 3),
                     hold_s=SESSION_TIMEOUT_MS / 1000 + rng.uniform(1.0, 9.0),
                     gap_s=rng.uniform(0.0, 3.0), settle=rng.random() < 0.5,
                     cache_bytes=rng.choice([0, CACHE_ON]) if args.cache is None else args.cache,
                     guarantee=guarantee, stall_first=stall_first)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="no new run starts after this (at least one run)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--guarantee", choices=GUARANTEES)
    parser.add_argument("--faults", help=f"comma-separated, from {', '.join(CLUSTER_KINDS)}")
    parser.add_argument("--cache", type=int, default=None, help="statestore.cache.max.bytes")
    parser.add_argument("--standbys", type=int, default=None, help="num.standby.replicas")
    parser.add_argument("--outage", type=float, default=30.0, help="broker outage seconds")
    parser.add_argument("--per-chunk", type=int, default=200, help="input records per chunk")
    parser.add_argument("--pause-feed-share", type=float, default=0.25,
                        help="share of runs that are pause-feed runs (pause_feed.py)")
    parser.add_argument("--keep", action="store_true", help="keep passing runs' directories")
    parser.add_argument("--kafka", choices=("bundled", "reference", "cluster"),
                        default="bundled",
                        help="our broker, Apache Kafka or a 3-node Apache Kafka cluster "
                             "(tests/reference/kafka.py); on the cluster broker_kill joins the "
                             "random faults")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    print(f"soak: seed {seed}, {args.minutes:g} minutes", flush=True)
    end = time.monotonic() + args.minutes * 60
    results: list[RunResult | PauseResult] = []
    index = 0
    while index == 0 or time.monotonic() < end:
        run_seed = seed + index
        index += 1
        workdir = Path(tempfile.mkdtemp(prefix=f"soak-{run_seed}-"))
        pause_plan = plan_pause_feed(run_seed, args)
        if pause_plan is not None:
            print(f"-- run {index}: seed {run_seed}: pause-feed {pause_plan.describe()}",
                  flush=True)
            paused = run_pause_feed(pause_plan, workdir, args.kafka)
            results.append(paused)
            print(paused.report(), flush=True)
            _keep_or_remove(paused.ok, workdir, run_seed, args)
            continue
        scenario, guarantee, cache, standbys, schedule = plan_run(run_seed, args)
        print(f"-- run {index}: seed {run_seed}: {scenario} {guarantee} cache={cache} "
              f"standbys={standbys} [{schedule.describe()}]", flush=True)
        result = run_scenario(scenario, guarantee, schedule, workdir,
                              per_chunk=args.per_chunk, cache_bytes=cache, standbys=standbys,
                              kafka=args.kafka)
        results.append(result)
        print(result.report(), flush=True)
        _keep_or_remove(result.ok, workdir, run_seed, args)
    return _totals(results)


def _keep_or_remove(ok: bool, workdir: Path, run_seed: int, args: argparse.Namespace) -> None:
    if ok and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"   reproduce: python -m tests.faults.soak --seed {run_seed} --minutes 0 "
              f"--outage {args.outage:g} --per-chunk {args.per_chunk} --kafka {args.kafka}",
              flush=True)


def _totals(results: list[RunResult | PauseResult]) -> int:
    runs = [r for r in results if isinstance(r, RunResult)]
    feeds = [r for r in results if isinstance(r, PauseResult)]
    failed = [r for r in results if not r.ok]
    print("\n== soak totals ==")
    print(f"scenarios run:     {len(results)} "
          f"({', '.join(sorted({r.scenario for r in runs} | ({'pause-feed'} if feeds else set())))})")
    print(f"faults injected:   {sum(len(r.schedule.faults) for r in runs) + sum(r.pauses for r in feeds)}"
          f" ({sum(r.pauses for r in feeds)} of them pauses during pause-feed runs)")
    print(f"records checked:   "
          f"{sum(r.comparison.records_checked for r in runs) + sum(r.records_read for r in feeds)}"
          f" output, {sum(r.input_records for r in runs) + sum(r.records_sent for r in feeds)}"
          f" input")
    print(f"differences found: {sum(r.differences for r in results)} "
          f"in {len(failed)} failing runs")
    print(f"at_least_once over-count: "
          f"{sum(r.comparison.overcount for r in runs if r.guarantee == 'at_least_once')}"
          f" (pause-feed runs: "
          f"{sum(r.overcount for r in feeds if r.plan.guarantee == 'at_least_once')})")
    for r in failed:
        if isinstance(r, PauseResult):
            print(f"  FAIL seed {r.plan.seed}: pause-feed {r.plan.describe()} ({r.workdir})")
        else:
            print(f"  FAIL seed {r.schedule.seed}: {r.scenario} {r.guarantee} "
                  f"cache={r.cache_bytes} [{r.schedule.describe()}] ({r.workdir})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
