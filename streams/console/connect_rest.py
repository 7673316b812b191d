"""The console as a client of Kafka Connect's REST API (any Connect cluster, ours or Kafka's)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp

from .cluster import ConsoleError, is_secret


class ConnectRest:
    """A thin client of one Connect worker's REST API; errors carry the worker's message."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url.rstrip("/")

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            async with self.session.request(method, self.url + path, json=body) as response:
                text = await response.text()
                if response.status >= 400:
                    try:
                        message = (await response.json(content_type=None))["message"]
                    except (ValueError, KeyError, TypeError):
                        message = text or response.reason
                    raise ConsoleError(f"Connect answered {response.status}: {message}")
                return await response.json(content_type=None) if text else None
        except aiohttp.ClientError as exc:
            raise ConsoleError(f"cannot reach Connect at {self.url}: {exc}") from None

    async def connectors(self) -> list[dict[str, Any]]:
        """Every connector with its status, in one request (?expand=status&expand=info)."""
        found = await self._call("GET", "/connectors?expand=status&expand=info") or {}
        rows = []
        for name, entry in sorted(found.items()):
            status = entry.get("status", {})
            info = entry.get("info", {})
            tasks = status.get("tasks", [])
            rows.append({"name": name, "type": info.get("type") or status.get("type"),
                         "class": info.get("config", {}).get("connector.class"),
                         "state": status.get("connector", {}).get("state"),
                         "worker": status.get("connector", {}).get("worker_id"),
                         "tasks": len(tasks),
                         "failed_tasks": sum(t.get("state") == "FAILED" for t in tasks)})
        return rows

    async def connector(self, name: str) -> dict[str, Any]:
        path = "/connectors/" + quote(name, safe="")
        try:
            status = await self._call("GET", path + "/status")
        except ConsoleError:  # Connect answers 404 until the connector's owner wrote a status
            status = None
        config = await self._call("GET", path + "/config")
        try:
            offsets = await self._call("GET", path + "/offsets")
        except ConsoleError as exc:
            offsets = {"error": str(exc)}
        return {"name": name, "status": status, "offsets": offsets,
                "config": {k: ("********" if is_secret(k) else v)
                           for k, v in sorted(config.items())}}

    async def action(self, name: str, action: str) -> None:
        """restart (with its tasks) / pause / resume / stop / delete."""
        path = "/connectors/" + quote(name, safe="")
        if action == "delete":
            await self._call("DELETE", path)
        elif action == "restart":
            await self._call("POST", path + "/restart?includeTasks=true")
        elif action in ("pause", "resume", "stop"):
            await self._call("PUT", f"{path}/{action}")
        else:
            raise ConsoleError(f"unknown connector action {action!r}")

    async def validate(self, connector_class: str, config: dict[str, str]) -> list[str]:
        """Connect's own validation of a config: the error lines, empty when it is valid."""
        plugin = quote(connector_class.rsplit(".", 1)[-1], safe="")
        result = await self._call("PUT", f"/connector-plugins/{plugin}/config/validate",
                                  {"connector.class": connector_class, **config})
        return [f"{c['value']['name']}: {e}" for c in result.get("configs", [])
                for e in c["value"].get("errors", [])]

    async def put_config(self, name: str, config: dict[str, str]) -> None:
        await self._call("PUT", "/connectors/" + quote(name, safe="") + "/config", config)

    async def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        """KIP-875's PATCH /connectors/{name}/offsets (the connector must be STOPPED)."""
        answer = await self._call("PATCH", "/connectors/" + quote(name, safe="") + "/offsets",
                                  {"offsets": offsets})
        return str((answer or {}).get("message", "offsets altered"))

    async def reset_offsets(self, name: str) -> str:
        """KIP-875's DELETE /connectors/{name}/offsets (the connector must be STOPPED)."""
        answer = await self._call("DELETE", "/connectors/" + quote(name, safe="") + "/offsets")
        return str((answer or {}).get("message", "offsets reset"))
