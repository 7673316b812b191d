"""A thread of its own for each task and each connector: where their plugin code runs.

Kafka Connect runs every ``WorkerTask`` and ``WorkerConnector`` on a thread of its own, so a
connector that blocks in ``poll()``, ``put()`` or ``stop()`` never delays another and never
starves the worker's REST or group membership. Here the worker's asyncio loop keeps the clients
(producer, consumer, offsets, status) and hands every plugin call to the owner's
:class:`PluginThread`: a daemon thread with an event loop of its own, so both plain and
``async def`` plugin methods run there (never on the worker loop, never on a shared pool).

A plugin that does not return within ``task.shutdown.graceful.timeout.ms`` is *abandoned*
(:meth:`PluginThread.abandon`): the thread is left to finish whatever it is stuck in (it is a
daemon, so it never holds up process exit), every later call fails at once with
:class:`PluginAbandoned`, and the number of such threads is kept in :data:`ABANDONED` for the
worker's metrics. A restarted task gets a new thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("connect.worker")


class PluginAbandoned(Exception):
    """The thread was abandoned (its plugin did not stop in time): nothing runs on it any more."""


class _Counter:
    """Threads abandoned in this process, and how many of them are still stuck."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.total = 0

    def add(self, thread: threading.Thread) -> None:
        with self._lock:
            self.total += 1
            self._threads.append(thread)

    @property
    def alive(self) -> int:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return len(self._threads)


ABANDONED = _Counter()


class PluginThread:
    """One daemon thread with its own event loop, running one task's or connector's plugin
    calls in order. ``call`` is awaited on the worker loop."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop = asyncio.new_event_loop()
        self._abandoned = False
        self._closed = False
        started = threading.Event()
        self._loop.call_soon(started.set)
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        started.wait()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    def _main(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Run ``fn(*args)`` on this thread (awaiting it there if it is a coroutine)."""
        if self._abandoned:
            raise PluginAbandoned(f"{self.name} was abandoned")
        if self._closed:
            raise PluginAbandoned(f"{self.name} is closed")
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller as it is
                future.set_exception(exc)
                return
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                task.add_done_callback(lambda t: _settle(future, t))
            else:
                future.set_result(result)

        try:
            self._loop.call_soon_threadsafe(run)
        except RuntimeError as exc:  # the loop is closed
            raise PluginAbandoned(f"{self.name} is closed") from exc
        return future

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Await ``fn(*args)`` run on this thread. Cancelling the caller does not interrupt a
        call already running (threads cannot be interrupted); it only stops waiting for it."""
        return await asyncio.wrap_future(self.submit(fn, *args))

    def abandon(self) -> None:
        """Give up on this thread: later calls raise; it ends by itself if its plugin returns."""
        if self._abandoned:
            return
        self._abandoned = True
        if self._thread.is_alive():
            ABANDONED.add(self._thread)
        self._stop_loop()

    def close(self, timeout: float = 1.0) -> None:
        """Stop the loop and wait (up to ``timeout``) for the thread to end."""
        if self._closed:
            return
        self._closed = True
        self._stop_loop()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
            if timeout > 0 and self._thread.is_alive():
                log.warning("%s did not end within %.1fs", self.name, timeout)

    def _stop_loop(self) -> None:
        with contextlib.suppress(RuntimeError):  # already closed
            self._loop.call_soon_threadsafe(self._loop.stop)


def _settle(future: concurrent.futures.Future, task: asyncio.Future) -> None:
    if task.cancelled():
        future.set_exception(asyncio.CancelledError())
    elif task.exception() is not None:
        future.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        future.set_result(task.result())
