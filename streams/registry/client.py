"""A small synchronous client for a Confluent-compatible schema registry (ours or Confluent's).

Serdes call it from the record path, so it caches: ids never change meaning, so a schema
fetched by id or an id obtained by registering is kept for the life of the client. Only the
standard library is used (urllib), so a serde works in any thread and in Spark workers.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .errors import RegistryError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True)
class RegisteredSchema:
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Any, ...] = field(default_factory=tuple)
    subject: str | None = None
    version: int | None = None


class SchemaRegistryClient:
    """``url`` may list several registries separated by commas; the first that answers wins."""

    def __init__(self, url: str, *, timeout: float = 30.0,
                 basic_auth: tuple[str, str] | None = None) -> None:
        self.urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        if not self.urls:
            raise ValueError("schema.registry.url is empty")
        self.timeout = timeout
        self._auth: str | None = None
        if basic_auth:
            import base64

            self._auth = "Basic " + base64.b64encode(":".join(basic_auth).encode()).decode()
        self._lock = threading.Lock()
        self._by_id: dict[int, RegisteredSchema] = {}
        self._ids: dict[tuple[str, str, str, str], RegisteredSchema] = {}

    def _request(self, method: str, path: str, body: Any = None,
                 query: dict[str, Any] | None = None) -> Any:
        qs = ("?" + urllib.parse.urlencode(query)) if query else ""
        data = None if body is None else json.dumps(body).encode()
        last: Exception | None = None
        for base in self.urls:
            req = urllib.request.Request(base + path + qs, data=data, method=method)
            req.add_header("Content-Type", CONTENT_TYPE)
            req.add_header("Accept", CONTENT_TYPE)
            if self._auth:
                req.add_header("Authorization", self._auth)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as exc:
                try:
                    err = json.loads(exc.read())
                    raise RegistryError(exc.code, int(err.get("error_code", exc.code)),
                                        str(err.get("message", ""))) from None
                except ValueError:
                    raise RegistryError(exc.code, exc.code, f"{exc.reason}") from None
            except (urllib.error.URLError, OSError) as exc:
                last = exc
        raise RegistryError(503, 50003, f"no schema registry answered at {self.urls}: {last}")

    @staticmethod
    def _quote(subject: str) -> str:
        return urllib.parse.quote(subject, safe="")

    @staticmethod
    def _body(schema: str, schema_type: str, references: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = list(references)
        return body

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Any = ()) -> int:
        key = (subject, schema_type, schema, json.dumps(list(references), sort_keys=True))
        with self._lock:
            hit = self._ids.get(key)
        if hit is not None:
            return hit.id
        out = self._request("POST", f"/subjects/{self._quote(subject)}/versions",
                            self._body(schema, schema_type, references))
        reg = RegisteredSchema(int(out["id"]), schema, schema_type, tuple(references), subject,
                               out.get("version"))
        with self._lock:
            self._ids[key] = reg
            self._by_id.setdefault(reg.id, reg)
        return reg.id

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Any = ()) -> RegisteredSchema:
        key = (subject, schema_type, schema, json.dumps(list(references), sort_keys=True))
        with self._lock:
            hit = self._ids.get(key)
        if hit is not None:
            return hit
        out = self._request("POST", f"/subjects/{self._quote(subject)}",
                            self._body(schema, schema_type, references))
        reg = self._registered(out)
        with self._lock:
            self._ids[key] = reg
        return reg

    def get_schema(self, schema_id: int, fmt: str | None = None) -> RegisteredSchema:
        with self._lock:
            hit = self._by_id.get(schema_id) if fmt is None else None
        if hit is not None:
            return hit
        out = self._request("GET", f"/schemas/ids/{int(schema_id)}",
                            query={"format": fmt} if fmt else None)
        reg = RegisteredSchema(int(schema_id), out["schema"], out.get("schemaType", "AVRO"),
                               tuple(out.get("references") or ()))
        if fmt is None:
            with self._lock:
                self._by_id[schema_id] = reg
        return reg

    def get_latest_version(self, subject: str, fmt: str | None = None) -> RegisteredSchema:
        return self.get_version(subject, "latest", fmt)

    def get_version(self, subject: str, version: int | str,
                    fmt: str | None = None) -> RegisteredSchema:
        out = self._request("GET", f"/subjects/{self._quote(subject)}/versions/{version}",
                            query={"format": fmt} if fmt else None)
        return self._registered(out)

    def get_subjects(self) -> list[str]:
        return list(self._request("GET", "/subjects"))

    def get_versions(self, subject: str) -> list[int]:
        return list(self._request("GET", f"/subjects/{self._quote(subject)}/versions"))

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        return list(self._request("DELETE", f"/subjects/{self._quote(subject)}",
                                  query={"permanent": "true"} if permanent else None))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        path = "/config" + (f"/{self._quote(subject)}" if subject else "")
        return str(self._request("PUT", path, {"compatibility": level})["compatibility"])

    def get_compatibility(self, subject: str | None = None) -> str:
        path = "/config" + (f"/{self._quote(subject)}" if subject else "")
        query = {"defaultToGlobal": "true"} if subject else None
        return str(self._request("GET", path, query=query)["compatibilityLevel"])

    def test_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                           version: int | str = "latest",
                           references: Any = ()) -> tuple[bool, list[str]]:
        out = self._request("POST",
                            f"/compatibility/subjects/{self._quote(subject)}/versions/{version}",
                            self._body(schema, schema_type, references), {"verbose": "true"})
        return bool(out["is_compatible"]), list(out.get("messages") or [])

    @staticmethod
    def _registered(out: dict[str, Any]) -> RegisteredSchema:
        return RegisteredSchema(int(out["id"]), out["schema"], out.get("schemaType", "AVRO"),
                                tuple(out.get("references") or ()), out.get("subject"),
                                out.get("version"))
