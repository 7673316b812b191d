"""A connector's background jobs (Kafka's MirrorMaker ``Scheduler``): one daemon thread with its
own event loop, so the admin work of a connector (finding new topics, syncing configs, finding
groups) never runs on the worker's loop and never blocks it."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from connect.api import ConnectException

log = logging.getLogger("connect.mirror")

T = TypeVar("T")


class Scheduler:
    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        self._jobs: list[asyncio.Future[Any]] = []
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, job: Callable[[], Awaitable[T]], what: str) -> T:
        """Run ``job`` now and wait for it (at most admin.timeout.ms)."""
        future = asyncio.run_coroutine_threadsafe(self._with_timeout(job, what), self.loop)
        return future.result()

    async def _with_timeout(self, job: Callable[[], Awaitable[T]], what: str) -> T:
        try:
            return await asyncio.wait_for(job(), self.timeout)
        except TimeoutError:
            raise ConnectException(f"{what}: timed out after {self.timeout:.0f} s") from None

    def repeat(self, job: Callable[[], Awaitable[Any]], interval: float, what: str,
               delayed: bool = True) -> None:
        """Run ``job`` every ``interval`` seconds (a negative interval: never); a failure is
        logged in one line and the next round runs as planned."""
        if interval < 0:
            return

        async def loop() -> None:
            first = True
            while not self._stopped.is_set():
                if not (first and not delayed):
                    try:
                        await asyncio.wait_for(self._stopped.wait(), max(interval, 0.05))
                        return
                    except TimeoutError:
                        pass
                first = False
                try:
                    await self._with_timeout(job, what)
                except Exception as exc:  # noqa: BLE001 - one line, then the next round
                    log.warning("%s: %s failed: %s", self.name, what, exc)

        self._jobs.append(asyncio.run_coroutine_threadsafe(loop(), self.loop))

    def close(self) -> None:
        """Stop the jobs (a running one is cancelled and may clean up), then the thread."""
        if not self.loop.is_running():
            return

        async def stop() -> None:
            self._stopped.set()
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=5) if tasks else None

        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        except Exception as exc:  # noqa: BLE001 - closing anyway
            log.warning("%s: stopping its jobs failed: %s", self.name, exc)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self.loop.close()


__all__ = ["Scheduler"]
