"""The lifecycle shared by source and sink task runners: start, pause/resume, stop, status.

Each task's plugin code runs on a thread of its own (:class:`PluginThread`, named
``task-thread-<connector>-<task>`` as Kafka names it); the runner itself is an asyncio task on the
worker's loop that drives the clients and hands every plugin call to that thread. A stop waits at
most ``task.shutdown.graceful.timeout.ms``; then the task is abandoned, as Kafka's
``Worker.stopAndAwaitTask`` cancels it: status FAILED with the reason, its clients closed, its
thread left to end by itself (counted), and a restart gets a new thread.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connect.runtime.config import WorkerConfig
from connect.runtime.offsets import OffsetStore
from connect.runtime.plugin_thread import PluginAbandoned, PluginThread
from connect.runtime.status import State, Status, TargetState, TaskId

log = logging.getLogger("connect.worker")

# How long an abandoned task's runner may take to close its producer or consumer (once its
# plugin was given up on): what a stop may take beyond the graceful timeout.
CLEANUP_TIMEOUT_S = 5.0


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
        self.thread: PluginThread | None = None
        self.abandoned = False
        self.generation = 0  # set by the worker: the generation that assigned it here
        self.version: str | None = None  # the task's version(), once it is created
        self.task_stopped = False  # stop() was called on the plugin (at most once, as Kafka)

    # -- control -------------------------------------------------------------------------------
    def start(self) -> None:
        self.thread = PluginThread(f"task-thread-{self.id}")
        self._runner = asyncio.get_running_loop().create_task(self._main(), name=f"task-{self.id}")

    async def call(self, fn: Any, *args: Any) -> Any:
        """Run a plugin method (plain or ``async def``) on this task's own thread."""
        if self.thread is None or self.abandoned:
            raise PluginAbandoned(f"task {self.id} was abandoned")
        future = asyncio.wrap_future(self.thread.submit(fn, *args))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                # Cancelled (the worker's loop is closing) while the plugin runs: a thread cannot
                # be interrupted, and later calls would queue behind this one, so give it up.
                self.abandoned = True
                self.thread.abandon()
            raise

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

    async def stop(self) -> str | None:
        """Ask the task to stop and wait for it, at most ``task.shutdown.graceful.timeout.ms``.

        A source task's ``stop()`` is called at once to interrupt a blocking ``poll()`` (from a
        thread of its own, the task's being busy in that poll; an ``async def stop`` runs on the
        task's loop, where its poll awaits). None when the task stopped; otherwise the reason it
        was abandoned."""
        self.stopping = True
        self._resumed.set()
        loop = asyncio.get_running_loop()
        timeout_ms = self.env.worker.task_shutdown_graceful_timeout_ms
        deadline = loop.time() + timeout_ms / 1000
        stopper = self._interrupt()
        if self._runner is not None:
            await asyncio.wait({self._runner}, timeout=max(0.0, deadline - loop.time()))
        if stopper is not None:
            await stopper.wait(max(0.0, deadline - loop.time()))
        if self._runner is None or self._runner.done():
            if self.thread is not None and not self.abandoned:
                self.thread.close(0)  # here, not in _main: an async stop() ran on it
            return None
        reason = (f"Task {self.id} did not stop within task.shutdown.graceful.timeout.ms="
                  f"{timeout_ms} ms and was abandoned (its thread "
                  f"{self.thread.name if self.thread else '?'} is left to end by itself)")
        log.error(reason)
        self.abandoned = True
        self.state = State.FAILED
        if self.thread is not None:
            self.thread.abandon()
        self._runner.cancel()  # unblocks the runner's await; its finally closes the clients
        await asyncio.wait({self._runner}, timeout=CLEANUP_TIMEOUT_S)
        if not self._runner.done():
            log.error("task %s: closing its clients took over %.0fs; left behind", self.id,
                      CLEANUP_TIMEOUT_S)
        return reason

    def _interrupt(self) -> _Stopper | None:
        if not self.interrupt_on_stop or self.task is None or self.thread is None \
                or self.task_stopped:
            return None
        self.task_stopped = True
        stop = self.task.stop
        if inspect.iscoroutinefunction(stop):
            return _Stopper(self.thread, stop, None)
        return _Stopper(PluginThread(f"task-stopper-{self.id}"), stop, self.id)

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
            if not self.abandoned:
                raise
        except BaseException as exc:
            if self.abandoned:
                log.info("task %s (abandoned) ended with %r", self.id, exc)
                return
            log.error("task %s failed: %s", self.id, exc, exc_info=exc)
            self.state = State.FAILED
            self.env.on_status(self.id, Status.failed(self.env.worker_id, exc))
        finally:
            # A stopping task's thread is closed by stop() once its async stop() is done too.
            if self.thread is not None and not self.abandoned and not self.stopping:
                self.thread.close(0)

    async def execute(self) -> None:
        raise NotImplementedError

    def _report(self, state: State) -> None:
        if self.state is State.FAILED:
            return
        self.state = state
        self.env.on_status(self.id, Status(state, self.env.worker_id))

    def running(self) -> None:
        self._report(State.PAUSED if self.paused else State.RUNNING)


class _Stopper:
    """A source task's ``stop()`` running beside its poll; abandoned with the task if stuck."""

    def __init__(self, thread: PluginThread, stop: Any, own_thread_of: TaskId | None) -> None:
        self.thread = thread
        self.own = own_thread_of is not None
        try:
            self.future: Any = asyncio.wrap_future(thread.submit(stop))
        except PluginAbandoned:
            self.future = None

    async def wait(self, timeout: float) -> None:
        if self.future is None:
            return
        done, _ = await asyncio.wait({self.future}, timeout=timeout)
        if done:
            exc = self.future.exception()
            if exc is not None:
                log.error("%s: stop() failed: %s", self.thread.name, exc)
            if self.own:
                self.thread.close(0)
        elif self.own:
            log.error("%s: stop() did not return in time; its thread is abandoned",
                      self.thread.name)
            self.thread.abandon()
        else:
            self.future.cancel()
