"""Flushes in the background, so Spark writes while the worker consumes and converts.

The worker calls a sink task's methods one at a time: a flush run inside ``put`` leaves Spark idle
while records are fetched and converted, and the fetch idle while Spark writes. A
:class:`FlushThread` runs up to ``max_in_flight`` flushes behind the caller (two by default:
Spark runs two write jobs at once some 40 % faster than one after the other on two cores).

Their Spark writes overlap, their commits do not: each flush calls its *turn* before it commits,
and a turn comes once every flush handed over before has finished, in hand-over order. So entries
are committed in the order flushes were handed over, and memory stays bounded: handing over one
more flush than ``max_in_flight`` waits for the oldest (backpressure).

A failed flush is *sticky*: its offsets were never committed, and committing a later flush would
skip them (the commit log keeps the max offset per partition), so once one fails no later one
commits (its turn raises); :meth:`check` raises the failure to the task from then on, the worker
fails the task, and the next start rewinds to the commit log, losing nothing.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from connect.api import ConnectException

Turn = Callable[[], None]


class FlushThread:
    """Worker threads running flushes, at most ``max_in_flight`` at once, committing in order."""

    def __init__(self, name: str, max_in_flight: int = 2) -> None:
        self.max_in_flight = max_in_flight
        self._executor = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix=name)
        self._futures: deque[Future[None]] = deque()
        self._cond = threading.Condition()
        self._next_ticket = 0  # handed to the next flush submitted
        self._serving = 0  # the ticket whose turn it is
        self.error: BaseException | None = None

    @property
    def busy(self) -> bool:
        """A flush was handed over and has not finished yet."""
        return any(not f.done() for f in self._futures)

    def submit(self, flush: Callable[[Turn], None]) -> None:
        """Run ``flush(turn)`` in the background once fewer than ``max_in_flight`` are (waits).

        ``flush`` must call ``turn()`` before it commits: it returns once every flush handed
        over before has finished, and raises if one of them failed."""
        while len(self._futures) >= self.max_in_flight:
            self._wait_oldest()
        self.check()
        ticket = self._next_ticket
        self._next_ticket += 1
        self._futures.append(self._executor.submit(self._run, flush, ticket))

    def _run(self, flush: Callable[[Turn], None], ticket: int) -> None:
        try:
            flush(lambda: self._await_turn(ticket))
        except BaseException as exc:
            with self._cond:
                if self.error is None:
                    self.error = exc
            raise
        finally:
            with self._cond:  # pass the turn on, in order, whatever happened
                self._cond.wait_for(lambda: self._serving == ticket)
                self._serving = ticket + 1
                self._cond.notify_all()

    def _await_turn(self, ticket: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._serving == ticket)
            if self.error is not None:
                raise ConnectException("an earlier SparkSink flush failed: not committing this "
                                       "one") from self.error

    def _wait_oldest(self) -> None:
        future = self._futures[0]
        try:
            future.result()
        except BaseException:  # noqa: BLE001 - kept in self.error, raised by check()
            pass
        finally:
            if self._futures and self._futures[0] is future:
                self._futures.popleft()

    def wait(self) -> None:
        """Wait for every flush in flight; a failure is kept for :meth:`check`."""
        while self._futures:
            self._wait_oldest()

    def check(self) -> None:
        """Raise (as ConnectException) the failure of any finished background flush."""
        while self._futures and self._futures[0].done():
            self._wait_oldest()
        with self._cond:
            error = self.error
        if error is not None:
            if isinstance(error, ConnectException):
                raise ConnectException(f"SparkSink background flush failed: {error}") from error
            raise ConnectException(f"SparkSink background flush failed: "
                                   f"{type(error).__name__}: {error}") from error

    def shutdown(self) -> None:
        """Wait for the flushes in flight and end the threads (the task is stopping)."""
        self.wait()
        self._executor.shutdown(wait=True)
