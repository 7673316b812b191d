"""The broker process: an asyncio server speaking the Kafka protocol over TCP.

Each connection reads frames in a loop and starts one task per request; a writer sends the
answers strictly in request order. Pipelined produce requests therefore overlap their fsync waits
(group commit), while clients still see Kafka's in-order responses. A fetch answers with a
``Frame`` whose record sets are ranges of segment files: the writer sends those with sendfile(2),
as Kafka does (FileChannel.transferTo), so records never pass through Python.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from ..metrics.broker import BrokerMetrics
from . import handlers
from .config import BrokerConfig
from .groups.coordinator import GroupCoordinator
from .maintenance import FailureLog, cleaner_loop, retention_loop
from .producers import ProducerIdAllocator
from .protocol import (
    API_VERSIONS_KEY,
    ProtocolError,
    RequestContext,
    decode_body,
    encode_api_versions_error,
    encode_response,
    parse_header,
)
from .security import BrokerSecurity, Listener, Session
from .storage.files import FILES
from .storage.slices import FileSlice, Frame
from .topics import TopicManager
from .transactions.coordinator import TransactionCoordinator

log = logging.getLogger("streams.broker")

_SIZE = struct.Struct(">i")
MAX_IN_FLIGHT_PER_CONNECTION = 64
READ_BYTES = 1 << 20  # at most this much taken from the socket's buffer per read
ACCEPT_QUIET_S = 60.0
# A handler's answer when it failed (already logged): the sender closes the connection.
FAILED = bytearray()


class Broker:
    """A single-node Kafka-protocol broker. ``await start()``, then ``await stop()``."""

    def __init__(self, config: BrokerConfig | None = None) -> None:
        handlers.load_all()
        self.config = config or BrokerConfig()
        # What the broker started with; dynamic broker configs (AlterConfigs) change
        # self.config, and deleting one goes back to this.
        self.static_config = self.config.model_copy()
        self.dynamic_configs: set[str] = set()
        FILES.capacity = self.config.log_max_open_files
        self.topics = TopicManager(self.config)
        self.producer_ids = ProducerIdAllocator()
        self.groups = GroupCoordinator(self)
        self.transactions = TransactionCoordinator(self)
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._requests: set[asyncio.Task[bytes | Frame | None]] = set()  # handlers running
        self._background: list[asyncio.Task[None]] = []
        self.maintenance_failures = FailureLog()
        self._accept_failed_at = -ACCEPT_QUIET_S  # loop time of the last EMFILE report
        self._previous_exception_handler: Any = None
        self.port = self.config.port
        # Counters bumped per request, everything else computed when /metrics is scraped.
        self.metrics = BrokerMetrics(self, self.config.metrics_listener)
        self.security = BrokerSecurity(self.config)  # raises ListenerError on a bad setting
        self._servers: list[asyncio.Server] = []
        # Listener name -> the port it is bound to (the configured one, or the kernel's for 0).
        self.listener_ports: dict[str, int] = {}

    @property
    def advertised_host(self) -> str:
        return self.config.advertised_host or self.config.host

    def advertised(self, ctx: RequestContext) -> tuple[str, int]:
        """The host and port clients on ctx's listener are told to connect to."""
        session = getattr(ctx, "session", None)
        listeners = self.security.listeners
        listener = next((item for item in listeners
                         if session is not None and item.name == session.listener), listeners[0])
        if self.config.listeners is None:
            return self.advertised_host, self.port
        port = listener.advertised_port
        if port == 0 or port == listener.port:  # not advertised apart: the bound port
            port = self.listener_ports.get(listener.name, port)
        # An empty host binds every interface; Kafka then advertises the machine's name.
        return listener.advertised_host or socket.gethostname(), port

    @property
    def node_id(self) -> int:
        return self.config.node_id

    async def start(self) -> None:
        self.topics.load()
        self.producer_ids.load(self.topics.data_dir)
        self.security.load()
        await self.groups.start()
        await self.transactions.start()
        self.spawn(retention_loop(self))
        self.spawn(cleaner_loop(self))
        await self.metrics.start()  # /health says DOWN until the listeners are up
        loop = asyncio.get_running_loop()
        self._previous_exception_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._on_loop_exception)
        for listener in self.security.listeners:
            server = await asyncio.start_server(
                functools.partial(self._on_connection, listener), listener.host or None,
                listener.port, limit=1 << 20, ssl=self.security.contexts.get(listener.name))
            self._servers.append(server)
            self.listener_ports[listener.name] = server.sockets[0].getsockname()[1]
            log.info("broker %d listening on %s://%s:%d", self.node_id, listener.name,
                     listener.host, self.listener_ports[listener.name])
        self._server = self._servers[0]
        self.port = self.listener_ports[self.security.listeners[0].name]
        log.info("broker %d data in %s", self.node_id, self.config.data_dir)

    async def stop(self) -> None:
        await self.metrics.stop()
        for server in self._servers[1:]:
            server.close()
        if self._server is not None:
            self._server.close()
        # Closing the transports ends each connection loop normally; cancelling the connection
        # tasks instead trips asyncio's stream callback on Python 3.11. Requests still running
        # (a Fetch or ShareFetch long-polling for MaxWaitMs, a write waiting for its fsync) are
        # cancelled: nobody can read their answers, and their connections would otherwise stay
        # until asyncio.run cancels them, tracebacks and all.
        for writer in list(self._connections.values()):
            writer.transport.abort()
        for request in list(self._requests):
            request.cancel()
        for task in self._background:
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=5)
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.groups.stop()
        for server in self._servers[1:]:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers = []
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        self.topics.close()
        asyncio.get_running_loop().set_exception_handler(self._previous_exception_handler)
        log.info("broker stopped")

    def _on_loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio's accept loop on EMFILE/ENFILE/ENOBUFS/ENOMEM stops accepting for a second
        and reports through this handler, with a traceback, every second. Say it once per
        episode instead (an episode ends after ACCEPT_QUIET_S without a report)."""
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            now = loop.time()
            quiet = now - self._accept_failed_at > ACCEPT_QUIET_S
            self._accept_failed_at = now
            if quiet:
                log.error("cannot accept connections: %s; retrying every second until the "
                          "broker or other processes free file descriptors",
                          context.get("exception"))
            return
        if self._previous_exception_handler is not None:
            self._previous_exception_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run a background job that stops with the broker."""
        task = asyncio.ensure_future(coro)
        self._background.append(task)
        task.add_done_callback(lambda t: t in self._background and self._background.remove(t))
        return task

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    # -- connections --------------------------------------------------------------------------

    async def _on_connection(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        peer = writer.get_extra_info("peername")
        try:
            session = self.security.new_session(listener, writer)
        except PermissionError as exc:  # no ssl.principal.mapping.rules rule matched
            log.warning("closing connection from %s: %s", peer, exc)
            self._connections.pop(task, None)
            writer.close()
            return
        client_host = f"/{peer[0]}" if isinstance(peer, tuple) else ""
        responses: asyncio.Queue[asyncio.Task[bytes | Frame | None] | None] = asyncio.Queue(
            MAX_IN_FLIGHT_PER_CONNECTION
        )
        in_flight: set[asyncio.Task[bytes | Frame | None]] = set()
        sender = asyncio.ensure_future(self._send_responses(responses, writer, peer))
        frames = _read_frames(reader, peer, self.config.socket_request_max_bytes, session,
                              self.config.sasl_server_max_receive_size)
        try:
            async for frame in frames:
                if sender.done():
                    break
                try:
                    request_task = self._dispatch(frame, client_host, peer, session)
                except ProtocolError as exc:
                    log.warning("closing connection from %s: %s", peer, exc)
                    break
                in_flight.add(request_task)
                request_task.add_done_callback(in_flight.discard)
                self._requests.add(request_task)
                request_task.add_done_callback(self._requests.discard)
                await responses.put(request_task)
                if session.close_after_response:  # failed SASL: answer, then close
                    break
            # Let the answers already under way go out, then stop the sender.
            await responses.put(None)
            await sender
            if session.close_after_response:  # slows password guessing, as Kafka does
                await asyncio.sleep(self.config.connection_failed_authentication_delay_ms / 1000)
        finally:
            await frames.aclose()
            for pending in (*in_flight, sender):
                pending.cancel()
            _release_unsent(responses)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._connections.pop(task, None)

    def _dispatch(self, frame: bytes, client_host: str, peer: Any, session: Session | None = None
                  ) -> asyncio.Task[bytes | Frame | None]:
        ctx, pos = parse_header(frame)
        ctx.client_host = client_host
        ctx.session = session
        spec = handlers.REGISTRY.get(ctx.api_key)
        if spec is None or not spec.min_version <= ctx.api_version <= spec.max_version:
            if ctx.api_key == API_VERSIONS_KEY:
                data = encode_api_versions_error(
                    ctx.correlation_id, handlers.supported_versions()
                )
                return asyncio.ensure_future(_ready(data))
            raise ProtocolError(
                f"unsupported api_key={ctx.api_key} version={ctx.api_version} "
                f"(client {ctx.client_id!r})"
            )
        if session is not None and not session.authenticated:
            answer = self.security.before_authentication(session, ctx, frame, pos)
            if answer is not None:
                return asyncio.ensure_future(_ready(answer))
        body = decode_body(ctx, frame, pos)
        return asyncio.ensure_future(self._handle(spec.func, ctx, body, peer))

    async def _handle(self, func: handlers.Handler, ctx: RequestContext, body: Any,
                      peer: Any) -> bytes | Frame | None:
        started = time.perf_counter()
        try:
            result: Any = await func(self, ctx, body)
            self.metrics.request_done(ctx.api_key, time.perf_counter() - started)
            if result is None or type(result) is Frame:
                return result
            return encode_response(ctx, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Kafka closes the connection of a request it cannot process; the log gets one line
            # (the traceback only at DEBUG, for whoever chases a broker bug).
            log.error("closing connection from %s: api_key=%d v%d (client %r) failed: %s: %s",
                      peer, ctx.api_key, ctx.api_version, ctx.client_id, type(exc).__name__, exc)
            log.debug("traceback of the failed request", exc_info=True)
            self.metrics.request_done(ctx.api_key, time.perf_counter() - started, failed=True)
            return FAILED

    async def _send_responses(
        self,
        responses: asyncio.Queue[asyncio.Task[bytes | Frame | None] | None],
        writer: asyncio.StreamWriter,
        peer: Any,
    ) -> None:
        broken = False
        transport = writer.transport
        sock = writer.get_extra_info("socket")
        # sendfile(2) writes plain TCP only; over TLS the file slices are read and written.
        sock_fd = sock.fileno() if sock is not None and \
            writer.get_extra_info("sslcontext") is None else -1
        waiting: list[asyncio.Task[bytes | Frame | None] | None] = []  # taken, not sent yet
        while True:
            task = waiting.pop() if waiting else await responses.get()
            if task is None:
                return
            await asyncio.wait([task])  # a cancelled request does not cancel the sender
            if task.cancelled():  # the broker is stopping: nothing more goes out
                return
            data = task.result()
            if data is FAILED:
                broken = True
                writer.close()
                continue
            if data is None:
                continue
            if broken:
                if type(data) is Frame:
                    data.release()
                continue
            try:
                if type(data) is Frame:
                    await _write_frame(transport, sock_fd, data)
                else:
                    # Answers already done behind this one (a group commit finishes many
                    # produce requests at once) go out in the same write: one send(2).
                    chunks = [data]
                    while not responses.empty():
                        following = responses.get_nowait()
                        done = _done_bytes(following)
                        if done is None:
                            waiting.append(following)
                            break
                        if done:
                            chunks.append(done)
                    transport.write(data if len(chunks) == 1 else b"".join(chunks))
                if transport.get_write_buffer_size() > (1 << 22):
                    await writer.drain()
            except (ConnectionError, RuntimeError, OSError) as exc:
                # RuntimeError: loop.sendfile on a transport that is closing.
                if not isinstance(exc, ConnectionError) and not transport.is_closing():
                    log.warning("closing connection from %s: writing a response failed: %s",
                                peer, exc)
                    transport.abort()
                broken = True


def _done_bytes(task: asyncio.Task[bytes | Frame | None] | None) -> bytes | None:
    """The encoded answer of a finished request (b"" for no answer, acks=0); None when it
    is not plain finished bytes (still running, failed, a Frame, the end marker)."""
    if task is None or not task.done() or task.cancelled() or task.exception() is not None:
        return None
    result = task.result()
    if result is None:
        return b""
    return result if type(result) is bytes else None


async def _read_frames(reader: asyncio.StreamReader, peer: Any, max_size: int,
                       session: Session | None = None, unauthenticated_max: int = 524288
                       ) -> AsyncIterator[bytes]:
    """Request frames (without their size prefix) as they arrive. One read takes every
    request already received, so pipelined requests cost one call and no per-request buffer
    shuffling; a frame that is not all there yet is completed with readexactly. Until a SASL
    connection has authenticated, frames are limited to `sasl.server.max.receive.size`, so a
    stranger cannot make the broker allocate a 100 MB request (as Kafka)."""
    buf = b""
    while True:
        try:
            chunk = await reader.read(READ_BYTES)
        except ConnectionError:
            return
        if not chunk:
            if buf:
                log.warning("connection from %s closed inside a size prefix (%d of 4 bytes)",
                            peer, len(buf))
            return
        buf = buf + chunk if buf else chunk
        pos, end = 0, len(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            limit = max_size if session is None or session.authenticated \
                else unauthenticated_max
            if size < 8 or size > limit:
                log.warning("closing connection from %s: request size %d outside [8, %d]",
                            peer, size, limit)
                return
            start = pos + 4
            if end - start >= size:
                pos = start + size
                yield buf[start:pos]
                continue
            try:
                rest = await reader.readexactly(size - (end - start))
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                got = end - start + (len(exc.partial) if isinstance(
                    exc, asyncio.IncompleteReadError) else 0)
                log.warning("connection from %s closed inside a %d-byte request (%s after "
                            "%d bytes)", peer, size, type(exc).__name__, got)
                return
            pos = end
            yield buf[start:] + rest
        buf = buf[pos:]


async def _write_frame(transport: asyncio.WriteTransport, sock_fd: int, frame: Frame) -> None:
    """Write a frame's bytes and file slices in order, then unpin its files."""
    try:
        for part in frame.parts:
            if type(part) is not FileSlice:
                transport.write(part)
            elif sock_fd < 0:
                data = os.pread(part.fd, part.size, part.position)
                if len(data) != part.size:
                    raise OSError(f"segment file ended {part.size - len(data)} bytes early")
                transport.write(data)
            else:
                await _sendfile(transport, sock_fd, part)
    finally:
        frame.release()


async def _sendfile(transport: asyncio.WriteTransport, sock_fd: int, part: FileSlice) -> None:
    """sendfile(2) straight away while the socket takes it (the transport holds nothing
    unsent, so the order is kept); loop.sendfile waits for room for the rest."""
    offset, left = part.position, part.size
    if transport.get_write_buffer_size() == 0:
        while left:
            try:
                sent = os.sendfile(sock_fd, part.fd, offset, left)
            except (BlockingIOError, InterruptedError):
                break
            if sent == 0:
                raise OSError(f"segment file ended {left} bytes early")
            offset += sent
            left -= sent
    if left:
        loop = asyncio.get_running_loop()
        sent = await loop.sendfile(transport, _Descriptor(part.fd), offset, left,  # type: ignore[arg-type]
                                   fallback=False)
        if sent != left:
            raise OSError(f"segment file ended {left - sent} bytes early")


class _Descriptor:
    """The file object loop.sendfile wants, around a pinned descriptor it must not close.
    (asyncio moves the descriptor's file position when done; the log only uses pread/pwrite.)"""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


def _release_unsent(responses: asyncio.Queue[asyncio.Task[bytes | Frame | None] | None]
                    ) -> None:
    """Unpin the files of answers the connection closed before sending."""
    while not responses.empty():
        task = responses.get_nowait()
        if task is not None and task.done() and not task.cancelled() \
                and task.exception() is None and type(task.result()) is Frame:
            task.result().release()  # type: ignore[union-attr]


async def _ready(data: bytes) -> bytes:
    return data
