"""The application's state directory: an exclusive lock, the process id, task directories.

Layout as in Kafka Streams: ``<state.dir>/<application.id>/<task id>/``. The process id is kept
in the directory so a restarted instance reuses its ``transactional.id`` and so fences (and
aborts) the transaction its previous incarnation left open when it crashed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import uuid
from pathlib import Path
from typing import IO

from ..processor.api import TaskId

_TASK_DIR = re.compile(r"^\d+_\d+$")
PROCESS_FILE = "kafka-streams-process-metadata"


class StateDirLockedError(RuntimeError):
    """Another instance uses this state directory."""


class StateDirectory:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_file: IO[str] | None = None
        self.process_id = ""

    def lock(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        handle = open(self.path / ".lock", "a+")  # noqa: SIM115 - held until unlock()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise StateDirLockedError(
                f"state directory {self.path} is in use by another instance; give each "
                "instance on this machine its own state.dir") from None
        self._lock_file = handle
        self.process_id = self._load_process_id()

    def unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _load_process_id(self) -> str:
        path = self.path / PROCESS_FILE
        try:
            return str(json.loads(path.read_text())["processId"])
        except (OSError, ValueError, KeyError):
            process_id = str(uuid.uuid4())
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"processId": process_id}))
            os.replace(tmp, path)
            return process_id

    def task_ids_on_disk(self) -> set[TaskId]:
        """Tasks with local state here (a cheap restore), reported to the assignor."""
        if not self.path.is_dir():
            return set()
        result = set()
        for entry in self.path.iterdir():
            if _TASK_DIR.match(entry.name) and entry.is_dir() and any(entry.iterdir()):
                result.add(TaskId.parse(entry.name))
        return result
