"""The bounded CI mode of the Connect fault runs (``connect_harness.py``): two runs with fixed
seeds that together strike with every fault kind while lines flow through three FileStream
pipelines on distributed workers (OS processes). ``make connect-faults`` runs each kind alone
under both guarantees (``connect_suite.py``); ``python -m tests.faults.connect_harness
--minutes N`` runs random schedules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .connect_harness import Schedule, run_connect

CI_RUNS = [
    ("exactly_once", ["kill", "pause", "stop_resume", "delete_recreate", "create"], 21),
    ("at_least_once", ["kill", "stuck", "add", "restart", "remove"], 22),
]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("guarantee", "faults", "seed"), CI_RUNS,
                         ids=[f"{g}-{'+'.join(f)}" for g, f, _ in CI_RUNS])
def test_connect_pipelines_survive_faults(tmp_path: Path, guarantee: str, faults: list[str],
                                          seed: int) -> None:
    result = run_connect(guarantee, Schedule.of(seed, faults), tmp_path)
    print(result.report())
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.connect_harness --seed {seed} --minutes 0 --guarantee "
                       f"{guarantee} --faults {','.join(faults)}")
