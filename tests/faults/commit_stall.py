"""Faults the signals cannot place: the process stands still at a chosen point of the stream
thread's loop, under at_least_once.

- ``commit``: inside a commit, right after its membership check (a Heartbeat) was answered and
  before the record caches are flushed into the changelog and output topics.
- ``iteration``: outside the commit, right after a regular loop iteration handed its output to
  the producer (``RecordCollector.flush`` called by ``StreamThread._iteration``) and before the
  producer's sender has written it: with the cache off every update goes out this way, so the
  producer holds store updates that are stale once the stall has outlasted the session.

A SIGSTOP from outside lands there only by chance (the pause scenario under at_least_once hit
the commit window in 3 of 5 runs of its first pause). Installed in an app instance
(app_runner's ``--stall-s`` and ``--stall-at``), the first such point reached after ``trigger``
exists blocks the whole process for ``seconds`` (``time.sleep`` on the event loop: no heartbeat,
no fetch, no produce, as under SIGSTOP) and prints ``STALL begin`` and ``STALL end`` around it
for the harness.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import streams.runtime.committer as committer_module
from streams.kafka.batching import RecordCollector

WHERE = ("commit", "iteration")


def install(trigger: Path, seconds: float, where: str = "commit") -> None:
    done: list[bool] = []

    def stall() -> None:
        done.append(True)
        print("STALL begin", flush=True)
        time.sleep(seconds)  # the fault itself: the process stands still
        print("STALL end", flush=True)

    if where == "commit":
        real_check = committer_module.check_membership

        async def check_then_stall(consumer: Any, group: Any) -> None:
            await real_check(consumer, group)
            if not done and trigger.exists():
                stall()

        committer_module.check_membership = check_then_stall  # type: ignore[assignment]
        return
    if where != "iteration":
        raise ValueError(f"stall where? {where!r} (one of {', '.join(WHERE)})")
    real_flush = RecordCollector.flush

    async def flush_then_stall(self: RecordCollector) -> None:
        # The caller, read before the first await: the thread's loop, not its commit.
        from_iteration = sys._getframe(1).f_code.co_name == "_iteration"
        handed = len(self._in_flight)
        await real_flush(self)
        if from_iteration and len(self._in_flight) > handed and not done and trigger.exists():
            stall()  # no await since the hand-over: the sender has not written it yet

    RecordCollector.flush = flush_then_stall  # type: ignore[method-assign]
