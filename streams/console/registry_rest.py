"""The console as a client of the schema registry's REST API (Confluent's, or ours)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp

from .cluster import ConsoleError


class RegistryRest:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url.rstrip("/")

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
        try:
            async with self.session.request(method, self.url + path, json=body,
                                            headers=headers) as response:
                data = await response.json(content_type=None)
                if response.status >= 400:
                    message = data.get("message") if isinstance(data, dict) else data
                    raise ConsoleError(f"the registry answered {response.status}: {message}")
                return data
        except (aiohttp.ClientError, ValueError) as exc:
            raise ConsoleError(f"cannot read the registry at {self.url}: {exc}") from None

    async def subjects(self) -> list[dict[str, Any]]:
        rows = []
        for subject in sorted(await self._call("GET", "/subjects")):
            versions = await self._call("GET", f"/subjects/{quote(subject, safe='')}/versions")
            rows.append({"subject": subject, "versions": versions})
        return rows

    async def subject(self, subject: str) -> dict[str, Any]:
        path = f"/subjects/{quote(subject, safe='')}"
        versions = await self._call("GET", path + "/versions")
        schemas = [await self._call("GET", f"{path}/versions/{v}") for v in versions]
        try:
            level = (await self._call("GET", f"/config/{quote(subject, safe='')}"
                                             "?defaultToGlobal=true"))["compatibilityLevel"]
        except ConsoleError:
            level = (await self._call("GET", "/config"))["compatibilityLevel"]
        return {"subject": subject, "compatibility": level, "versions": schemas}

    async def test_compatibility(self, subject: str, schema: str, schema_type: str) -> bool:
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        result = await self._call(
            "POST", f"/compatibility/subjects/{quote(subject, safe='')}/versions/latest", body)
        return bool(result.get("is_compatible"))
