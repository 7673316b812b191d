"""A fault the signals cannot place: the process stands still *inside* an at_least_once commit,
right after its membership check (a Heartbeat) was answered and before the record caches are
flushed into the changelog and output topics.

A SIGSTOP from outside lands there only by chance (the pause scenario under at_least_once hit
it in 3 of 5 runs of its first pause). Installed in an app instance (app_runner's
``--stall-s``), the first commit that starts after ``trigger`` exists blocks the whole process
for ``seconds`` (``time.sleep`` on the event loop: no heartbeat, no fetch, as under SIGSTOP) and
prints ``STALL begin`` and ``STALL end`` around it for the harness.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import streams.runtime.committer as committer_module


def install(trigger: Path, seconds: float) -> None:
    real_check = committer_module.check_membership
    done: list[bool] = []

    async def check_then_stall(consumer: Any, group: Any) -> None:
        await real_check(consumer, group)
        if not done and trigger.exists():
            done.append(True)
            print("STALL begin", flush=True)
            time.sleep(seconds)  # the fault itself: the process stands still
            print("STALL end", flush=True)

    committer_module.check_membership = check_then_stall  # type: ignore[assignment]
