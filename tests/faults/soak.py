"""Soak mode: random fault schedules over random scenarios for a given time.

    python -m tests.faults.soak --minutes 30 [--seed S]
    python -m tests.faults.soak --seed S --minutes 1          # reproduce the run with seed S

Run ``i`` uses seed ``S + i``; everything about it (scenario, guarantee, cache, schedule,
input) follows from that seed, so a failing run's seed reproduces it as the first run.
``--scenario``/``--guarantee``/``--faults`` pin those choices (the CI tests print such a line).
Failing runs keep their directory (logs, broker data); passing ones are removed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .catalogue import SCENARIOS
from .faults import KINDS, Schedule
from .harness import RunResult, run_scenario

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
        schedule = Schedule.random(seed, rng.randint(2, 4), args.outage)
    # Drawn apart, so that adding this choice left every earlier seed's plan as it was.
    standbys = random.Random(seed * 7919 + 1).choice([0, 1]) if args.standbys is None \
        else args.standbys
    return scenario, guarantee, cache, standbys, schedule


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="no new run starts after this (at least one run)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--guarantee", choices=GUARANTEES)
    parser.add_argument("--faults", help=f"comma-separated, from {', '.join(KINDS)}")
    parser.add_argument("--cache", type=int, default=None, help="statestore.cache.max.bytes")
    parser.add_argument("--standbys", type=int, default=None, help="num.standby.replicas")
    parser.add_argument("--outage", type=float, default=30.0, help="broker outage seconds")
    parser.add_argument("--per-chunk", type=int, default=200, help="input records per chunk")
    parser.add_argument("--keep", action="store_true", help="keep passing runs' directories")
    parser.add_argument("--kafka", choices=("bundled", "reference"), default="bundled",
                        help="our broker or Apache Kafka (tests/reference/kafka.py)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    print(f"soak: seed {seed}, {args.minutes:g} minutes", flush=True)
    end = time.monotonic() + args.minutes * 60
    results: list[RunResult] = []
    index = 0
    while index == 0 or time.monotonic() < end:
        run_seed = seed + index
        index += 1
        scenario, guarantee, cache, standbys, schedule = plan_run(run_seed, args)
        workdir = Path(tempfile.mkdtemp(prefix=f"soak-{run_seed}-"))
        print(f"-- run {index}: seed {run_seed}: {scenario} {guarantee} cache={cache} "
              f"standbys={standbys} [{schedule.describe()}]", flush=True)
        result = run_scenario(scenario, guarantee, schedule, workdir,
                              per_chunk=args.per_chunk, cache_bytes=cache, standbys=standbys,
                              kafka=args.kafka)
        results.append(result)
        print(result.report(), flush=True)
        if result.ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"   reproduce: python -m tests.faults.soak --seed {run_seed} --minutes 0 "
                  f"--outage {args.outage:g} --per-chunk {args.per_chunk} --kafka {args.kafka}", flush=True)
    return _totals(results)


def _totals(results: list[RunResult]) -> int:
    failed = [r for r in results if not r.ok]
    print("\n== soak totals ==")
    print(f"scenarios run:     {len(results)} "
          f"({', '.join(sorted({r.scenario for r in results}))})")
    print(f"faults injected:   {sum(len(r.schedule.faults) for r in results)}")
    print(f"records checked:   {sum(r.comparison.records_checked for r in results)} output, "
          f"{sum(r.input_records for r in results)} input")
    print(f"differences found: {sum(r.differences for r in results)} "
          f"in {len(failed)} failing runs")
    print(f"at_least_once over-count: "
          f"{sum(r.comparison.overcount for r in results if r.guarantee == 'at_least_once')}")
    for r in failed:
        print(f"  FAIL seed {r.schedule.seed}: {r.scenario} {r.guarantee} cache={r.cache_bytes} "
              f"[{r.schedule.describe()}] ({r.workdir})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
