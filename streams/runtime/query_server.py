"""The HTTP query endpoint an instance serves on its ``application.server``.

Kafka Streams leaves the "RPC layer" of interactive queries to the user (KIP-67); this is a
ready-made one. Every instance answers for every key: it looks the key up in the host map of
the last assignment and, when another instance owns the key, forwards the request there.

``GET /stores/{store}/keys/{key}``     200 ``{"key": k, "value": v}`` or 404; window stores take
                                       ``?from=&to=`` (ms) and answer a list of windows, session
                                       stores likewise a list of sessions
``GET /stores/{store}/range?from=&to=`` and ``GET /stores/{store}/all``: the entries of every
                                       instance, up to ``?limit=`` (default 1000)
``GET /instance``                      this instance: state, tasks (active with lag, restoring
                                       with progress, standby), topology, records per node
                                       (instance_report.py; what ``streams console`` shows)

Keys in the path are text parsed by the store's key serde (an integer for ``Serdes.long()``,
JSON for ``Serdes.json()``...); values are the store's values as JSON. The server runs on its
own thread and event loop, so a busy stream thread does not delay answers; it reads the stores
through the same read-only views as ``KafkaStreams.store()``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import logging
import os
import socket
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import ClientError, ClientSession, ClientTimeout, web

from ..processor.api import TaskId
from ..serde import (
    BytesSerde,
    DoubleSerde,
    IntegerSerde,
    InternalSerde,
    JsonSerde,
    LongSerde,
    PydanticSerde,
    Serde,
    StringSerde,
)
from ..windowing import Windowed
from .queries import HostInfo, InvalidStateStoreError, KeyQueryMetadata

if TYPE_CHECKING:
    from .app import KafkaStreams

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
FORWARDED = "X-Streams-Forwarded"  # set on forwarded requests: answer locally, never re-forward
FORWARD_TIMEOUT_S = 10.0
MAX_TIME = 2**63 - 1


class QueryError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_key(serde: Serde[Any], text: str) -> Any:
    """A path segment -> the key the store holds, as the store's key serde reads it."""
    try:
        if isinstance(serde, StringSerde | InternalSerde):
            # The internal format holds whatever Python type the topology made; text in a URL
            # is taken as a string key (a store keyed by numbers needs Serdes.long()).
            return text
        if isinstance(serde, IntegerSerde | LongSerde):
            return int(text)
        if isinstance(serde, DoubleSerde):
            return float(text)
        if isinstance(serde, BytesSerde):
            return text.encode()
        if isinstance(serde, JsonSerde):
            try:
                return json.loads(text)
            except ValueError:
                return text  # a bare word is the JSON string it names
        if isinstance(serde, PydanticSerde):
            return serde.model.model_validate_json(text)  # type: ignore[attr-defined]
        return serde.deserialize(None, text.encode())
    except (ValueError, TypeError) as exc:
        raise QueryError(400, f"key {text!r} cannot be read by the store's key serde "
                              f"{type(serde).__name__}: {exc}") from None


def to_json(value: Any) -> Any:
    """A store key or value as JSON: bytes as UTF-8 text (base64 when not text), windowed keys
    as ``{"key", "start", "end"}``, pydantic models through ``model_dump``."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Windowed):
        return {"key": to_json(value.key), "start": value.window.start,
                "end": value.window.end}
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(value)


def _int_param(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise QueryError(400, f"query parameter {name!r} must be an integer, got {raw!r}") \
            from None


class QueryServer:
    """Serves the query endpoint on ``application.server`` from a thread of its own."""

    def __init__(self, app: KafkaStreams, endpoint: str) -> None:
        self.app = app
        self.host_info = HostInfo.parse(endpoint)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None
        self._stopped: asyncio.Event | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> QueryServer:
        """Bind and serve; raises (naming the address) if the port cannot be bound."""
        started: list[BaseException | None] = []
        ready = threading.Event()

        def main() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._serve(started, ready))
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, daemon=True,
                                        name=f"query-server-{self.host_info}")
        self._thread.start()
        ready.wait()
        if started and started[0] is not None:
            self._thread.join()
            raise OSError(f"cannot serve queries on application.server={self.host_info}: "
                          f"{started[0]}") from started[0]
        return self

    async def _serve(self, started: list[BaseException | None], ready: threading.Event) -> None:
        self._stopped = asyncio.Event()
        web_app = web.Application(middlewares=[_json_errors])
        web_app.router.add_get("/stores/{store}/keys/{key}", self._handle_key)
        web_app.router.add_get("/stores/{store}/range", self._handle_range)
        web_app.router.add_get("/stores/{store}/all", self._handle_all)
        web_app.router.add_get("/instance", self._handle_instance)
        self._runner = web.AppRunner(web_app, access_log=None)
        await self._runner.setup()
        try:
            await self._bind()
        except OSError as exc:
            await self._runner.cleanup()
            started.append(exc)
            ready.set()
            return
        self._session = ClientSession(timeout=ClientTimeout(total=FORWARD_TIMEOUT_S))
        started.append(None)
        ready.set()
        log.info("serving queries on http://%s", self.host_info)
        try:
            await self._stopped.wait()
        finally:
            await self._session.close()
            await self._runner.cleanup()

    async def _bind(self) -> None:
        """Listen on application.server's host; when that names an address this machine does
        not have (a load balancer's or a container's published name), on every interface."""
        assert self._runner is not None
        try:
            await web.TCPSite(self._runner, self.host_info.host, self.host_info.port).start()
        except OSError as exc:
            if exc.errno not in (errno.EADDRNOTAVAIL, socket.EAI_NONAME) and \
                    not isinstance(exc, socket.gaierror):
                raise
            log.info("application.server host %s is not an address of this machine (%s); "
                     "serving queries on every interface, port %d", self.host_info.host, exc,
                     self.host_info.port)
            await web.TCPSite(self._runner, None, self.host_info.port).start()

    def stop(self) -> None:
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just closed
                loop.call_soon_threadsafe(stopped.set)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)

    # -- handlers -----------------------------------------------------------------------------

    async def _handle_instance(self, request: web.Request) -> web.Response:
        from .instance_report import report

        loop = self.app._loop
        if loop is None or not loop.is_running():  # not started, or closed
            return web.json_response(report(self.app), dumps=_dumps)

        async def on_stream_loop() -> dict[str, Any]:
            return report(self.app)
        future = asyncio.run_coroutine_threadsafe(on_stream_loop(), loop)
        try:
            data = await asyncio.wait_for(asyncio.wrap_future(future), FORWARD_TIMEOUT_S)
        except TimeoutError:
            return _error(503, "the stream thread did not answer in time; retry")
        return web.json_response(data, dumps=_dumps)

    def _store_kind(self, store: str) -> str:
        topology = self.app.topology
        if store in topology.stores:
            return topology.stores[store].kind
        if store in topology.global_stores:
            return "kv"
        raise QueryError(404, f"no state store named {store!r} in this application")

    def _key_serde(self, store: str) -> Serde[Any]:
        topology = self.app.topology
        builder = (topology.stores[store] if store in topology.stores
                   else topology.global_stores[store].store)
        # As the task does (TaskConfig.internal_key_serde): a store given no key serde holds its
        # keys in default.key.serde, else in the self-describing internal format.
        return builder.key_serde or self.app.config.default_key_serde or InternalSerde()

    async def _handle_key(self, request: web.Request) -> web.Response:
        store = request.match_info["store"]
        text = request.match_info["key"]
        try:
            kind = self._store_kind(store)
            if kind not in ("kv", "window", "session"):
                raise QueryError(400, f"store {store!r} ({kind}) cannot be queried")
            key = parse_key(self._key_serde(store), text)
            if not request.headers.get(FORWARDED):
                owner = self._owner(store, key)
                if owner is not None:
                    return await self._forward(owner, request)
            return self._answer_key(store, kind, key, request)
        except QueryError as exc:
            return _error(exc.status, str(exc))

    def _owner(self, store: str, key: Any) -> HostInfo | None:
        """The instance to forward to, or None to answer here."""
        meta = self.app.query_metadata_for_key(store, key)
        if meta == KeyQueryMetadata.NOT_AVAILABLE:
            if self.app.metadata_for_all_streams_clients():
                raise QueryError(503, "the key's owner is not known yet (rebalancing); retry")
            return None  # no host map (no assignment yet): this instance's stores alone
        return None if meta.active_host == self.host_info else meta.active_host

    async def _forward(self, owner: HostInfo, request: web.Request) -> web.Response:
        assert self._session is not None
        url = f"http://{owner}{request.rel_url}"
        try:
            async with self._session.get(url, headers={FORWARDED: str(self.host_info)}) as resp:
                body = await resp.read()
                return web.Response(status=resp.status, body=body,
                                    content_type="application/json")
        except (ClientError, TimeoutError) as exc:
            raise QueryError(503, f"the instance owning this key ({owner}) is unreachable "
                                  f"({_why(exc)}); retry when it is back, or once the group "
                                  "has moved its tasks") from None

    def _require_running_task(self, store: str, key: Any) -> None:
        """A key whose task is here but still restoring (or already leaving) is unavailable
        (503), not absent (404), as Kafka's InvalidStateStoreException says."""
        meta = self.app.query_metadata_for_key(store, key)
        metadata = self.app._metadata  # noqa: SLF001 - same runtime package
        thread = self.app._stream_thread  # noqa: SLF001
        if meta.partition < 0 or metadata is None or thread is None:
            return
        task = TaskId(metadata.store_sub[store], meta.partition)
        if task not in thread.tasks or task in thread.restoring:
            raise QueryError(503, f"store {store!r} of task {task} is not queryable here right "
                                  "now (restoring, or moving between instances); retry")

    def _answer_key(self, store: str, kind: str, key: Any, request: web.Request
                    ) -> web.Response:
        try:
            self._require_running_task(store, key)
            view = self.app.store(store)
            if kind == "kv":
                value = view.get(key)
                if value is None:
                    return _error(404, f"key {to_json(key)!r} not found in store {store!r}")
                return web.json_response({"key": to_json(key), "value": to_json(value)})
            time_from = _int_param(request, "from", 0)
            time_to = _int_param(request, "to", MAX_TIME)
            if kind == "window":
                size = self.app.topology.stores[store].window_size_ms or 0
                windows = [{"start": start, "end": start + size, "value": to_json(value)}
                           for start, value in view.fetch(key, time_from, time_to)]
            else:
                windows = [{"start": w.window.start, "end": w.window.end, "value": to_json(v)}
                           for w, v in view.find_sessions(key, time_from, time_to)]
            if not windows:
                return _error(404, f"key {to_json(key)!r} has no windows in store {store!r} "
                                   f"between {time_from} and {time_to}")
            return web.json_response({"key": to_json(key), "value": windows})
        except InvalidStateStoreError as exc:
            return _error(503, str(exc))

    async def _handle_range(self, request: web.Request) -> web.Response:
        return await self._gather(request, ranged=True)

    async def _handle_all(self, request: web.Request) -> web.Response:
        return await self._gather(request, ranged=False)

    async def _gather(self, request: web.Request, ranged: bool) -> web.Response:
        """This instance's entries, plus (unless forwarded) every other instance's."""
        store = request.match_info["store"]
        try:
            kind = self._store_kind(store)
            limit = _int_param(request, "limit", DEFAULT_LIMIT)
            if not 1 <= limit <= MAX_LIMIT:
                raise QueryError(400, f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
            entries = self._local_entries(store, kind, ranged, request, limit)
            complete = len(entries) <= limit
            entries = entries[:limit]
            if not request.headers.get(FORWARDED) and store not in self.app.topology.global_stores:
                others = [m.host_info for m in self.app.streams_metadata_for_store(store)
                          if m.host_info != self.host_info]
                for reply in await asyncio.gather(*(self._ask(h, request) for h in others)):
                    entries.extend(reply["entries"])
                    complete = complete and reply["complete"]
                if len(entries) > limit:
                    entries, complete = entries[:limit], False
            return web.json_response({"store": store, "entries": entries, "complete": complete})
        except QueryError as exc:
            return _error(exc.status, str(exc))
        except InvalidStateStoreError as exc:
            return _error(503, str(exc))

    def _local_entries(self, store: str, kind: str, ranged: bool, request: web.Request,
                       limit: int) -> list[dict[str, Any]]:
        view = self.app.store(store)
        rows: Iterable[tuple[Any, Any]]
        if kind == "kv":
            if ranged:
                serde = self._key_serde(store)
                lo, hi = request.query.get("from"), request.query.get("to")
                rows = view.range(None if lo is None else parse_key(serde, lo),
                                  None if hi is None else parse_key(serde, hi))
            else:
                rows = view.all()
        elif kind in ("window", "session"):
            if ranged:
                raise QueryError(400, f"store {store!r} is a {kind} store: use /all, or "
                                      "/keys/{key}?from=&to=")
            rows = view.fetch_all(0, MAX_TIME) if kind == "window" else view.all()
        else:
            raise QueryError(400, f"store {store!r} ({kind}) cannot be queried")
        result = []
        for key, value in rows:
            result.append({"key": to_json(key), "value": to_json(value)})
            if len(result) > limit:  # one more than asked: tells whether there is more
                break
        return result

    async def _ask(self, host: HostInfo, request: web.Request) -> dict[str, Any]:
        assert self._session is not None
        url = f"http://{host}{request.rel_url}"
        try:
            async with self._session.get(url, headers={FORWARDED: str(self.host_info)}) as resp:
                body = await resp.json(content_type=None)
                if resp.status != 200:
                    raise QueryError(resp.status if resp.status >= 500 else 502,
                                     f"instance {host}: {body.get('error', resp.status)}")
                return body  # type: ignore[no-any-return]
        except (ClientError, TimeoutError, ValueError) as exc:
            raise QueryError(503, f"instance {host} is unreachable ({_why(exc)}); retry when "
                                  "it is back, or once the group has moved its tasks") from None


def _why(exc: BaseException) -> str:
    """Why a forwarded request failed, in words (not aiohttp's connection-key repr)."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {FORWARD_TIMEOUT_S:g} s"
    cause = getattr(exc, "os_error", None) or exc.__cause__
    if isinstance(cause, OSError) and (cause.errno or cause.strerror):
        return (os.strerror(cause.errno) if cause.errno else str(cause.strerror)).lower()
    if isinstance(exc, ValueError):
        return "its answer was not JSON"
    return type(exc).__name__


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every answer is JSON: unknown paths (404) and failures (500) too."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, f"{exc.reason}: {request.method} {request.path}")
    except Exception as exc:
        log.exception("query %s failed", request.rel_url)
        return _error(500, f"the query failed: {exc!r}")


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)
