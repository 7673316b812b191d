"""Run a Connect worker inside another program: its own event loop on a daemon thread.

Used by the demo (which also runs a topology and Spark in the same process) and by tests. The
worker behaves exactly as under ``streams connect``; only the loop lives elsewhere.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from connect.runtime.config import WorkerConfig
from connect.runtime.standalone import ConnectProcess, StandaloneWorker
from streams.kafka.loop_thread import LoopThread


class BackgroundWorker:
    """``start()`` returns once the worker serves its REST API; ``stop()`` stops it cleanly."""

    def __init__(self, process: ConnectProcess) -> None:
        self.process = process
        self._loop_thread = LoopThread("connect-worker")

    @classmethod
    def standalone(cls, bootstrap: str, offsets_file: str | Path,
                   settings: dict[str, str] | None = None,
                   connectors: list[dict[str, Any]] | None = None,
                   timeout: float = 60.0) -> BackgroundWorker:
        """Start what ``streams connect standalone`` runs, in this process: REST on any free
        port unless ``settings`` names ``listeners``, source offsets in ``offsets_file``."""
        config = WorkerConfig.parse({
            "bootstrap.servers": bootstrap,
            "listeners": "http://127.0.0.1:0",
            "offset.storage.file.filename": str(offsets_file),
            **(settings or {}),
        })
        return cls(StandaloneWorker(config, connectors)).start(timeout)

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The worker's event loop (running once ``start()`` was called)."""
        return self._loop_thread.loop

    def call(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run a coroutine on the worker's loop and wait for its result."""
        return self._loop_thread.run(coro, timeout)

    def start(self, timeout: float = 60.0) -> BackgroundWorker:
        self._loop_thread.start()
        self.call(self.process.start(), timeout)
        return self

    def put_connector(self, config: dict[str, str], timeout: float = 60.0) -> Any:
        """Create or update a connector, as ``PUT /connectors/{name}/config`` would."""
        herder = self.process.herder
        if herder is None:
            raise RuntimeError("the worker is not started")
        return self.call(herder.put_connector_config(config["name"], dict(config)), timeout)

    def delete_connector(self, name: str, timeout: float = 60.0) -> None:
        """Stop and remove a connector, as ``DELETE /connectors/{name}`` would."""
        herder = self.process.herder
        if herder is None:
            raise RuntimeError("the worker is not started")
        self.call(herder.delete_connector(name), timeout)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the worker (connectors, tasks, REST), then its loop; a second call does nothing."""
        if not self._loop_thread.running:
            return
        try:
            self.call(self.process.stop(), timeout)
        finally:
            self._loop_thread.stop(timeout)
