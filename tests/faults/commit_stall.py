"""Faults the signals cannot place: the process stands still at a chosen point of the stream
thread's loop, under at_least_once.

- ``commit``: inside a commit, before the record caches are flushed into the changelog and
  output topics (where the commit asked a Heartbeat before the membership lease: a pause right
  after its answer was the window that lost counts).
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

from streams.kafka.batching import RecordCollector
from streams.runtime.committer import Committer

WHERE = ("commit", "iteration")


def install(trigger: Path, seconds: float, where: str = "commit") -> None:
    done: list[bool] = []

    def stall() -> None:
        done.append(True)
        print("STALL begin", flush=True)
        time.sleep(seconds)  # the fault itself: the process stands still
        print("STALL end", flush=True)

    if where == "commit":
        real_commit = Committer.commit

        async def stall_then_commit(self: Committer, *args: Any, **kwargs: Any) -> None:
            if not done and not self.eos and self.tasks.tasks and trigger.exists():
                stall()  # the commit has begun; nothing is flushed yet
            await real_commit(self, *args, **kwargs)

        Committer.commit = stall_then_commit  # type: ignore[method-assign]
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
