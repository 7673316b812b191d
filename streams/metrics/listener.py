"""``metrics.listener`` values: parsed without loading aiohttp, so configs can check them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from .registry import MetricsRegistry


def parse_listener(value: str, key: str = "metrics.listener") -> tuple[str, int]:
    """``http://HOST:PORT`` -> (host, port); a clear error naming ``key`` otherwise."""
    text = str(value).strip()
    parts = urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None \
            or parts.path not in ("", "/"):
        raise ValueError(f"{key}={value!r}: expected http://HOST:PORT (e.g. "
                         f"http://0.0.0.0:9404; port 0 picks a free one)")
    return parts.hostname, port


class ServedMetrics:
    """A component's optional ``metrics.listener`` endpoint: ``serve`` starts one
    :class:`~streams.metrics.http.MetricsServer` when a listener is set (aiohttp is loaded only
    then), ``url`` is where it listens (None when it does not), ``stop`` closes it."""

    _server: Any = None

    async def serve(self, listener: str | None,
                    registries: Sequence[MetricsRegistry] | MetricsRegistry,
                    health: Callable[[], tuple[bool, dict[str, Any]]]) -> None:
        if not listener:
            return
        from .http import MetricsServer

        server = MetricsServer(listener, registries, health)
        await server.start()
        self._server = server

    @property
    def url(self) -> str | None:
        return self._server.url if self._server is not None else None

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop()
