"""``make test-lease``: the at_least_once membership lease outside the commit path, in the
pause scenario (pause_feed.py). About a minute a run, so not part of `make test`, whose
CI stall test (test_faults.py) places its stall inside the commit.

The first pause of app0 is a stall right after a regular loop iteration handed its output to
the producer and before the producer's sender wrote it (commit_stall.py, ``iteration``): with
the record cache off every count update goes out that way, so the producer holds counts that
are stale once the stall has outlasted the session. app1 takes the tasks and counts on,
committing every second; it is paused just before app0 resumes, and the tasks move back to app0,
which restores them from the changelog. Without the lease app0's resumed producer wrote its
stale counts after app1's and that restore counted short (seed 9: 18 of 50 keys short by
1,477 in the changelog); with it the held requests are never sent, app0's tasks migrate, and no
key is short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .pause_feed import PausePlan, run_pause_feed

STALL_AFTER_HAND_OVER = PausePlan(seed=9, keys=50, batch=100, interval_s=0.25, rounds=1,
                                  hold_s=12.0, gap_s=1.0, guarantee="at_least_once",
                                  settle=False, cache_bytes=0, stall_first=True,
                                  stall_at="iteration", commit_ms=1000)


@pytest.mark.timeout(420)
def test_at_least_once_counts_survive_a_stall_outside_the_commit(tmp_path: Path) -> None:
    result = run_pause_feed(STALL_AFTER_HAND_OVER, tmp_path)
    print(result.report())
    assert result.records_sent > 0 and result.pauses == 2
    assert "STALL end" in (tmp_path / "app0.log").read_text(), "app0 never stalled"
    assert result.ok, (f"\n{result.report()}\nreproduce: .venv/bin/python -m "
                       f"tests.faults.pause_feed --guarantee at_least_once --stall-first "
                       f"--stall-at iteration --seed 9 --keys 50 --batch 100 --rounds 1 "
                       f"--hold 12 --gap 1 --no-settle --cache 0 --commit-ms 1000")
