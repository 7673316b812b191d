"""Kafka Connect's REST API (paths, status codes, JSON shapes of reference §5.1) on aiohttp.

Handlers are thin: they parse the request, call the herder, and shape the answer. Every error is
``{"error_code": <http status>, "message": "..."}``. In distributed mode a write that must be made
by the leader is forwarded to it (once: the forwarded request carries ``forward=false``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from connect import plugins
from connect.config_def import ConfigException
from connect.runtime.config_providers import mask_connector_config
from connect.runtime.herder import BadRequest, Herder, HerderError, NotFound
from streams.kafka.client_config import HIDDEN, is_password_key

log = logging.getLogger("connect.rest")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class NotLeader(HerderError):
    """This worker cannot make the change; ``leader_url`` can (409 if it is unknown)."""

    status = 409

    def __init__(self, leader_url: str | None) -> None:
        super().__init__("Cannot complete request because of a conflicting operation "
                         "(e.g. worker rebalance)")
        self.leader_url = leader_url


def error_response(status: int, message: str) -> web.Response:
    return web.json_response({"error_code": status, "message": message}, status=status)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status)


async def _body(request: web.Request) -> Any:
    if not request.can_read_body:
        return None
    text = await request.text()
    if not text.strip():
        return None
    if request.content_type != "application/json":
        # Kafka's resources consume application/json only (Jersey answers 415).
        raise HerderError("HTTP 415 Unsupported Media Type", 415)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"Invalid JSON in request body: {exc}") from None


def _flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name, "false").lower()
    if value not in ("true", "false"):
        raise BadRequest(f"Query parameter {name} must be true or false, got {value!r}")
    return value == "true"


class RestApi:
    def __init__(self, herder_getter: Callable[[], Herder | None]) -> None:
        self._herder = herder_getter
        self._logger_levels: dict[str, tuple[str, int]] = {}
        self.app = web.Application(middlewares=[self._errors])
        self._routes()

    @property
    def herder(self) -> Herder:
        herder = self._herder()
        if herder is None or not herder.ready:
            raise HerderError("Worker is still starting up", 503)
        return herder

    # -- middleware ----------------------------------------------------------------------------
    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except NotLeader as exc:
            if exc.leader_url and request.query.get("forward", "true") != "false":
                return await self._forward(request, exc.leader_url)
            return error_response(exc.status, str(exc))
        except HerderError as exc:
            return error_response(exc.status, str(exc))
        except ConfigException as exc:
            return error_response(400, str(exc))
        except web.HTTPException as exc:
            if exc.status >= 400:
                return error_response(exc.status, f"HTTP {exc.status} {exc.reason}")
            raise
        except Exception as exc:
            log.exception("REST request %s %s failed", request.method, request.path)
            return error_response(500, f"{type(exc).__name__}: {exc}")

    async def _forward(self, request: web.Request, leader_url: str) -> web.Response:
        query = dict(request.query)
        query["forward"] = "false"
        body = await request.read()
        url = leader_url.rstrip("/") + request.rel_url.path
        headers = {"Content-Type": "application/json"}
        headers.update({k: v for k, v in request.headers.items()
                        if k.lower().startswith("x-connect-")})  # KIP-507 signatures
        async with ClientSession(timeout=ClientTimeout(total=90)) as session, session.request(
                request.method, url, params=query, data=body or None,
                headers=headers) as response:
            payload = await response.read()
            return web.Response(body=payload, status=response.status,
                                content_type=response.content_type or "application/json")

    # -- routes --------------------------------------------------------------------------------
    def _routes(self) -> None:
        r = self.app.router
        r.add_get("/", self.root)
        r.add_get("/health", self.health)
        r.add_get("/connectors", self.list_connectors)
        r.add_post("/connectors", self.create)
        r.add_get("/connectors/{name}", self.get_connector)
        r.add_delete("/connectors/{name}", self.delete)
        r.add_get("/connectors/{name}/config", self.get_config)
        r.add_put("/connectors/{name}/config", self.put_config)
        r.add_patch("/connectors/{name}/config", self.patch_config)
        r.add_get("/connectors/{name}/status", self.status)
        r.add_get("/connectors/{name}/tasks", self.tasks)
        r.add_post("/connectors/{name}/tasks", self.put_task_configs)
        r.add_get("/connectors/{name}/tasks-config", self.tasks_config)
        r.add_get("/connectors/{name}/tasks/{task}/status", self.task_status)
        r.add_post("/connectors/{name}/tasks/{task}/restart", self.restart_task)
        r.add_post("/connectors/{name}/restart", self.restart)
        r.add_put("/connectors/{name}/pause", self.pause)
        r.add_put("/connectors/{name}/resume", self.resume)
        r.add_put("/connectors/{name}/stop", self.stop)
        r.add_get("/connectors/{name}/topics", self.topics)
        r.add_put("/connectors/{name}/topics/reset", self.reset_topics)
        r.add_put("/connectors/{name}/fence", self.fence)
        r.add_get("/connectors/{name}/offsets", self.get_offsets)
        r.add_patch("/connectors/{name}/offsets", self.alter_offsets)
        r.add_delete("/connectors/{name}/offsets", self.reset_offsets)
        r.add_get("/connector-plugins", self.list_plugins)
        r.add_get("/connector-plugins/{plugin}/config", self.plugin_config)
        r.add_put("/connector-plugins/{plugin}/config/validate", self.validate)
        r.add_get("/admin/loggers", self.loggers)
        r.add_get("/admin/loggers/{logger}", self.get_logger)
        r.add_put("/admin/loggers/{logger}", self.set_logger)

    # -- worker --------------------------------------------------------------------------------
    async def root(self, request: web.Request) -> web.Response:
        from streams import __version__

        herder = self.herder
        return _json({"version": __version__, "commit": "streams",
                      "kafka_cluster_id": herder.cluster_id})

    async def health(self, request: web.Request) -> web.Response:
        herder = self._herder()
        if herder is None or not herder.ready:
            return _json({"status": "starting", "message": "Worker is still starting up."}, 503)
        return _json({"status": "healthy",
                      "message": "Worker has completed startup and is ready to handle requests."})

    # -- connectors ----------------------------------------------------------------------------
    async def list_connectors(self, request: web.Request) -> web.Response:
        herder = self.herder
        expand = request.query.getall("expand", [])
        names = herder.connector_names()
        if not expand:
            return _json(names)
        out: dict[str, Any] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                for what in expand:
                    if what == "status":
                        entry["status"] = herder.connector_status(name)
                    elif what == "info":
                        entry["info"] = _masked_info(herder.connector_info(name))
            except NotFound:  # no status yet, or deleted meanwhile: left out, as Kafka does
                continue
            out[name] = entry
        return _json(out)

    async def create(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object with 'name' and 'config'")
        config = body.get("config")
        if config is None:
            raise BadRequest("Connector config is missing")
        if not isinstance(config, dict):
            raise BadRequest("Connector config must be a JSON object")
        name = body.get("name") or config.get("name")
        if not isinstance(name, str) or not name.strip():
            raise BadRequest("Connector name is required")
        info = await self.herder.create_connector(name.strip(), config,
                                                  body.get("initial_state"))
        return _json(_masked_info(info), 201)

    async def get_connector(self, request: web.Request) -> web.Response:
        return _json(_masked_info(self.herder.connector_info(request.match_info["name"])))

    async def delete(self, request: web.Request) -> web.Response:
        await self.herder.delete_connector(request.match_info["name"])
        return web.Response(status=204)

    async def get_config(self, request: web.Request) -> web.Response:
        return _json(mask_connector_config(
            self.herder.connector_info(request.match_info["name"])["config"]))

    async def put_config(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object of config keys")
        created, info = await self.herder.put_connector_config(request.match_info["name"], body)
        return _json(_masked_info(info), 201 if created else 200)

    async def patch_config(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object of config keys")
        info = await self.herder.patch_connector_config(request.match_info["name"], body)
        return _json(_masked_info(info))

    async def status(self, request: web.Request) -> web.Response:
        return _json(self.herder.connector_status(request.match_info["name"]))

    async def tasks(self, request: web.Request) -> web.Response:
        return _json([{**task, "config": mask_connector_config(task["config"])}
                      for task in self.herder.tasks(request.match_info["name"])])

    async def tasks_config(self, request: web.Request) -> web.Response:
        return _json({task: mask_connector_config(config) for task, config in
                      self.herder.tasks_config(request.match_info["name"]).items()})

    def _task(self, request: web.Request) -> int:
        raw = request.match_info["task"]
        try:
            return int(raw)
        except ValueError:
            raise NotFound(f"Unknown task {request.match_info['name']}-{raw}") from None

    async def fence(self, request: web.Request) -> web.Response:
        """Internal: a worker asks the leader for a zombie fencing round (KIP-618), signed with
        the session key under connect.protocol=sessioned (KIP-507)."""
        herder = self.herder
        verify = getattr(herder, "verify_internal", None)
        if verify is not None:
            verify(await request.read(), request.headers)
        await herder.fence_zombies(request.match_info["name"])
        return web.Response(status=204)

    async def put_task_configs(self, request: web.Request) -> web.Response:
        """Internal: task configs a worker's connector generated, for the leader to write
        (Kafka's ``POST /connectors/{name}/tasks``), signed under connect.protocol=sessioned."""
        herder = self.herder
        write = getattr(herder, "put_task_configs", None)
        if write is None:
            raise HerderError("HTTP 405 Method Not Allowed", 405)
        raw = await request.read()
        herder.verify_internal(raw, request.headers)
        try:
            configs = json.loads(raw) if raw.strip() else None
        except ValueError as exc:
            raise BadRequest(f"Invalid JSON in request body: {exc}") from None
        await write(request.match_info["name"], configs)
        return web.Response(status=204)

    async def task_status(self, request: web.Request) -> web.Response:
        return _json(self.herder.task_status(request.match_info["name"], self._task(request)))

    async def restart_task(self, request: web.Request) -> web.Response:
        await self.herder.restart_task(request.match_info["name"], self._task(request))
        return web.Response(status=204)

    async def restart(self, request: web.Request) -> web.Response:
        include_tasks = _flag(request, "includeTasks")
        only_failed = _flag(request, "onlyFailed")
        result = await self.herder.restart_connector(request.match_info["name"], include_tasks,
                                                     only_failed)
        if result is None:
            return web.Response(status=204)
        return _json(result, 202)

    async def pause(self, request: web.Request) -> web.Response:
        await self.herder.pause(request.match_info["name"])
        return web.Response(status=202)

    async def resume(self, request: web.Request) -> web.Response:
        await self.herder.resume(request.match_info["name"])
        return web.Response(status=202)

    async def stop(self, request: web.Request) -> web.Response:
        await self.herder.stop_connector(request.match_info["name"])
        return web.Response(status=204)

    async def topics(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return _json({name: {"topics": self.herder.active_topics(name)}})

    async def reset_topics(self, request: web.Request) -> web.Response:
        await self.herder.reset_active_topics(request.match_info["name"])
        return web.Response(status=202)

    async def get_offsets(self, request: web.Request) -> web.Response:
        return _json(await self.herder.get_offsets(request.match_info["name"]))

    async def alter_offsets(self, request: web.Request) -> web.Response:
        body = await _body(request)
        return _json(await self.herder.alter_offsets(request.match_info["name"], body))

    async def reset_offsets(self, request: web.Request) -> web.Response:
        return _json(await self.herder.reset_offsets(request.match_info["name"]))

    # -- plugins -------------------------------------------------------------------------------
    async def list_plugins(self, request: web.Request) -> web.Response:
        connectors_only = request.query.get("connectorsOnly", "true").lower() != "false"
        found = plugins.connector_plugins() if connectors_only else plugins.all_plugins()
        return _json([p.to_json() for p in found])

    def _plugin(self, request: web.Request) -> plugins.PluginDesc:
        name = request.match_info["plugin"]
        try:
            return plugins.find_plugin(name)
        except ConfigException as exc:
            raise NotFound(str(exc)) from None

    async def plugin_config(self, request: web.Request) -> web.Response:
        desc = self._plugin(request)
        keys = desc.cls().config_def().config_keys().values()
        return _json([k.to_json() for k in keys])

    async def validate(self, request: web.Request) -> web.Response:
        desc = self._plugin(request)
        body = await _body(request)
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object of config keys")
        given = body.get("connector.class")
        if given is not None:
            try:
                same = plugins.connector_class(str(given)) is desc.cls
            except ConfigException:
                same = False
            if not same:
                raise BadRequest("Included connector type " + str(given) + " does not match "
                                 "request type " + request.match_info["plugin"])
        return _json(_masked_validation(await self.herder.validate(body,
                                                                   plugin=desc.class_name)))

    # -- loggers (KIP-495) ---------------------------------------------------------------------
    async def loggers(self, request: web.Request) -> web.Response:
        out = {"root": {"level": logging.getLevelName(logging.getLogger().level),
                        "last_modified": self._logger_levels.get("root", ("", None))[1]}}
        for name, (level, modified) in sorted(self._logger_levels.items()):
            if name != "root":
                out[name] = {"level": level, "last_modified": modified}
        return _json(out)

    async def get_logger(self, request: web.Request) -> web.Response:
        name = request.match_info["logger"]
        if name != "root" and name not in logging.Logger.manager.loggerDict:
            raise NotFound(f"Logger {name} not found.")
        logger = logging.getLogger(None if name == "root" else name)
        return _json({"level": logging.getLevelName(logger.getEffectiveLevel()),
                      "last_modified": self._logger_levels.get(name, ("", None))[1]})

    async def set_logger(self, request: web.Request) -> web.Response:
        name = request.match_info["logger"]
        body = await _body(request)
        level = body.get("level") if isinstance(body, dict) else None
        if not isinstance(level, str):
            raise BadRequest("Desired 'level' parameter was not specified in request.")
        level = {"WARN": "WARNING", "FATAL": "CRITICAL", "TRACE": "DEBUG"}.get(level.upper(),
                                                                              level.upper())
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise NotFound(f"invalid log level '{body['level']}'.")
        scope = request.query.get("scope", "worker").lower()
        if scope not in ("worker", "cluster"):
            raise BadRequest(f"Invalid scope {scope!r}: must be worker or cluster")
        now = int(time.time() * 1000)
        affected = [name] + sorted(n for n in logging.Logger.manager.loggerDict
                                   if name == "root" or n.startswith(name + "."))
        for each in affected:
            logging.getLogger(None if each == "root" else each).setLevel(level)
            self._logger_levels[each] = (level, now)
        if scope == "cluster":
            return web.Response(status=204)
        return _json(affected)


class RestServer:
    """Binds the API on ``host:port`` (port 0 = any free port; see :attr:`port`)."""

    def __init__(self, api: RestApi, host: str, port: int) -> None:
        self.api = api
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.api.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        if self.port == 0:
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _masked_info(info: Any) -> Any:
    """Connector info with password-type config values shown as ``[hidden]`` (the stored
    config keeps them; a ``${provider:...}`` reference is shown as written)."""
    if isinstance(info, dict) and isinstance(info.get("config"), dict):
        return {**info, "config": mask_connector_config(info["config"])}
    return info


def _masked_validation(result: dict[str, Any]) -> dict[str, Any]:
    """ConfigInfos with PASSWORD-type values shown as ``[hidden]``, as Kafka's validate does."""
    for entry in result.get("configs", []):
        definition, value = entry.get("definition", {}), entry.get("value", {})
        if value.get("value") is not None and (definition.get("type") == "PASSWORD"
                                               or is_password_key(value.get("name", ""))):
            value["value"] = HIDDEN
    return result
