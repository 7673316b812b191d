"""Connector and task states as the REST API reports them."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class State(str, Enum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    DESTROYED = "DESTROYED"


class TargetState(str, Enum):
    """What the user asked for; the actual :class:`State` follows it."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @classmethod
    def from_initial(cls, initial: str | None) -> TargetState:
        value = (initial or "RUNNING").upper()
        mapping = {"RUNNING": cls.STARTED, "STARTED": cls.STARTED, "PAUSED": cls.PAUSED,
                   "STOPPED": cls.STOPPED}
        if value not in mapping:
            raise ValueError(f"Invalid initial_state {initial!r}: must be one of RUNNING, PAUSED, "
                             "STOPPED")
        return mapping[value]


@dataclass(frozen=True, order=True)
class TaskId:
    connector: str
    task: int

    def to_json(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task}

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass
class Status:
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0
    version: str | None = None  # the connector's or task's version() (Kafka 4.x status bodies)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state.value, "worker_id": self.worker_id}
        if self.trace:
            out["trace"] = self.trace
        if self.version is not None:
            out["version"] = self.version
        return out

    @classmethod
    def failed(cls, worker_id: str, error: BaseException) -> Status:
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(State.FAILED, worker_id, trace)


def supersedes(new: Status, current: Status | None) -> bool:
    """Whether ``new`` replaces ``current``: a status written in an older group generation never
    overwrites one of a newer generation, unless the same worker wrote both (its own later
    word). Kafka's ``KafkaStatusBackingStore`` guards its safe writes with the same rule
    (``CacheEntry.canWriteSafely``); applying it when reading too makes every worker settle on
    the same status whatever order the records of two owners arrive in."""
    return current is None or new.generation >= current.generation \
        or new.worker_id == current.worker_id


@dataclass
class StatusStore:
    """The latest status of each connector and task (in memory; the distributed worker mirrors
    it to the status topic). Writes follow :func:`supersedes`."""

    connectors: dict[str, Status] = field(default_factory=dict)
    tasks: dict[TaskId, Status] = field(default_factory=dict)

    def put_connector(self, name: str, status: Status) -> bool:
        if not supersedes(status, self.connectors.get(name)):
            return False
        self.connectors[name] = status
        return True

    def put_task(self, task: TaskId, status: Status) -> bool:
        if not supersedes(status, self.tasks.get(task)):
            return False
        self.tasks[task] = status
        return True

    def connector(self, name: str) -> Status | None:
        return self.connectors.get(name)

    def task(self, task: TaskId) -> Status | None:
        return self.tasks.get(task)

    def tasks_of(self, name: str) -> dict[TaskId, Status]:
        return {t: s for t, s in self.tasks.items() if t.connector == name}

    def forget(self, name: str) -> None:
        self.connectors.pop(name, None)
        for task in [t for t in self.tasks if t.connector == name]:
            del self.tasks[task]
