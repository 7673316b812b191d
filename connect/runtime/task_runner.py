"""The lifecycle shared by source and sink task runners: start, pause/resume, stop, status."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connect.runtime.config import WorkerConfig
from connect.runtime.offsets import OffsetStore
from connect.runtime.status import State, Status, TargetState, TaskId

log = logging.getLogger("connect.worker")


@dataclass
class TaskEnv:
    """What the worker gives every task runner."""

    worker: WorkerConfig
    worker_id: str
    offsets: OffsetStore
    on_status: Callable[[TaskId, Status], None]
    on_topic: Callable[[str, str], None] = lambda connector, topic: None
    extra: dict[str, Any] = field(default_factory=dict)


class TaskRunner:
    """Runs one task in an asyncio task. Subclasses implement :meth:`execute`."""

    #: Source tasks get ``stop()`` from outside to interrupt ``poll``; sinks get it at the end.
    interrupt_on_stop = True

    def __init__(self, env: TaskEnv, task_id: TaskId, connector_config: dict[str, str],
                 task_config: dict[str, str], task_class: type, target: TargetState) -> None:
        self.env = env
        self.id = task_id
        self.connector_config = connector_config
        self.task_config = task_config
        self.task_class = task_class
        self.stopping = False
        self._resumed = asyncio.Event()
        if target is not TargetState.PAUSED:
            self._resumed.set()
        self._runner: asyncio.Task | None = None
        self.task: Any = None
        self.state = State.UNASSIGNED

    # -- control -------------------------------------------------------------------------------
    def start(self) -> None:
        self._runner = asyncio.get_running_loop().create_task(self._main(), name=f"task-{self.id}")

    @property
    def paused(self) -> bool:
        return not self._resumed.is_set()

    def set_target(self, target: TargetState) -> None:
        if target is TargetState.PAUSED:
            self._resumed.clear()
            if self.state is State.RUNNING:
                self._report(State.PAUSED)
        else:
            self._resumed.set()
            if self.state is State.PAUSED:
                self._report(State.RUNNING)

    async def stop(self) -> None:
        """Ask the task to stop (``task.stop()`` interrupts a blocking poll) and wait for it."""
        self.stopping = True
        self._resumed.set()
        if self.interrupt_on_stop and self.task is not None:
            try:
                await asyncio.to_thread(self.task.stop) if not asyncio.iscoroutinefunction(
                    self.task.stop) else await self.task.stop()
            except Exception:
                log.exception("task %s: stop() failed", self.id)
        if self._runner is not None:
            timeout = self.env.worker.task_shutdown_graceful_timeout_ms / 1000
            done, _ = await asyncio.wait({self._runner}, timeout=max(timeout, 1.0))
            if not done:
                log.error("task %s did not stop within %.1fs; cancelling it", self.id, timeout)
                self._runner.cancel()
                with contextlib.suppress(BaseException):
                    await self._runner

    async def wait_resumed(self) -> None:
        if not self._resumed.is_set():
            self._report(State.PAUSED)
            await self.on_pause()
            await self._resumed.wait()
            if not self.stopping:
                await self.on_resume()
                self._report(State.RUNNING)

    async def on_pause(self) -> None:
        pass

    async def on_resume(self) -> None:
        pass

    # -- body ----------------------------------------------------------------------------------
    async def _main(self) -> None:
        try:
            await self.execute()
            if self.state is not State.FAILED:
                self._report(State.UNASSIGNED)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.error("task %s failed: %s", self.id, exc, exc_info=exc)
            self.state = State.FAILED
            self.env.on_status(self.id, Status.failed(self.env.worker_id, exc))

    async def execute(self) -> None:
        raise NotImplementedError

    def _report(self, state: State) -> None:
        if self.state is State.FAILED:
            return
        self.state = state
        self.env.on_status(self.id, Status(state, self.env.worker_id))

    def running(self) -> None:
        self._report(State.PAUSED if self.paused else State.RUNNING)
