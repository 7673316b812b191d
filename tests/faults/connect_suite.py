"""``make connect-faults``: every Connect fault kind alone, under both guarantees, each on a
fresh broker and two workers (about half a minute a run). Not part of `make test`; the CI mode
(test_connect_faults.py) combines the kinds into two runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from .connect_harness import KINDS, Schedule, run_connect

RUNS = [(guarantee, kind, 400 + i) for i, (guarantee, kind) in enumerate(
    (g, k) for g in ("exactly_once", "at_least_once") for k in KINDS)]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("guarantee", "kind", "seed"), RUNS,
                         ids=[f"{g}-{k}" for g, k, _ in RUNS])
def test_connect_fault(tmp_path: Path, guarantee: str, kind: str, seed: int) -> None:
    result = run_connect(guarantee, Schedule.of(seed, [kind]), tmp_path)
    print(result.report())
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.connect_harness --seed {seed} --minutes 0 --guarantee "
                       f"{guarantee} --faults {kind}")
