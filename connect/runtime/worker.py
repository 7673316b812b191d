"""The worker: runs connector instances and task runners on this process.

It knows nothing about where configs come from (a file, REST, the config topic); a herder tells it
what to run, and it reports every state change through the status store.

Every connector and every task has a thread of its own for its plugin code (see
``plugin_thread``), as Kafka's Worker gives each ``WorkerConnector`` and ``WorkerTask`` one: a
connector or task that blocks holds up nobody else, and waits for it are bounded by
``task.shutdown.graceful.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connect import plugins
from connect.api import Connector, ConnectorContext, SinkConnector, SourceConnector
from connect.runtime import exactly_once
from connect.runtime.config import WorkerConfig
from connect.runtime.offsets import OffsetStore
from connect.runtime.plugin_thread import ABANDONED, PluginAbandoned, PluginThread
from connect.runtime.sink_task import WorkerSinkTask
from connect.runtime.source_task import WorkerSourceTask
from connect.runtime.status import State, Status, StatusStore, TargetState, TaskId
from connect.runtime.task_runner import TaskEnv, TaskRunner

log = logging.getLogger("connect.worker")


@dataclass
class ConnectorHandle:
    name: str
    config: dict[str, str]
    instance: Connector | None
    target: TargetState
    started: bool = False
    thread: PluginThread | None = None
    version: str | None = None
    generation: int = 0  # the latest group generation that assigned it to this worker

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a connector method on the connector's own thread."""
        if self.thread is None:
            raise PluginAbandoned(f"connector {self.name} has no thread")
        return await self.thread.call(fn, *args)


class Worker:
    def __init__(self, config: WorkerConfig, worker_id: str, offsets: OffsetStore,
                 statuses: StatusStore,
                 on_status: Callable[[str, TaskId | None, Status], None] | None = None,
                 on_reconfigure: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.worker_id = worker_id
        self.offsets = offsets
        self.statuses = statuses
        self._on_status = on_status
        self._on_reconfigure = on_reconfigure
        self.connectors: dict[str, ConnectorHandle] = {}
        self.tasks: dict[TaskId, TaskRunner] = {}
        self.task_snapshots: dict[TaskId, tuple[dict, dict]] = {}
        self.active_topics: dict[str, set[str]] = {}
        self._stopping: set[asyncio.Task] = set()  # task stops under way
        # Distributed: ``await fencing(connector)`` before an exactly-once source task's producer
        # starts (KIP-618 zombie fencing, connect/runtime/exactly_once.py).
        self.fencing: Callable[[str], Any] | None = None
        # Distributed: whether a task still belongs to this worker with the configs it was
        # started with (checked around an exactly-once task's InitProducerId).
        self.task_current: Callable[[TaskId], bool] | None = None
        # The group generation of this worker's latest assignment (0: standalone); statuses
        # carry the generation that assigned the connector or task, so an owner that lost it
        # never overwrites the new owner's word (see status.supersedes).
        self.generation = 0

    def hold(self, generation: int, connectors: set[str], tasks: set[TaskId]) -> None:
        """A new assignment: what this worker keeps now belongs to ``generation``."""
        self.generation = generation
        for name in connectors:
            if name in self.connectors:
                self.connectors[name].generation = generation
        for task in tasks:
            if task in self.tasks:
                self.tasks[task].generation = generation

    # -- status --------------------------------------------------------------------------------
    def _connector_status(self, name: str, status: Status,
                          handle: ConnectorHandle | None = None) -> None:
        handle = handle or self.connectors.get(name)
        status.generation = handle.generation if handle is not None else self.generation
        if status.version is None and handle is not None:
            status.version = handle.version
        if self.statuses.put_connector(name, status) and self._on_status:
            self._on_status(name, None, status)

    def _task_status(self, task: TaskId, status: Status, runner: TaskRunner | None = None,
                     generation: int | None = None) -> None:
        if runner is not None and self.tasks.get(task) is not runner:
            return  # a stopped (or replaced) runner's last words; the herder already moved on
        if generation is None:
            generation = runner.generation if runner is not None else self.generation
        status.generation = generation
        if status.version is None and runner is not None:
            status.version = runner.version
        if self.statuses.put_task(task, status) and self._on_status:
            self._on_status(task.connector, task, status)

    def _topic_used(self, connector: str, topic: str) -> None:
        topics = self.active_topics.setdefault(connector, set())
        if topic not in topics:
            topics.add(topic)

    def _resolve(self, config: dict[str, str]) -> dict[str, str]:
        """``${provider:path:key}`` values replaced for the connector or task (KIP-297); the
        stored config, the REST API and change detection keep the references."""
        return self.config.config_transformer().resolve(config)

    @property
    def graceful_timeout(self) -> float:
        return self.config.task_shutdown_graceful_timeout_ms / 1000

    @property
    def abandoned_threads(self) -> tuple[int, int]:
        """(threads abandoned since the process started, those of them still stuck)."""
        return ABANDONED.total, ABANDONED.alive

    async def _bounded(self, handle: ConnectorHandle, fn: Callable[..., Any], *args: Any
                       ) -> tuple[bool, Any]:
        """(True, result) of a connector call, or (False, its future) if it did not return
        within the graceful timeout (it goes on running on the connector's thread)."""
        assert handle.thread is not None
        future = asyncio.wrap_future(handle.thread.submit(fn, *args))
        done, _ = await asyncio.wait({future}, timeout=self.graceful_timeout)
        if not done:
            return False, future
        return True, future.result()

    # -- connectors ----------------------------------------------------------------------------
    async def start_connector(self, name: str, config: dict[str, str],
                              target: TargetState) -> bool:
        """Instantiate and (unless STOPPED) start the connector on its own thread; False if it
        failed or is still starting (then it reports, and asks for task configs, when done)."""
        handle = ConnectorHandle(name, dict(config), None, target,
                                 thread=PluginThread(f"connector-thread-{name}"),
                                 generation=self.generation)
        self.connectors[name] = handle
        try:
            cls = plugins.connector_class(config.get("connector.class", ""))
            loop = asyncio.get_running_loop()

            def reconfigure() -> None:
                if self._on_reconfigure:
                    loop.call_soon_threadsafe(self._on_reconfigure, name)

            def raise_error(error: BaseException) -> None:
                loop.call_soon_threadsafe(
                    self._connector_status, name, Status.failed(self.worker_id, error))

            def make() -> tuple[Connector, str]:
                connector = cls()
                connector.initialize(ConnectorContext(reconfigure, raise_error))
                return connector, str(connector.version())

            done, made = await self._bounded(handle, make)
            if not done:
                raise TimeoutError(f"Connector {name} was not created within "
                                   "task.shutdown.graceful.timeout.ms")
            instance, handle.version = made
            handle.instance = instance
            if target is not TargetState.STOPPED:
                done, result = await self._bounded(handle, instance.start, self._resolve(config))
                if not done:
                    log.warning("connector %s is still starting after %.1fs; its tasks follow "
                                "once it has started", name, self.graceful_timeout)
                    result.add_done_callback(lambda f: self._started_late(handle, f))
                    return False
                handle.started = True
        except Exception as exc:
            log.error("connector %s failed to start: %s", name, exc, exc_info=exc)
            self._connector_status(name, Status.failed(self.worker_id, exc))
            return False
        self._connector_status(name, Status(_state_for(target), self.worker_id))
        return True

    def _started_late(self, handle: ConnectorHandle, future: asyncio.Future) -> None:
        if self.connectors.get(handle.name) is not handle or future.cancelled():
            return  # stopped or replaced meanwhile
        exc = future.exception()
        if exc is not None:
            log.error("connector %s failed to start: %s", handle.name, exc, exc_info=exc)
            self._connector_status(handle.name, Status.failed(self.worker_id, exc))
            return
        handle.started = True
        self._connector_status(handle.name, Status(_state_for(handle.target), self.worker_id))
        if self._on_reconfigure:
            self._on_reconfigure(handle.name)

    async def stop_connector(self, name: str) -> None:
        """Stop the connector; its status becomes UNASSIGNED (unless it FAILED), written with
        the generation that last assigned it here."""
        handle = self.connectors.pop(name, None)
        if handle is None:
            return
        await self._stop_instance(handle)
        if handle.thread is not None:
            handle.thread.close(0)
        current = self.statuses.connector(name)
        if current is None or current.state is not State.FAILED \
                or current.worker_id != self.worker_id:
            self._connector_status(name, Status(State.UNASSIGNED, self.worker_id), handle)

    async def _stop_instance(self, handle: ConnectorHandle) -> bool:
        """``stop()`` the connector within the graceful timeout; else abandon its thread."""
        if handle.instance is None or handle.thread is None or handle.thread.abandoned:
            return True
        try:
            done, _ = await self._bounded(handle, handle.instance.stop)
        except Exception as exc:
            log.error("connector %s failed to stop cleanly: %s", handle.name, exc)
            return True
        if not done:
            log.error("connector %s did not stop within task.shutdown.graceful.timeout.ms=%d ms;"
                      " its thread %s is abandoned", handle.name,
                      self.config.task_shutdown_graceful_timeout_ms, handle.thread.name)
            handle.thread.abandon()
            return False
        handle.started = False
        return True

    async def set_connector_target(self, name: str, target: TargetState) -> None:
        handle = self.connectors.get(name)
        if handle is None or handle.target is target:
            return
        current = self.statuses.connector(name)
        if current is not None and current.state is State.FAILED:
            handle.target = target
            return
        handle.target = target
        if target is TargetState.STOPPED and handle.started and handle.instance is not None:
            if not await self._stop_instance(handle):
                self._connector_status(name, Status(
                    State.FAILED, self.worker_id,
                    f"Connector {name} did not stop within task.shutdown.graceful.timeout.ms"))
                return
        elif target is not TargetState.STOPPED and not handle.started \
                and handle.instance is not None:
            try:
                done, result = await self._bounded(handle, handle.instance.start,
                                                   self._resolve(handle.config))
            except Exception as exc:
                self._connector_status(name, Status.failed(self.worker_id, exc))
                return
            if not done:
                result.add_done_callback(lambda f: self._started_late(handle, f))
                return
            handle.started = True
        self._connector_status(name, Status(_state_for(target), self.worker_id))

    async def task_configs(self, name: str) -> list[dict[str, str]] | None:
        """Ask a running connector for its task configs (None if it is not running here)."""
        handle = self.connectors.get(name)
        if handle is None or handle.instance is None or not handle.started:
            return None
        config = self._resolve(handle.config)  # tasks.max may be a ${provider:...} reference
        max_tasks = int(config.get("tasks.max", "1") or 1)
        instance = handle.instance
        try:
            done, configs = await self._bounded(handle, instance.task_configs, max_tasks)
            if not done:
                raise TimeoutError(f"Connector {name} did not return its task configs within "
                                   "task.shutdown.graceful.timeout.ms")
        except Exception as exc:
            self._connector_status(name, Status.failed(self.worker_id, exc))
            return None
        if len(configs) > max_tasks and \
                str(config.get("tasks.max.enforce", "true")).lower() != "false":
            exc = ValueError(f"The connector {name} has generated {len(configs)} tasks, which is "
                             f"greater than {max_tasks}, the maximum number of tasks it is "
                             "configured to create.")
            self._connector_status(name, Status.failed(self.worker_id, exc))
            return None
        task_cls = instance.task_class()
        out = []
        for cfg in configs:
            item = {str(k): str(v) for k, v in cfg.items()}
            item.setdefault("task.class", f"{task_cls.__module__}.{task_cls.__qualname__}")
            out.append(item)
        return out

    def connector_kind(self, config: dict[str, str]) -> str:
        try:
            return plugins.connector_type(plugins.connector_class(config.get("connector.class",
                                                                             "")))
        except Exception:
            return "unknown"

    # -- tasks ---------------------------------------------------------------------------------
    async def start_task(self, task_id: TaskId, connector_config: dict[str, str],
                         task_config: dict[str, str], target: TargetState) -> None:
        # Source runners read their offsets to the end themselves: an exactly-once task only
        # after its producer fenced the previous owner (whose open transaction holds reads).
        env = TaskEnv(self.config, self.worker_id, self.offsets, self._task_status,
                      self._topic_used, extra={"fencing": self.fencing,
                                                     "current": self.task_current})
        env.on_status = lambda tid, status: self._task_status(tid, status, runner)
        self.task_snapshots[task_id] = (dict(connector_config), dict(task_config))
        try:
            cls = plugins.connector_class(connector_config.get("connector.class", ""))
            task_cls: Any = plugins._import(task_config["task.class"]) \
                if "task.class" in task_config else cls().task_class()
            runner_cls = WorkerSinkTask if issubclass(cls, SinkConnector) else \
                exactly_once.runner_class(self.config, WorkerSourceTask)
            if not issubclass(cls, SinkConnector | SourceConnector):
                raise TypeError(f"{cls.__name__} is neither a source nor a sink connector")
            resolved = self._resolve(connector_config), self._resolve(task_config)
        except Exception as exc:
            self._task_status(task_id, Status.failed(self.worker_id, exc))
            return
        runner: TaskRunner = runner_cls(env, task_id, *resolved, task_cls, target)
        runner.generation = self.generation
        self.tasks[task_id] = runner
        runner.start()

    async def stop_task(self, task_id: TaskId) -> None:
        runner = self.tasks.pop(task_id, None)
        self.task_snapshots.pop(task_id, None)
        if runner is None:
            return
        # The stop goes on if the caller is cancelled; stop() waits for it.
        stopping = asyncio.get_running_loop().create_task(self._stop_runner(task_id, runner))
        self._stopping.add(stopping)
        stopping.add_done_callback(self._stopping.discard)
        await asyncio.shield(stopping)

    async def _stop_runner(self, task_id: TaskId, runner: TaskRunner) -> None:
        reason = await runner.stop()
        if reason is not None:
            self._task_status(task_id, Status(State.FAILED, self.worker_id, reason,
                                              version=runner.version),
                              generation=runner.generation)
        elif runner.state is not State.FAILED:
            # Kafka's onShutdown: the owner gives the task up (a newer owner's word wins).
            self._task_status(task_id, Status(State.UNASSIGNED, self.worker_id,
                                              version=runner.version),
                              generation=runner.generation)

    async def stop_tasks(self, task_ids: list[TaskId]) -> None:
        await asyncio.gather(*(self.stop_task(t) for t in task_ids))

    def set_task_target(self, task_id: TaskId, target: TargetState) -> None:
        runner = self.tasks.get(task_id)
        if runner is not None:
            runner.set_target(target)

    async def stop(self) -> None:
        """Stop every task, then every connector, each group at once: bounded by twice the
        graceful timeout plus the clients' close."""
        await self.stop_tasks(list(self.tasks))
        if self._stopping:
            await asyncio.wait(set(self._stopping))
        await asyncio.gather(*(self.stop_connector(name) for name in list(self.connectors)))


def _state_for(target: TargetState) -> State:
    return {TargetState.STARTED: State.RUNNING, TargetState.PAUSED: State.PAUSED,
            TargetState.STOPPED: State.STOPPED}[target]
