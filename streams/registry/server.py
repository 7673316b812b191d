"""Confluent Schema Registry's REST API over aiohttp, and the embeddable :class:`SchemaRegistry`.

Paths, JSON shapes and error codes follow Confluent's (SR ``rest/resources``), so Confluent's
own clients (``SchemaRegistryClient``, the Avro/JSON/Protobuf serializers) work unchanged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from . import errors
from .service import RegistryService, describe, schema_text
from .store import SchemaStore

log = logging.getLogger("streams.registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
Handler = Callable[[web.Request], Awaitable[Any]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data).encode(), status=status, content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.RegistryError(400, 400, f"Unrecognized request body: {exc}") from None


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.RegistryError as exc:
        return _json(exc.body(), exc.status)
    except web.HTTPException as exc:
        if exc.status == 404:
            return _json({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)
        if exc.status == 405:
            return _json({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405)
        raise
    except Exception as exc:
        log.exception("registry request %s %s failed", request.method, request.path)
        return _json({"error_code": 50001, "message": f"Error in the backend data store - "
                                                      f"{type(exc).__name__}: {exc}"}, 500)


def build_app(service: RegistryService) -> web.Application:
    app = web.Application(middlewares=[_errors], client_max_size=32 * 1024 * 1024)
    r = app.router
    state = lambda: service.state  # noqa: E731 - the store swaps nothing, but reads stay fresh
    sync = service.store.sync

    async def root(_: web.Request) -> web.Response:
        return _json({})

    async def types(_: web.Request) -> web.Response:
        return _json(["JSON", "PROTOBUF", "AVRO"])

    async def subjects(req: web.Request) -> web.Response:
        await sync()
        names = state().subject_names(_flag(req, "deleted"), _flag(req, "deletedOnly"))
        prefix = req.query.get("subjectPrefix", "")
        return _json([n for n in names if n.startswith(prefix)])

    async def versions(req: web.Request) -> web.Response:
        await sync()
        subject = req.match_info["subject"]
        found = state().live_versions(subject, deleted=_flag(req, "deleted"))
        if not found:
            raise errors.subject_not_found(subject)
        return _json([v.version for v in found])

    async def register(req: web.Request) -> web.Response:
        out = await service.register(req.match_info["subject"], await _body(req))
        return _json({"id": out["id"], **{k: v for k, v in out.items() if k != "id"}})

    async def get_version(req: web.Request) -> web.Response:
        await sync()
        v = state().version(req.match_info["subject"], req.match_info["version"],
                            deleted=_flag(req, "deleted"))
        return _json(describe(v, req.query.get("format"), state()))

    async def get_version_schema(req: web.Request) -> web.Response:
        await sync()
        v = state().version(req.match_info["subject"], req.match_info["version"],
                            deleted=_flag(req, "deleted"))
        text = schema_text(v, req.query.get("format"), state())
        return web.Response(text=text, content_type=CONTENT_TYPE)

    async def referenced_by(req: web.Request) -> web.Response:
        await sync()
        v = state().version(req.match_info["subject"], req.match_info["version"])
        return _json(state().referenced_by(v.subject, v.version))

    async def delete_version(req: web.Request) -> web.Response:
        return _json(await service.delete_version(
            req.match_info["subject"], req.match_info["version"], _flag(req, "permanent")))

    async def delete_subject(req: web.Request) -> web.Response:
        return _json(await service.delete_subject(req.match_info["subject"],
                                                  _flag(req, "permanent")))

    async def lookup(req: web.Request) -> web.Response:
        return _json(await service.lookup(req.match_info["subject"], await _body(req),
                                          _flag(req, "deleted"), req.query.get("format")))

    def _by_id(req: web.Request) -> Any:
        try:
            schema_id = int(req.match_info["id"])
        except ValueError:
            raise errors.schema_not_found(f"Schema {req.match_info['id']} not found") from None
        v = state().ids.get(schema_id)
        if v is None:
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return v

    async def schema_by_id(req: web.Request) -> web.Response:
        await sync()
        v = _by_id(req)
        out: dict[str, Any] = {}
        if v.schema_type != "AVRO":
            out["schemaType"] = v.schema_type
        if v.references:
            out["references"] = v.references
        out["schema"] = schema_text(v, req.query.get("format"), state())
        return _json(out)

    async def schema_by_id_raw(req: web.Request) -> web.Response:
        await sync()
        v = _by_id(req)
        return web.Response(text=schema_text(v, req.query.get("format"), state()),
                            content_type=CONTENT_TYPE)

    def _uses(schema_id: int, deleted: bool) -> list[Any]:
        return [v for name in sorted(state().subjects)
                for v in state().live_versions(name, deleted=deleted) if v.id == schema_id]

    async def id_versions(req: web.Request) -> web.Response:
        await sync()
        v = _by_id(req)
        return _json([{"subject": u.subject, "version": u.version}
                      for u in _uses(v.id, _flag(req, "deleted"))])

    async def id_subjects(req: web.Request) -> web.Response:
        await sync()
        v = _by_id(req)
        return _json(sorted({u.subject for u in _uses(v.id, _flag(req, "deleted"))}))

    async def get_config(req: web.Request) -> web.Response:
        await sync()
        subject = req.match_info.get("subject")
        if subject is not None and subject not in state().configs \
                and not _flag(req, "defaultToGlobal"):
            raise errors.subject_compat_not_configured(subject)
        return _json({"compatibilityLevel": state().compatibility(subject)})

    async def put_config(req: web.Request) -> web.Response:
        return _json(await service.set_config(req.match_info.get("subject"), await _body(req)))

    async def delete_config(req: web.Request) -> web.Response:
        return _json(await service.delete_config(req.match_info.get("subject")))

    async def get_mode(req: web.Request) -> web.Response:
        await sync()
        subject = req.match_info.get("subject")
        modes = state().modes
        if subject is not None and subject not in modes and not _flag(req, "defaultToGlobal"):
            raise errors.subject_mode_not_configured(subject)
        return _json({"mode": modes.get(subject, modes.get(None, "READWRITE"))})

    async def put_mode(req: web.Request) -> web.Response:
        return _json(await service.set_mode(req.match_info.get("subject"), await _body(req)))

    async def compatibility(req: web.Request) -> web.Response:
        messages = await service.test_compatibility(
            req.match_info["subject"], req.match_info.get("version"), await _body(req))
        out: dict[str, Any] = {"is_compatible": not messages}
        if _flag(req, "verbose"):
            out["messages"] = messages
        return _json(out)

    async def all_schemas(req: web.Request) -> web.Response:
        await sync()
        prefix = req.query.get("subjectPrefix", "")
        deleted, latest_only = _flag(req, "deleted"), _flag(req, "latestOnly")
        out = []
        for name in sorted(state().subjects):
            if not name.startswith(prefix):
                continue
            found = state().live_versions(name, deleted=deleted)
            for v in found[-1:] if latest_only else found:
                out.append(describe(v, None, state()))
        return _json(out)

    async def contexts(_: web.Request) -> web.Response:
        return _json(["."])  # one (the default) context

    r.add_get("/", root)
    r.add_get("/schemas", all_schemas)
    r.add_get("/contexts", contexts)
    r.add_get("/schemas/types", types)
    r.add_get("/subjects", subjects)
    r.add_get("/subjects/{subject}/versions", versions)
    r.add_post("/subjects/{subject}/versions", register)
    r.add_get("/subjects/{subject}/versions/{version}", get_version)
    r.add_get("/subjects/{subject}/versions/{version}/schema", get_version_schema)
    r.add_get("/subjects/{subject}/versions/{version}/referencedby", referenced_by)
    r.add_delete("/subjects/{subject}/versions/{version}", delete_version)
    r.add_post("/subjects/{subject}", lookup)
    r.add_delete("/subjects/{subject}", delete_subject)
    r.add_get("/schemas/ids/{id}", schema_by_id)
    r.add_get("/schemas/ids/{id}/schema", schema_by_id_raw)
    r.add_get("/schemas/ids/{id}/versions", id_versions)
    r.add_get("/schemas/ids/{id}/subjects", id_subjects)
    for path in ("/config", "/config/{subject}"):
        r.add_get(path, get_config)
        r.add_put(path, put_config)
        r.add_delete(path, delete_config)
    for path in ("/mode", "/mode/{subject}"):
        r.add_get(path, get_mode)
        r.add_put(path, put_mode)
    r.add_post("/compatibility/subjects/{subject}/versions/{version}", compatibility)
    r.add_post("/compatibility/subjects/{subject}/versions", compatibility)
    return app


class SchemaRegistry:
    """A schema registry on ``host:port`` storing schemas in ``topic`` on the broker.

    In an asyncio program: ``await registry.start()`` / ``await registry.stop()``. Elsewhere
    ``with SchemaRegistry(...) as registry:`` runs it on an event loop in a background thread.
    ``port=0`` picks a free port; ``registry.url`` is where clients point. ``client_config``
    (aiokafka arguments, e.g. ``security_protocol``/``ssl_context``/``sasl_*``) reaches a
    secured cluster; ``role_configs`` adds arguments per client (admin, consumer, producer).
    """

    def __init__(self, bootstrap_servers: str, *, port: int = 8081, host: str = "127.0.0.1",
                 topic: str = "_schemas", client_config: dict[str, Any] | None = None,
                 role_configs: dict[str, dict[str, Any]] | None = None) -> None:
        self.host = host
        self.port = port
        self.store = SchemaStore(bootstrap_servers, topic, client_config, role_configs)
        self.service = RegistryService(self.store)
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> SchemaRegistry:
        await self.store.start()
        self._runner = web.AppRunner(build_app(self.service), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("schema registry on %s, schemas in topic %s", self.url, self.store.topic)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.store.stop()

    def __enter__(self) -> SchemaRegistry:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self.start())
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="schema-registry")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(30)
        loop.close()
        self._loop = None
