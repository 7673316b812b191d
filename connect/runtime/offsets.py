"""Source offsets: ``(connector, source partition) -> source offset``.

Keys use Kafka Connect's form, the JSON array ``["<connector>", {partition}]``, so offsets written
by one worker kind can be read by the other. The standalone store keeps them in one JSON file that
is replaced atomically (write, fsync, rename): a crash leaves the old or the new file, never half.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def offset_key(connector: str, partition: Mapping[str, Any]) -> str:
    """The canonical key string (sorted, compact JSON, so equal partitions give equal keys)."""
    return json.dumps([connector, dict(partition)], sort_keys=True, separators=(",", ":"))


def parse_key(key: str | bytes) -> tuple[str, dict[str, Any]] | None:
    try:
        data = json.loads(key)
    except (ValueError, TypeError):
        return None
    if isinstance(data, list) and len(data) == 2 and isinstance(data[0], str) \
            and isinstance(data[1], dict):
        return data[0], data[1]
    return None


class OffsetStore:
    """In-memory view; subclasses persist :meth:`put` somewhere. Thread-safe for readers in task
    threads (``OffsetStorageReader``)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            value = self._data.get(offset_key(connector, partition))
        return dict(value) if value is not None else None

    def all_for(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        with self._lock:
            items = list(self._data.items())
        out = []
        for key, value in items:
            parsed = parse_key(key)
            if parsed and parsed[0] == connector:
                out.append((parsed[1], dict(value)))
        return out

    def _apply(self, connector: str,
               offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        with self._lock:
            for partition, offset in offsets:
                key = offset_key(connector, partition)
                if offset is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = dict(offset)

    async def put(self, connector: str,
                  offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Store offsets (None removes the partition) durably before returning."""
        self._apply(connector, offsets)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def sync(self) -> None:
        """Catch up with offsets written by other workers (distributed) before a task starts."""


class FileOffsetStore(OffsetStore):
    """``offset.storage.file.filename``: one JSON object ``{key: offset}``."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._write_lock = threading.Lock()

    async def start(self) -> None:
        if self.path.exists():
            text = self.path.read_text()
            data = json.loads(text) if text.strip() else {}
            if not isinstance(data, dict):
                raise ValueError(f"offset file {self.path} is not a JSON object")
            with self._lock:
                self._data = {k: v for k, v in data.items() if isinstance(v, dict)}

    async def put(self, connector: str,
                  offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        self._apply(connector, offsets)
        self._save()

    def _save(self) -> None:
        with self._write_lock:
            with self._lock:
                payload = json.dumps(self._data, sort_keys=True, indent=1)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "w") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
