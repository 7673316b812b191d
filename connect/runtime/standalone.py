"""``streams connect standalone``: one process, offsets in a file, configs from the command line
and the REST API (kept in memory, like Kafka's standalone mode)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from connect.rest.server import RestApi, RestServer
from connect.runtime import exactly_once
from connect.runtime.config import WorkerConfig
from connect.runtime.herder import Herder, HerderError
from connect.runtime.offsets import FileOffsetStore
from streams.config import ConfigError
from streams.metrics.connect import ConnectMetrics, ConnectMetricsServer
from streams.metrics.http import add_routes

log = logging.getLogger("connect.standalone")


class ConnectProcess:
    """The REST server plus a herder; subclasses choose the herder."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.herder: Herder | None = None
        self.api = RestApi(lambda: self.herder)
        host, port = config.listener()
        self.rest = RestServer(self.api, host, port)
        # /metrics on the REST listener, and on metrics.listener with /health if set
        self.metrics = ConnectMetrics(lambda: self.herder, config.metrics_listener)
        self.metrics_server = ConnectMetricsServer(self.metrics)
        add_routes(self.api.app, [self.metrics.registry], health=None)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.rest.host in ("", "0.0.0.0") else self.rest.host
        return f"http://{host}:{self.rest.port}"

    @property
    def worker_id(self) -> str:
        return self.url.removeprefix("http://")

    def make_herder(self) -> Herder:
        raise NotImplementedError

    async def start(self) -> None:
        await self.rest.start()
        await self.metrics_server.start()
        try:
            self.herder = self.make_herder()
            await self.herder.start()
        except BaseException:
            await self.stop()
            raise
        log.info("Connect worker %s started", self.url)

    async def stop(self) -> None:
        if self.herder is not None:
            await self.herder.stop()
        await self.metrics_server.stop()
        await self.rest.stop()

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()


class StandaloneWorker(ConnectProcess):
    def __init__(self, config: WorkerConfig,
                 connector_configs: list[dict[str, Any]] | None = None) -> None:
        refusal = exactly_once.refuse_in_standalone(config)
        if refusal:
            raise ConfigError(refusal)
        if not config.offset_storage_file_filename:
            raise ConfigError("standalone mode needs 'offset.storage.file.filename' in the "
                              "worker config (where source offsets are kept)")
        super().__init__(config)
        self.initial = list(connector_configs or [])

    def make_herder(self) -> Herder:
        assert self.config.offset_storage_file_filename
        return Herder(self.config, self.worker_id,
                      FileOffsetStore(self.config.offset_storage_file_filename))

    async def start(self) -> None:
        await super().start()
        assert self.herder is not None
        for cfg in self.initial:
            name = str(cfg.get("name") or "")
            if not name:
                await self.stop()
                raise ConfigError(f"connector config without 'name': {cfg}")
            try:
                await self.herder.put_connector_config(name, cfg)
            except HerderError as exc:
                await self.stop()
                raise ConfigError(f"connector {name}: {exc}") from None
