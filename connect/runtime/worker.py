"""The worker: runs connector instances and task runners on this process.

It knows nothing about where configs come from (a file, REST, the config topic); a herder tells it
what to run, and it reports every state change through the status store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connect import plugins
from connect.api import Connector, ConnectorContext, SinkConnector, SourceConnector
from connect.runtime.config import WorkerConfig
from connect.runtime.offsets import OffsetStore
from connect.runtime.sink_task import WorkerSinkTask
from connect.runtime.source_task import WorkerSourceTask
from connect.runtime.status import State, Status, StatusStore, TargetState, TaskId
from connect.runtime.task_runner import TaskEnv, TaskRunner
from connect.runtime.task_support import call

log = logging.getLogger("connect.worker")


@dataclass
class ConnectorHandle:
    name: str
    config: dict[str, str]
    instance: Connector | None
    target: TargetState
    started: bool = False


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

    # -- status --------------------------------------------------------------------------------
    def _connector_status(self, name: str, status: Status) -> None:
        self.statuses.put_connector(name, status)
        if self._on_status:
            self._on_status(name, None, status)

    def _task_status(self, task: TaskId, status: Status, runner: TaskRunner | None = None) -> None:
        if runner is not None and self.tasks.get(task) is not runner:
            return  # a stopped (or replaced) runner's last words; the herder already moved on
        self.statuses.put_task(task, status)
        if self._on_status:
            self._on_status(task.connector, task, status)

    def _topic_used(self, connector: str, topic: str) -> None:
        topics = self.active_topics.setdefault(connector, set())
        if topic not in topics:
            topics.add(topic)

    def _resolve(self, config: dict[str, str]) -> dict[str, str]:
        """``${provider:path:key}`` values replaced for the connector or task (KIP-297); the
        stored config, the REST API and change detection keep the references."""
        return self.config.config_transformer().resolve(config)

    # -- connectors ----------------------------------------------------------------------------
    async def start_connector(self, name: str, config: dict[str, str],
                              target: TargetState) -> bool:
        """Instantiate and (unless STOPPED) start the connector; False if it failed."""
        handle = ConnectorHandle(name, dict(config), None, target)
        self.connectors[name] = handle
        try:
            cls = plugins.connector_class(config.get("connector.class", ""))
            instance = cls()
            loop = asyncio.get_running_loop()

            def reconfigure() -> None:
                if self._on_reconfigure:
                    loop.call_soon_threadsafe(self._on_reconfigure, name)

            def raise_error(error: BaseException) -> None:
                loop.call_soon_threadsafe(
                    self._connector_status, name, Status.failed(self.worker_id, error))

            instance.initialize(ConnectorContext(reconfigure, raise_error))
            handle.instance = instance
            if target is not TargetState.STOPPED:
                await call(instance.start, self._resolve(config))
                handle.started = True
        except Exception as exc:
            log.error("connector %s failed to start: %s", name, exc, exc_info=exc)
            self._connector_status(name, Status.failed(self.worker_id, exc))
            return False
        self._connector_status(name, Status(_state_for(target), self.worker_id))
        return True

    async def stop_connector(self, name: str) -> None:
        handle = self.connectors.pop(name, None)
        if handle is None:
            return
        if handle.instance is not None and handle.started:
            try:
                await call(handle.instance.stop)
            except Exception as exc:
                log.error("connector %s failed to stop cleanly: %s", name, exc)

    async def set_connector_target(self, name: str, target: TargetState) -> None:
        handle = self.connectors.get(name)
        if handle is None or handle.target is target:
            return
        current = self.statuses.connector(name)
        if current is not None and current.state is State.FAILED:
            handle.target = target
            return
        if target is TargetState.STOPPED and handle.started and handle.instance is not None:
            await call(handle.instance.stop)
            handle.started = False
        elif target is not TargetState.STOPPED and not handle.started \
                and handle.instance is not None:
            await call(handle.instance.start, self._resolve(handle.config))
            handle.started = True
        handle.target = target
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
            configs = await call(instance.task_configs, max_tasks)
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
        await self.offsets.sync()
        env = TaskEnv(self.config, self.worker_id, self.offsets, self._task_status,
                      self._topic_used)
        env.on_status = lambda tid, status: self._task_status(tid, status, runner)
        self.task_snapshots[task_id] = (dict(connector_config), dict(task_config))
        try:
            cls = plugins.connector_class(connector_config.get("connector.class", ""))
            task_cls: Any = plugins._import(task_config["task.class"]) \
                if "task.class" in task_config else cls().task_class()
            runner_cls = WorkerSinkTask if issubclass(cls, SinkConnector) else WorkerSourceTask
            if not issubclass(cls, SinkConnector | SourceConnector):
                raise TypeError(f"{cls.__name__} is neither a source nor a sink connector")
            resolved = self._resolve(connector_config), self._resolve(task_config)
        except Exception as exc:
            self._task_status(task_id, Status.failed(self.worker_id, exc))
            return
        runner: TaskRunner = runner_cls(env, task_id, *resolved, task_cls, target)
        self.tasks[task_id] = runner
        runner.start()

    async def stop_task(self, task_id: TaskId) -> None:
        runner = self.tasks.pop(task_id, None)
        self.task_snapshots.pop(task_id, None)
        if runner is not None:
            await runner.stop()

    async def stop_tasks(self, task_ids: list[TaskId]) -> None:
        await asyncio.gather(*(self.stop_task(t) for t in task_ids))

    def set_task_target(self, task_id: TaskId, target: TargetState) -> None:
        runner = self.tasks.get(task_id)
        if runner is not None:
            runner.set_target(target)

    async def stop(self) -> None:
        await self.stop_tasks(list(self.tasks))
        for name in list(self.connectors):
            await self.stop_connector(name)


def _state_for(target: TargetState) -> State:
    return {TargetState.STARTED: State.RUNNING, TargetState.PAUSED: State.PAUSED,
            TargetState.STOPPED: State.STOPPED}[target]
