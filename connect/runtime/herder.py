"""The herder: what the REST API talks to. It owns the cluster view of connectors (configs,
target states, task configs) and makes this worker run its share of them.

The standalone herder keeps that view in memory; the distributed herder keeps it in the config
topic and runs only the connectors and tasks the group assigned to this worker. Both share the
logic here; subclasses override the ``_store_*`` methods and ``assigned_*``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
from typing import Any
from urllib.parse import quote

from aiokafka.structs import TopicPartition

from connect import plugins
from connect.api import SinkConnector, SourceConnector
from connect.config_def import ConfigException
from connect.runtime import clients, exactly_once, sink_offsets, source_offsets
from connect.runtime.config import (
    OFFSETS_TOPIC,
    WorkerConfig,
    check_sink_topics,
    connector_config_def,
    override_errors,
)
from connect.runtime.offsets import OffsetStore
from connect.runtime.plugin_thread import PluginThread
from connect.runtime.status import State, Status, StatusStore, TargetState, TaskId
from connect.runtime.worker import Worker

log = logging.getLogger("connect.herder")


class HerderError(Exception):
    """An error the REST layer turns into ``{"error_code", "message"}`` with this status."""

    status = 500

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class NotFound(HerderError):
    status = 404


class Conflict(HerderError):
    status = 409


class BadRequest(HerderError):
    status = 400


def not_found(name: str) -> NotFound:
    return NotFound(f"Connector {name} not found")


_NAME_OK = re.compile(r"^[^\x00-\x1f\x7f]*$")


class Herder:
    #: Distributed herders run exactly-once source tasks and per-connector offsets topics.
    distributed = False

    def __init__(self, config: WorkerConfig, worker_id: str, offsets: OffsetStore) -> None:
        self.config = config
        self.worker_id = worker_id
        self.offsets = offsets
        self.statuses = StatusStore()
        self.worker = Worker(config, worker_id, offsets, self.statuses,
                             on_status=self._status_changed,
                             on_reconfigure=self._reconfigure_requested)
        self.configs: dict[str, dict[str, str]] = {}
        self.targets: dict[str, TargetState] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self._lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self.ready = False
        self.cluster_id: str | None = None
        self._background: set[asyncio.Task] = set()

    # -- subclass hooks ------------------------------------------------------------------------
    def assigned_connectors(self) -> set[str]:
        return set(self.configs)

    def assigned_tasks(self) -> set[TaskId]:
        return {TaskId(n, i) for n, tasks in self.task_configs.items() for i in range(len(tasks))}

    async def _store_config(self, name: str, config: dict[str, str] | None,
                            target: TargetState | None = None) -> None:
        """Persist a connector config (None deletes it) and, for a new one, its target state."""
        if config is None:
            self.configs.pop(name, None)
            self.targets.pop(name, None)
            self.task_configs.pop(name, None)
        else:
            self.configs[name] = dict(config)
            if target is not None:
                self.targets[name] = target
            self.targets.setdefault(name, TargetState.STARTED)

    async def _store_target(self, name: str, target: TargetState) -> None:
        self.targets[name] = target
        if target is TargetState.STOPPED:
            self.task_configs[name] = []

    async def _store_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.task_configs[name] = configs

    async def _changed(self) -> None:
        """Called after every stored change: bring this worker in line."""
        await self.reconcile()

    def _status_changed(self, name: str, task: TaskId | None, status: Status) -> None:
        pass

    async def ensure_leader(self) -> None:
        """Distributed: raise if this worker may not make writes (the REST layer forwards)."""

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.offsets.start()
        try:
            from connect.runtime import clients

            admin = clients.admin(self.config)
            await clients.start_admin(admin, self.config)
            try:
                self.cluster_id = (await admin.describe_cluster()).get("cluster_id")
            finally:
                await admin.close()
        except Exception as exc:
            raise HerderError(f"cannot reach Kafka at {self.config.bootstrap_servers}: {exc}") \
                from exc
        self.ready = True

    async def stop(self) -> None:
        self.ready = False
        for task in list(self._background):
            task.cancel()
        await self.worker.stop()
        await self.offsets.stop()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- reconcile this worker with the desired state ------------------------------------------
    async def reconcile(self) -> None:
        async with self._lock:
            await self._reconcile()

    async def _reconcile(self) -> None:
        for _ in range(5):  # a pass that generated new task configs needs another to start them
            before = {n: list(c) for n, c in self.task_configs.items()}
            await self._reconcile_once()
            if before == self.task_configs:
                return

    async def _reconcile_once(self) -> None:
        worker = self.worker
        mine = {n for n in self.assigned_connectors() if n in self.configs}
        my_tasks = {t for t in self.assigned_tasks() if t.connector in self.configs
                    and t.task < len(self.task_configs.get(t.connector, []))}
        # Stop what is gone or changed.
        stale_tasks = []
        for tid in list(worker.tasks):
            cfgs = self.task_configs.get(tid.connector, [])
            snapshot = worker.task_snapshots.get(tid)
            wanted = (self.configs.get(tid.connector), cfgs[tid.task] if tid.task < len(cfgs)
                      else None)
            if tid not in my_tasks or snapshot != wanted \
                    or self.targets.get(tid.connector) is TargetState.STOPPED:
                stale_tasks.append(tid)
        await worker.stop_tasks(stale_tasks)
        for name in list(worker.connectors):
            if name not in mine or worker.connectors[name].config != self.configs.get(name):
                await worker.stop_connector(name)
        for name in list(self.statuses.connectors):
            if name not in self.configs:
                self.statuses.forget(name)
        # Start what is missing; apply target states.
        for name in sorted(mine):
            target = self.targets.get(name, TargetState.STARTED)
            if name not in worker.connectors:
                ok = await worker.start_connector(name, self.configs[name], target)
                if ok and target is not TargetState.STOPPED:
                    await self._refresh_task_configs(name)
            else:
                await worker.set_connector_target(name, target)
                if target is not TargetState.STOPPED and not self.task_configs.get(name):
                    await self._refresh_task_configs(name)
        my_tasks = {t for t in self.assigned_tasks() if t.connector in self.configs
                    and t.task < len(self.task_configs.get(t.connector, []))}
        for tid in sorted(my_tasks):
            if tid in worker.tasks and worker.task_snapshots.get(tid) != (
                    self.configs[tid.connector], self.task_configs[tid.connector][tid.task]):
                continue  # regenerated during this pass: the next pass restarts it
            target = self.targets.get(tid.connector, TargetState.STARTED)
            if target is TargetState.STOPPED:
                continue
            if tid not in worker.tasks:
                await worker.start_task(tid, self.configs[tid.connector],
                                        self.task_configs[tid.connector][tid.task], target)
            else:
                worker.set_task_target(tid, target)
        # Tasks beyond the current count no longer exist.
        for tid in list(self.statuses.tasks):
            if tid.task >= len(self.task_configs.get(tid.connector, [])) \
                    and tid not in worker.tasks:
                self.statuses.tasks.pop(tid, None)

    async def _refresh_task_configs(self, name: str) -> None:
        """Regenerate task configs on the worker running the connector; store if changed."""
        configs = await self.worker.task_configs(name)
        if configs is not None and configs != self.task_configs.get(name):
            await self._store_task_configs(name, configs)
            # The caller's reconcile pass (or the config topic) starts the new tasks.

    def _reconfigure_requested(self, name: str) -> None:
        async def refresh() -> None:
            async with self._lock:
                await self._refresh_task_configs(name)
            await self._changed()

        self._spawn(refresh())

    # -- reading -------------------------------------------------------------------------------
    def _require(self, name: str) -> dict[str, str]:
        if name not in self.configs:
            raise not_found(name)
        return self.configs[name]

    def connector_names(self) -> list[str]:
        return sorted(self.configs)

    def connector_type(self, name: str) -> str:
        return self.worker.connector_kind(self._require(name))

    def connector_info(self, name: str) -> dict[str, Any]:
        config = self._require(name)
        return {
            "name": name,
            "config": dict(config),
            "tasks": [TaskId(name, i).to_json() for i in range(len(self.task_configs.get(name,
                                                                                         [])))],
            "type": self.connector_type(name),
        }

    def connector_status(self, name: str) -> dict[str, Any]:
        """The statuses this worker has read, as Kafka's AbstractHerder.connectorStatus: 404
        until the connector has one, and only the tasks that have one. (A placeholder
        UNASSIGNED naming this worker, without a version, answered a worker that had not yet
        read the owner's first status; test_rest_kafka_answers saw it as a missing version.)"""
        self._require(name)
        status = self.statuses.connector(name)
        if status is None:
            raise NotFound(f"No status found for connector {name}")
        tasks = []
        for i in range(len(self.task_configs.get(name, []))):
            task_status = self.statuses.task(TaskId(name, i))
            if task_status is not None:
                tasks.append({"id": i, **task_status.to_json()})
        return {"name": name, "connector": status.to_json(), "tasks": tasks,
                "type": self.connector_type(name)}

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        self._require(name)
        if task < 0 or task >= len(self.task_configs.get(name, [])):
            raise NotFound(f"Unknown task {name}-{task}")
        status = self.statuses.task(TaskId(name, task))
        if status is None:  # Kafka's answer until the task's first status is read
            raise NotFound(f"No status found for task {name}-{task}")
        return {"id": task, **status.to_json()}

    def tasks(self, name: str) -> list[dict[str, Any]]:
        self._require(name)
        return [{"id": TaskId(name, i).to_json(), "config": dict(cfg)}
                for i, cfg in enumerate(self.task_configs.get(name, []))]

    def tasks_config(self, name: str) -> dict[str, dict[str, str]]:
        self._require(name)
        return {f"{name}-{i}": dict(cfg) for i, cfg in enumerate(self.task_configs.get(name, []))}

    def active_topics(self, name: str) -> list[str]:
        self._require(name)
        return sorted(self.worker.active_topics.get(name, set()))

    async def reset_active_topics(self, name: str) -> None:
        self._require(name)
        self.worker.active_topics.pop(name, None)

    # -- validation ----------------------------------------------------------------------------
    async def validate(self, config: dict[str, Any], plugin: str | None = None) -> dict[str, Any]:
        """Kafka's ConfigInfos for a connector config (``PUT .../config/validate``), computed
        on a thread of its own (as Kafka's AbstractHerder runs validation on its connector
        executor): a connector whose ``validate()`` is slow or stuck never holds up the
        worker's loop. After :data:`VALIDATION_TIMEOUT_S` the request fails as Kafka's REST
        request times out, naming the stage it was in; the thread is given up on."""
        stage = _Stage("resolving transformed configuration properties for the connector")
        thread = PluginThread("connector-validation")
        try:
            return await asyncio.wait_for(thread.call(self._validate, config, plugin, stage),
                                          VALIDATION_TIMEOUT_S)
        except TimeoutError:
            thread.abandon()
            raise HerderError(f"Request timed out. The worker is currently {stage.description}"
                              f", which began at {stage.began}.") from None
        finally:
            if not thread.abandoned:
                thread.close(0)

    def _validate(self, config: dict[str, Any], plugin: str | None,
                  stage: _Stage) -> dict[str, Any]:
        config = {str(k): v if v is None or isinstance(v, str) else str(v)
                  for k, v in config.items()}
        # ${provider:path:key} values are checked resolved, as Kafka's AbstractHerder does
        # (the stored config keeps the references).
        config = self.config.config_transformer().resolve(config)
        class_name = config.get("connector.class") or plugin
        if not class_name:
            raise BadRequest("Connector config " + str(config) + " contains no connector type")
        if plugin is not None and config.get("connector.class") is None:
            config["connector.class"] = plugin
        try:
            cls = plugins.connector_class(class_name)
        except ConfigException as exc:
            raise BadRequest(str(exc)) from None
        kind = plugins.connector_type(cls)
        common = connector_config_def(kind)
        stage.enter(f"validating {kind} connector-specific properties for the connector")
        values = {v.name: v for v in common.validate(config)}
        if kind == "sink":
            for problem in check_sink_topics(config):
                values["topics"].errors.append(problem)
                values["topics.regex"].errors.append(problem)
        for problem in override_errors(self.config.connector_client_config_override_policy,
                                       config) or clients.override_problems(
                config, kind == "source" and self.config.exactly_once_source_enabled):
            values["connector.class"].errors.append(problem)
        connector = cls()
        if kind == "source":
            for key, problem in exactly_once.validation_errors(self.config, connector, config,
                                                               self.distributed):
                values[key].errors.append(problem)
        if config.get("transforms") or config.get("predicates"):
            try:
                from connect.transforms import TransformationChain

                TransformationChain.from_config(config).close()
            except Exception as exc:
                values["transforms"].errors.append(str(exc))
        stage.enter("retrieving the configuration definition from the connector")
        own_def = connector.config_def()
        stage.enter("performing multi-property validation for the connector")
        try:
            own_values = {v.name: v for v in connector.validate(dict(config))}
        except Exception as exc:
            own_values = {}
            values["connector.class"].errors.append(f"validate() failed: {exc}")
        entries = []
        for key in common.config_keys().values():
            entries.append({"definition": key.to_json(), "value": values[key.name].to_json()})
        for key in own_def.config_keys().values():
            if key.name in values:
                continue
            value = own_values.get(key.name)
            if value is None:
                from connect.config_def import ConfigValue

                value = ConfigValue(key.name, config.get(key.name))
            entries.append({"definition": key.to_json(), "value": value.to_json()})
        error_count = sum(len(e["value"]["errors"]) for e in entries)
        groups = common.groups() + [g for g in own_def.groups() if g not in common.groups()]
        return {"name": plugins.class_name(cls), "error_count": error_count, "groups": groups,
                "configs": entries}

    async def _check_valid(self, config: dict[str, str]) -> None:
        result = await self.validate(config)
        _warn_unknown_keys(config, result)
        if result["error_count"]:
            messages = [e for c in result["configs"] for e in c["value"]["errors"]]
            raise BadRequest(
                f"Connector configuration is invalid and contains the following "
                f"{len(messages)} error(s):\n" + "\n".join(messages) + "\nYou can also find the "
                "above list of errors at the endpoint `/connector-plugins/{connectorType}/config/"
                "validate`")

    # -- writing -------------------------------------------------------------------------------
    async def create_connector(self, name: str, config: dict[str, Any],
                               initial_state: str | None = None) -> dict[str, Any]:
        created, info = await self.put_connector_config(name, config, allow_replace=False,
                                                        initial_state=initial_state)
        return info

    async def put_connector_config(self, name: str, config: dict[str, Any],
                                   allow_replace: bool = True,
                                   initial_state: str | None = None
                                   ) -> tuple[bool, dict[str, Any]]:
        if not name or not name.strip():
            raise BadRequest("Connector name is required")
        if not _NAME_OK.match(name) or "/" in name:
            raise BadRequest(f"Connector name {name!r} may not contain ISO control characters "
                             "or '/'")
        if len(quote(name, safe="")) > MAX_NAME_LENGTH:
            raise BadRequest(f"Connector name is too long ({len(quote(name, safe=''))} "
                             f"characters URL-encoded; at most {MAX_NAME_LENGTH}, so that its "
                             "REST paths stay within an HTTP request line)")
        _check_values(config)
        config = {str(k): "" if v is None else (v if isinstance(v, str) else _text(v))
                  for k, v in config.items()}
        if config.get("name", name) != name:
            raise BadRequest(f"Connector name configuration ({config['name']}) doesn't match "
                             f"connector name in the URL ({name})")
        config["name"] = name
        try:
            target = TargetState.from_initial(initial_state)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        await self.ensure_leader()
        await self._check_valid(config)
        async with self._write_lock:  # concurrent identical PUTs: one creates, the rest update
            exists = name in self.configs
            if exists and not allow_replace:
                raise Conflict(f"Connector {name} already exists")
            await self._store_config(name, config, None if exists else target)
        await self._changed()
        return not exists, self.connector_info(name)

    async def patch_connector_config(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        current = dict(self._require(name))
        _check_values(patch)
        for key, value in patch.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value if isinstance(value, str) else _text(value)
        if current.get("name", name) != name:
            raise BadRequest(f"Connector name configuration ({current['name']}) doesn't match "
                             f"connector name in the URL ({name})")
        _created, info = await self.put_connector_config(name, current)
        return info

    async def delete_connector(self, name: str) -> None:
        self._require(name)
        await self.ensure_leader()
        await self._store_config(name, None)
        await self._changed()

    async def pause(self, name: str) -> None:
        self._require(name)
        await self.ensure_leader()
        await self._store_target(name, TargetState.PAUSED)
        await self._changed()

    async def resume(self, name: str) -> None:
        self._require(name)
        await self.ensure_leader()
        await self._store_target(name, TargetState.STARTED)
        await self._changed()

    async def stop_connector(self, name: str) -> None:
        self._require(name)
        await self.ensure_leader()
        await self._store_target(name, TargetState.STOPPED)
        await self._changed()

    # -- restarts ------------------------------------------------------------------------------
    def _restart_plan(self, name: str, include_tasks: bool, only_failed: bool
                      ) -> tuple[bool, list[TaskId]]:
        status = self.statuses.connector(name)
        connector = not only_failed or (status is not None and status.state is State.FAILED)
        tasks = []
        if include_tasks:
            for i in range(len(self.task_configs.get(name, []))):
                tid = TaskId(name, i)
                task_status = self.statuses.task(tid)
                if not only_failed or (task_status is not None
                                       and task_status.state is State.FAILED):
                    tasks.append(tid)
        return connector, tasks

    async def restart_connector(self, name: str, include_tasks: bool = False,
                                only_failed: bool = False) -> dict[str, Any] | None:
        """Restart; None for the plain form (204), else the status with RESTARTING (202)."""
        self._require(name)
        await self.ensure_leader()
        connector, tasks = self._restart_plan(name, include_tasks, only_failed)
        if not include_tasks and not only_failed:
            await self._restart_local(name, True, [])
            return None
        status = self.connector_status(name)
        if connector:
            status["connector"]["state"] = State.RESTARTING.value
        restarting = {t.task for t in tasks}
        for entry in status["tasks"]:
            if entry["id"] in restarting:
                entry["state"] = State.RESTARTING.value
        if connector:
            self.statuses.put_connector(name, self._restarting())
        for tid in tasks:
            self.statuses.put_task(tid, self._restarting())
        await self._request_restart(name, connector, tasks)
        return status

    def _restarting(self) -> Status:
        return Status(State.RESTARTING, self.worker_id, generation=self.worker.generation)

    async def _request_restart(self, name: str, connector: bool, tasks: list[TaskId]) -> None:
        self._spawn(self._restart_local(name, connector, tasks))

    async def _restart_local(self, name: str, connector: bool, tasks: list[TaskId]) -> None:
        """Restart what of this connector runs on this worker."""
        async with self._lock:
            if connector and name in self.worker.connectors:
                await self.worker.stop_connector(name)
                self.statuses.put_connector(name, self._restarting())
            local = [t for t in tasks if t in self.worker.tasks]
            for tid in local:
                self.statuses.put_task(tid, self._restarting())
            await self.worker.stop_tasks(local)
            await self._reconcile()

    async def restart_task(self, name: str, task: int) -> None:
        self._require(name)
        if task < 0 or task >= len(self.task_configs.get(name, [])):
            raise NotFound(f"Task {name}-{task} not found")
        await self.ensure_leader()
        await self._restart_task(TaskId(name, task))

    async def _restart_task(self, tid: TaskId) -> None:
        await self._restart_local(tid.connector, False, [tid])

    # -- offsets (KIP-875) ---------------------------------------------------------------------
    def _connector_cls(self, name: str) -> type:
        return plugins.connector_class(self._require(name).get("connector.class", ""))

    async def get_offsets(self, name: str) -> dict[str, Any]:
        cls = self._connector_cls(name)
        if issubclass(cls, SinkConnector):
            offsets = await sink_offsets.read(self.config, name)
            items = [{"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                      "offset": {"kafka_offset": off}} for tp, off in sorted(offsets.items())]
        else:
            topic = self._own_offsets_topic(name)
            pairs = self.offsets.all_for(name) if topic is None else \
                await source_offsets.read_connector_topic(self.config, topic, name)
            items = [{"partition": p, "offset": o} for p, o in pairs]
        return {"offsets": items}

    def _own_offsets_topic(self, name: str) -> str | None:
        """The connector's ``offsets.storage.topic`` when it has one of its own (KIP-618)."""
        topic = self.configs.get(name, {}).get(OFFSETS_TOPIC) or None
        return topic if self.distributed and topic != self.config.offset_storage_topic else None

    async def fence_zombies(self, name: str) -> None:
        """``PUT /connectors/{name}/fence`` (workers ask the leader, KIP-618)."""
        raise BadRequest("Kafka Connect in standalone mode does not support exactly-once "
                         "source connectors.")

    def _require_stopped(self, name: str) -> None:
        self._require(name)
        if self.targets.get(name) is not TargetState.STOPPED:
            raise BadRequest(
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                "This can be done for the specified connector by issuing a 'PUT' request to the "
                f"'/connectors/{name}/stop' endpoint")

    async def alter_offsets(self, name: str, body: Any) -> dict[str, str]:
        self._require_stopped(name)
        if not isinstance(body, dict) or not isinstance(body.get("offsets"), list) \
                or not body["offsets"]:
            raise BadRequest("The offsets to be altered may not be null or empty")
        cls = self._connector_cls(name)
        config = dict(self.configs[name])
        pairs = []
        for entry in body["offsets"]:
            if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict):
                raise BadRequest("Each offset entry needs a 'partition' object")
            offset = entry.get("offset")
            if offset is not None and not isinstance(offset, dict):
                raise BadRequest("An offset must be an object or null")
            pairs.append((entry["partition"], offset))
        if issubclass(cls, SinkConnector):
            changes = {_sink_partition(p): _sink_offset(o) for p, o in pairs}
            managed = await self._call_alter(cls, config, changes)
            await sink_offsets.alter(self.config, name, changes)
        else:
            managed = await self._call_alter(cls, config, pairs)
            await self._write_source_offsets(name, pairs)
        return {"message": _altered_message(managed, "altered")}

    async def reset_offsets(self, name: str) -> dict[str, str]:
        self._require_stopped(name)
        cls = self._connector_cls(name)
        config = dict(self.configs[name])
        if issubclass(cls, SinkConnector):
            current = await sink_offsets.read(self.config, name)
            managed = await self._call_alter(cls, config, dict.fromkeys(current))
            await sink_offsets.reset(self.config, name)
        else:
            pairs = [(p["partition"], None) for p in (await self.get_offsets(name))["offsets"]]
            managed = await self._call_alter(cls, config, pairs)
            await self._write_source_offsets(name, pairs)
        return {"message": _altered_message(managed, "reset")}

    async def _write_source_offsets(self, name: str, pairs: list) -> None:
        topic = self._own_offsets_topic(name)
        if topic is None:
            await self.offsets.put(name, pairs)
        else:
            await source_offsets.write_connector_topic(self.config, topic, name, pairs)

    async def _call_alter(self, cls: type, config: dict[str, str], offsets: Any) -> bool:
        connector = cls()
        if not isinstance(connector, SourceConnector | SinkConnector):
            return False
        thread = PluginThread(f"connector-offsets-{config.get('name', '')}")
        try:
            return bool(await thread.call(connector.alter_offsets, config, offsets))
        except BadRequest:
            raise
        except Exception as exc:
            raise BadRequest(f"Failed to alter offsets for connector: {exc}") from None
        finally:
            thread.close(0)


# How long a validation may take before its REST request fails (Kafka's REST request timeout).
VALIDATION_TIMEOUT_S = 90.0


class _Stage:
    """What a validation is doing, for the message of a request that timed out (Kafka's
    Stage)."""

    def __init__(self, description: str) -> None:
        self.enter(description)

    def enter(self, description: str) -> None:
        self.description = description
        self.began = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds") \
            .replace("+00:00", "Z")


# A connector's name is part of its REST paths; longer names could be created but never read,
# changed or deleted (the request line would exceed the HTTP server's limit).
MAX_NAME_LENGTH = 4096


def _check_values(config: dict[str, Any]) -> None:
    """Config values are strings (numbers, booleans and null are taken as text, as Kafka's
    JSON mapping does); a nested object or array is refused with a clear message (Kafka: a 500
    from its JSON mapper)."""
    for key, value in config.items():
        if isinstance(value, dict | list):
            kind = "an object" if isinstance(value, dict) else "an array"
            raise BadRequest(f"Connector configuration value of '{key}' is {kind}; values must "
                             "be strings, numbers, booleans or null")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _sink_partition(partition: dict[str, Any]) -> TopicPartition:
    topic, part = partition.get("kafka_topic"), partition.get("kafka_partition")
    if not isinstance(topic, str) or not isinstance(part, int) or isinstance(part, bool):
        raise BadRequest("Sink connector partitions need 'kafka_topic' (string) and "
                         "'kafka_partition' (integer)")
    return TopicPartition(topic, part)


def _sink_offset(offset: dict[str, Any] | None) -> int | None:
    if offset is None:
        return None
    value = offset.get("kafka_offset")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadRequest("Sink connector offsets need a non-negative integer 'kafka_offset'")
    return value


def _altered_message(managed: bool, verb: str) -> str:
    if managed:
        return f"The offsets for this connector have been {verb} successfully"
    return (f"The Connect framework-managed offsets for this connector have been {verb} "
            "successfully. However, if this connector manages offsets externally, they will "
            f"need to be manually {verb} in the system that the connector uses.")


def _warn_unknown_keys(config: dict[str, str], result: dict[str, Any]) -> None:
    """One WARN per key that neither the connector nor Connect defines (Kafka logs the same)."""
    from connect.runtime.unknown_keys import describe, unknown_keys

    known = {entry["definition"]["name"] for entry in result["configs"]}
    if not known - set(connector_config_def("source").config_keys()) - set(
            connector_config_def("sink").config_keys()):
        return  # a connector that declares no keys of its own: nothing to compare with
    for key, guess in unknown_keys(config, known | {"name"}):
        log.warning(describe(config.get("name", "?"), key, guess))
