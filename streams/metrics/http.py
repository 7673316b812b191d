"""``metrics.listener=http://HOST:PORT``: ``GET /metrics`` (Prometheus text) and ``GET /health``
(JSON, 200 while the component serves, 503 otherwise) on aiohttp.

The server runs on the component's own event loop, so a scrape reads the component's state
on the thread that owns it (no locks on the hot path); a scrape costs one short pause of
that loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from .listener import parse_listener
from .prometheus import CONTENT_TYPE_LATEST, exposition
from .registry import MetricsRegistry

log = logging.getLogger(__name__)

# () -> (serving?, JSON body). The body says what the component is doing either way.
HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


def add_routes(app: web.Application, registries: Sequence[MetricsRegistry],
               health: HealthCheck | None = None, *, health_path: str | None = "/health"
               ) -> None:
    """Mount ``/metrics`` (and ``health_path``) on an existing aiohttp app (Connect's REST)."""

    async def metrics(_request: web.Request) -> web.Response:
        body = exposition(*registries)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", metrics)
    if health is not None and health_path:
        async def healthz(_request: web.Request) -> web.Response:
            ok, body = health()
            return web.json_response(body, status=200 if ok else 503)

        app.router.add_get(health_path, healthz)


class MetricsServer:
    """The HTTP endpoint of one component. ``await start()``, then ``await stop()``."""

    def __init__(self, listener: str, registries: Sequence[MetricsRegistry] | MetricsRegistry,
                 health: HealthCheck) -> None:
        self.host, self.port = parse_listener(listener)
        self.registries = [registries] if isinstance(registries, MetricsRegistry) \
            else list(registries)
        self.health = health
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        add_routes(app, self.registries, self.health)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise OSError(exc.errno, f"metrics.listener http://{self.host}:{self.port}: "
                                     f"cannot listen: {exc.strerror or exc}") from exc
        server = site._server  # the bound port, when 0 asked for a free one
        sockets = getattr(server, "sockets", None) or ()
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._runner = runner
        log.info("metrics on %s/metrics, health on %s/health", self.url, self.url)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
