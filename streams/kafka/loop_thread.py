"""An asyncio event loop on a daemon thread, for synchronous code that drives async clients.

aiokafka clients are bound to the loop they were created on and keep background tasks
(heartbeats, metadata refresh), so a synchronous caller (Spark's planning calls, a Connect worker
embedded in another program, a test) keeps one loop alive on a thread and submits coroutines to
it. Written once here; a kernel module (stdlib only) so that Connect and Spark may import it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class RunTimeoutError(TimeoutError):
    """``run()`` gave up waiting and cancelled the coroutine (a ``TimeoutError`` the coroutine
    raises itself passes through as it is)."""


class LoopThread:
    """``start()`` runs a new event loop on a daemon thread; ``run``/``submit`` hand it coroutines;
    ``stop()`` cancels what is still pending, lets it unwind, closes the loop and joins the
    thread. Safe to call from any thread but the loop's own; ``stop()`` may be called twice."""

    def __init__(self, name: str = "asyncio-loop") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def __enter__(self) -> LoopThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (for ``call_soon_threadsafe`` and the like)."""
        if self._loop is None:
            raise RuntimeError(f"{self.name}: the loop is not started")
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopped

    def start(self) -> LoopThread:
        """Start the loop's thread; returns once the loop runs. Starting twice is a no-op."""
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"{self.name}: the loop is stopped")
            if self._thread is not None:
                return self
            loop = asyncio.new_event_loop()
            started = threading.Event()
            loop.call_soon(started.set)
            self._loop = loop
            self._thread = threading.Thread(target=self._main, args=(loop,), name=self.name,
                                            daemon=True)
            self._thread.start()
        started.wait()
        return self

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the future is cancelled if ``stop()`` cancels it."""
        with self._lock:
            if self._stopped or self._loop is None:
                coro.close()  # never awaited: close it so Python does not warn
                state = "stopped" if self._stopped else "not started"
                raise RuntimeError(f"{self.name}: the loop is {state}")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception). Past
        ``timeout`` seconds the coroutine is cancelled and ``RunTimeoutError`` raised."""
        if self._thread is threading.current_thread():
            coro.close()
            raise RuntimeError(f"{self.name}: run() from the loop's own thread would deadlock")
        future = self.submit(coro)
        done, _ = concurrent.futures.wait([future], timeout)
        if not done and future.cancel():  # cancel() is False if it finished meanwhile
            raise RunTimeoutError(f"{self.name}: no result within {timeout} s")
        return future.result()

    def stop(self, timeout: float = 30.0) -> bool:
        """Cancel pending tasks, wait for them to finish, close the loop and join the thread.
        True if the thread ended within ``timeout``; a second call does nothing."""
        with self._lock:
            if self._stopped:
                return self._thread is None or not self._thread.is_alive()
            self._stopped = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return True
        if thread is threading.current_thread():
            loop.stop()  # _main cancels and closes once this callback returns
            return False
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if thread.is_alive():
            log.warning("%s: pending tasks did not finish within %s s", self.name, timeout)
            return False
        return True

    @staticmethod
    def _main(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                _cancel_pending(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does on exit: cancel every task and let each one unwind."""
    tasks = asyncio.all_tasks(loop)
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.debug("task %r failed while the loop stopped", task, exc_info=task.exception())


__all__ = ["LoopThread", "RunTimeoutError"]
