"""One flush at a time in the background, so Spark writes while the worker consumes and converts.

The worker calls a sink task's methods one at a time: a flush run inside ``put`` leaves Spark idle
while records are fetched and converted, and the fetch idle while Spark writes. A
:class:`FlushThread` runs at most one flush behind the caller. Keeping it to one keeps commit
order (entries are committed in the order flushes were handed over) and bounds memory: handing
over a second flush waits for the first (backpressure).

A failed flush is *sticky*: its offsets were never committed, and committing a later flush would
skip them (the commit log keeps the max offset per partition), so once one fails no other may
run; :meth:`check` raises the failure to the task from then on, the worker fails the task, and
the next start rewinds to the commit log, losing nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from connect.api import ConnectException


class FlushThread:
    """A single daemon-less worker thread running flushes in submission order, one in flight."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._future: Future[None] | None = None
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    @property
    def busy(self) -> bool:
        """A flush was handed over and has not finished yet."""
        future = self._future
        return future is not None and not future.done()

    def submit(self, flush: Callable[[], None]) -> None:
        """Run ``flush`` in the background once the previous one is done (waits for it)."""
        self.wait()
        self.check()
        self._future = self._executor.submit(flush)

    def wait(self) -> None:
        """Wait for the flush in flight, if any; a failure is kept for :meth:`check`."""
        future = self._future
        if future is None:
            return
        try:
            future.result()
        except BaseException as exc:  # noqa: BLE001 - kept, raised by check()
            with self._lock:
                if self.error is None:
                    self.error = exc
        finally:
            if self._future is future:
                self._future = None

    def check(self) -> None:
        """Raise (as ConnectException) the failure of any finished background flush."""
        future = self._future
        if future is not None and future.done():
            self.wait()
        if self.error is not None:
            error = self.error
            if isinstance(error, ConnectException):
                raise ConnectException(f"SparkSink background flush failed: {error}") from error
            raise ConnectException(f"SparkSink background flush failed: "
                                   f"{type(error).__name__}: {error}") from error

    def shutdown(self) -> None:
        """Wait for the flush in flight and end the thread (the task is stopping)."""
        self.wait()
        self._executor.shutdown(wait=True)
