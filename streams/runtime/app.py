"""``KafkaStreams``: runs a topology against a Kafka cluster (or the bundled broker).

``start()`` runs the stream thread's asyncio loop in a background thread; ``async run()`` runs
it in the caller's loop. ``store(name)`` gives a read-only view over this instance's tasks'
stores (interactive queries). States follow Kafka Streams' ``KafkaStreams.State``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from ..metrics.registry import MetricName, MetricsRegistry, RecordingLevel
from ..serde import InternalSerde, Serde
from ..topology.topology import Topology
from .assignor import AssignmentInfo
from .config import StreamsConfig
from .queries import (
    HostInfo,
    KeyQueryMetadata,
    ReadOnlyStoreView,
    StreamsMetadata,
    StreamsMetadataState,
    TaskMetadata,
    ThreadMetadata,
)
from .thread import StreamThread, ThreadHost
from .topics import MissingSourceTopicError

log = logging.getLogger(__name__)

# Failures whose message says all a user needs (a missing topic, an unreachable broker): logged
# as one line; their traceback only at DEBUG.
_SELF_EXPLAINING = (MissingSourceTopicError, KafkaConnectionError)


class State(enum.Enum):
    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    PENDING_ERROR = "PENDING_ERROR"
    ERROR = "ERROR"


class IllegalStateError(RuntimeError):
    """Called in the wrong state (e.g. start() twice)."""


class StreamThreadExceptionResponse(enum.Enum):
    """What an uncaught-exception handler answers (Kafka's
    ``StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse``, KIP-671)."""

    REPLACE_THREAD = "REPLACE_THREAD"  # a new stream thread takes over; the client keeps going
    SHUTDOWN_CLIENT = "SHUTDOWN_CLIENT"  # this instance stops, in ERROR
    SHUTDOWN_APPLICATION = "SHUTDOWN_APPLICATION"  # every instance of the application stops


class ApplicationShutdownRequested(RuntimeError):
    """Another instance's handler answered SHUTDOWN_APPLICATION: this one stops too."""


class KafkaStreams:
    def __init__(self, topology: Topology, config: Mapping[str, Any] | StreamsConfig) -> None:
        self.topology = topology
        self.config = (config if isinstance(config, StreamsConfig)
                       else StreamsConfig.from_mapping(dict(config)))
        topology.check_key_serdes(self.config.default_key_serde)  # joins' repartition keys
        self._state = State.CREATED
        self._state_lock = threading.Condition()
        self._listener: Callable[[State, State], None] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stream_thread: StreamThread | None = None
        self.error: BaseException | None = None
        # Kafka Streams' metrics, read when scraped or asked (metrics()); the HTTP endpoint
        # runs on the stream thread's loop while metrics.listener is set.
        self.metrics_registry = MetricsRegistry(
            "kafka.streams", RecordingLevel.parse(self.config.metrics_recording_level))
        self._metadata: StreamsMetadataState | None = None  # host map of the last assignment
        self._uncaught_handler: Callable[[BaseException], Any] | None = None
        self._shutdown_requested = False  # SHUTDOWN_APPLICATION: told to the group when joining
        self._shutdown_by_group = False  # the group told us to shut down
        self.thread_replacements = 0
        self._query_server: Any = None  # query_server.QueryServer while running
        # Kafka's StateRestoreListener and StandbyUpdateListener (see set_*_listener)
        self.restore_listener: Any = None
        self.standby_listener: Any = None

    # -- state --------------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    def set_state_listener(self, listener: Callable[[State, State], None]) -> None:
        self._listener = listener

    def set_global_state_restore_listener(self, listener: Any) -> None:
        """Kafka's ``StateRestoreListener`` for every active task's restoration: an object
        with any of ``on_restore_start(topic_partition, store_name, start_offset,
        end_offset)``, ``on_batch_restored(topic_partition, store_name, batch_end_offset,
        num_restored)`` and ``on_restore_end(topic_partition, store_name, total_restored)``.
        Called on the stream thread: keep them short. Only before ``start()``."""
        self._before_start("set_global_state_restore_listener")
        self.restore_listener = listener

    def set_standby_update_listener(self, listener: Any) -> None:
        """Kafka's ``StandbyUpdateListener`` for standby tasks (``num.standby.replicas``):
        ``on_update_start(topic_partition, store_name, starting_offset)``,
        ``on_batch_loaded(topic_partition, store_name, task_id, batch_end_offset,
        batch_size, current_end_offset)`` and ``on_update_suspended(topic_partition,
        store_name, store_offset, current_end_offset, reason)`` with reason ``"MIGRATED"``
        or ``"PROMOTED"``. Only before ``start()``."""
        self._before_start("set_standby_update_listener")
        self.standby_listener = listener

    def _thread_host(self) -> ThreadHost:
        """The settings and callbacks a stream thread gets (it never sees this object)."""
        return ThreadHost(self.config, self.topology, self.metrics_registry, self._set_state,
                          self._on_assignment_info, lambda: self._shutdown_requested,
                          self.restore_listener, self.standby_listener)

    def _before_start(self, what: str) -> None:
        if self._state is not State.CREATED:
            raise RuntimeError(f"{what} can only be called before start() "
                               f"(the client is {self._state.value})")

    def _set_state(self, name: str | State) -> None:
        new = State(name) if isinstance(name, str) else name
        with self._state_lock:
            old = self._state
            if old == new or (old in (State.PENDING_SHUTDOWN, State.NOT_RUNNING, State.ERROR)
                              and new in (State.REBALANCING, State.RUNNING)):
                return
            self._state = new
            self._state_lock.notify_all()
        log.info("state %s -> %s", old.value, new.value)
        if self._listener is not None:
            try:
                self._listener(new, old)
            except Exception:
                log.exception("state listener failed")

    def wait_for_state(self, *states: State | str, timeout: float | None = None) -> bool:
        """Block until the instance reaches one of ``states`` (test and CLI convenience)."""
        wanted = {State(s) if isinstance(s, str) else s for s in states}
        with self._state_lock:
            return self._state_lock.wait_for(lambda: self._state in wanted, timeout)

    # -- running ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._state is not State.CREATED:
            raise IllegalStateError(f"cannot start: state is {self._state.value}")
        self._set_state(State.REBALANCING)
        self._thread = threading.Thread(target=self._thread_main, daemon=True,
                                        name=f"{self.config.application_id}-StreamThread-1")
        self._thread.start()

    def _thread_main(self) -> None:
        with contextlib.suppress(BaseException):  # already logged and recorded by _run
            asyncio.run(self._run())

    async def run(self) -> None:
        """Run in the current event loop until ``close()``; raises if processing fails."""
        if self._state is State.CREATED:
            self._set_state(State.REBALANCING)
        await self._run()

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._state in (State.PENDING_SHUTDOWN, State.NOT_RUNNING):
            self._stop.set()
        self._stream_thread = StreamThread(self._thread_host())
        try:
            if self.config.application_server:
                from .query_server import QueryServer  # aiohttp only when serving
                self._query_server = await asyncio.to_thread(
                    QueryServer(self, self.config.application_server).start)
            await self._serving_metrics(self._run_stream_threads())
        except BaseException as exc:
            self.error = exc
            if isinstance(exc, asyncio.CancelledError):
                log.error("stream thread cancelled", exc_info=exc)
            else:
                explained = isinstance(exc, _SELF_EXPLAINING) and not log.isEnabledFor(
                    logging.DEBUG)
                log.error("stream thread failed: %s", exc, exc_info=None if explained else exc)
            self._set_state(State.PENDING_ERROR)
            self._set_state(State.ERROR)
            raise
        finally:
            if self._query_server is not None:
                await asyncio.to_thread(self._query_server.stop)
                self._query_server = None
        self._set_state(State.NOT_RUNNING)

    async def _run_stream_threads(self) -> None:
        """Run the stream thread; when it fails, ask the uncaught-exception handler what to do
        (KIP-671): replace the thread, stop this client, or stop the whole application."""
        assert self._stop is not None
        while True:
            thread = self._stream_thread
            assert thread is not None
            try:
                await thread.run(self._stop)
            except Exception as exc:
                if self._stop.is_set() and not self._shutdown_requested:
                    raise
                response = self._uncaught_response(exc)
                if response is StreamThreadExceptionResponse.REPLACE_THREAD:
                    self.thread_replacements += 1
                    log.error("stream thread failed (%r); replacing it (REPLACE_THREAD)", exc,
                              exc_info=exc)
                    self._stream_thread = StreamThread(self._thread_host())
                    self._register_replacement_metrics()
                    continue
                if response is StreamThreadExceptionResponse.SHUTDOWN_APPLICATION:
                    await self._request_application_shutdown(exc)
                raise
            if self._shutdown_by_group:
                raise ApplicationShutdownRequested(
                    "another instance of the application requested its shutdown "
                    "(SHUTDOWN_APPLICATION)")
            return

    def _uncaught_response(self, exc: BaseException) -> StreamThreadExceptionResponse:
        handler = self._uncaught_handler
        if handler is None:  # Kafka's default: the client shuts down
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
        try:
            response = handler(exc)
        except Exception:
            log.exception("the uncaught exception handler failed; shutting the client down")
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
        if not isinstance(response, StreamThreadExceptionResponse):
            try:
                response = StreamThreadExceptionResponse(str(getattr(response, "name",
                                                                     response)))
            except ValueError:
                log.error("the uncaught exception handler returned %r, not a "
                          "StreamThreadExceptionResponse; shutting the client down", response)
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
        return response

    def _register_replacement_metrics(self) -> None:
        """The new thread's metrics under a new thread id, as Kafka names replacements; the
        failed thread's are removed."""
        app_id = self.config.application_id
        replaced = self.thread_replacements
        old = (self._thread.name if replaced == 1 and self._thread is not None
               else f"{app_id}-StreamThread-{replaced}")
        try:
            from ..metrics.streams_app import register_streams_metrics
            self.metrics_registry.remove_tagged(**{"thread-id": old})
            register_streams_metrics(self.metrics_registry, self._stream_thread,
                                     f"{app_id}-StreamThread-{replaced + 1}")
        except Exception:  # metrics never stop processing
            log.warning("could not register the replacement thread's metrics", exc_info=True)

    async def _request_application_shutdown(self, cause: BaseException) -> None:
        """SHUTDOWN_APPLICATION: rejoin the group once, asking for the shutdown in the
        subscription; the assignor answers every member with a shutdown error (as Kafka's
        AssignmentInfo error code), and each instance stops in ERROR."""
        log.error("stream thread failed (%r); asking every instance of the application to "
                  "shut down (SHUTDOWN_APPLICATION)", cause)
        assert self._stop is not None
        self._shutdown_requested = True
        self._stop.clear()
        self._stream_thread = StreamThread(self._thread_host())
        try:
            await asyncio.wait_for(self._stream_thread.run(self._stop),
                                   self.config.session_timeout_ms / 1000 + 30)
        except Exception as exc:  # the request is best effort: this instance stops anyway
            log.warning("could not tell the group to shut down: %r", exc)

    def _on_shutdown_requested(self) -> None:
        """The assignment carried the application-shutdown error: stop, ending in ERROR."""
        self._shutdown_by_group = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            loop.call_soon_threadsafe(stop.set)

    def set_uncaught_exception_handler(
            self, handler: Callable[[BaseException], StreamThreadExceptionResponse]) -> None:
        """What to do when the stream thread fails (before ``start()``): the handler gets
        the exception and returns a ``StreamThreadExceptionResponse``. Without one the
        client shuts down (ERROR), as Kafka's default does."""
        if self._state is not State.CREATED:
            raise IllegalStateError("set_uncaught_exception_handler() must be called before "
                                    f"start(); the instance is {self._state.value}")
        if not callable(handler):
            raise TypeError(f"the uncaught exception handler must be callable, got {handler!r}")
        self._uncaught_handler = handler

    async def _serving_metrics(self, running: Any) -> None:
        """Await ``running`` with the thread's metrics registered and, if metrics.listener
        is set, /metrics and /health served on this loop."""
        from ..metrics.logs import install_client_log_filter
        from ..metrics.streams_app import register_streams_metrics

        install_client_log_filter()  # aiokafka's per-attempt errors during an outage
        thread = self._stream_thread
        assert thread is not None
        name = self._thread.name if self._thread is not None else \
            f"{self.config.application_id}-StreamThread-1"
        register_streams_metrics(self.metrics_registry, thread, name, lambda: self._state.value)
        server = None
        if self.config.metrics_listener:
            from ..metrics.http import MetricsServer

            server = MetricsServer(self.config.metrics_listener, self.metrics_registry,
                                   self._health)
            try:
                await server.start()
            except BaseException:
                running.close()
                raise
            self.metrics_url = server.url
        try:
            await running
        finally:
            if server is not None:
                await server.stop()

    def _health(self) -> tuple[bool, dict[str, Any]]:
        state = self._state
        return state is State.RUNNING, {
            "status": "UP" if state is State.RUNNING else "DOWN", "state": state.value,
            "application.id": self.config.application_id,
            "tasks": self.local_task_ids()}

    def metrics(self) -> dict[MetricName, float]:
        """Every metric of this instance now, keyed like Kafka's ``MetricName`` (group,
        name, tags): the values ``/metrics`` exports. Read on the stream thread's loop."""
        loop = self._loop
        if loop is not None and loop.is_running():
            try:
                on_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                on_loop = False
            if not on_loop:
                async def read() -> dict[MetricName, float]:
                    return self.metrics_registry.metrics()

                with contextlib.suppress(RuntimeError):
                    return asyncio.run_coroutine_threadsafe(read(), loop).result(10)
        return self.metrics_registry.metrics()

    def close(self, timeout: float | None = None) -> bool:
        """Stop processing (commit, checkpoint, leave the group); True if it stopped in time."""
        if self._state is State.CREATED:
            self._set_state(State.NOT_RUNNING)
            return True
        if self._state not in (State.NOT_RUNNING, State.ERROR):
            self._set_state(State.PENDING_SHUTDOWN)
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop just closed
                loop.call_soon_threadsafe(stop.set)
        thread = self._thread
        if thread is None:
            return True
        if thread is threading.current_thread():
            return False
        thread.join(timeout)
        return not thread.is_alive()

    def clean_up(self) -> None:
        """Delete this instance's local state for the application id (every task directory
        and checkpoint under ``state.dir/application.id``), as Kafka's ``cleanUp()``: only
        before ``start()`` or after ``close()``. The next start restores from the changelogs
        (or, after an application reset, recomputes from the input)."""
        if self._state not in (State.CREATED, State.NOT_RUNNING, State.ERROR):
            raise IllegalStateError(f"cannot clean up while the instance is {self._state.value}; "
                                    "call close() first")
        thread = self._thread
        if thread is not None and thread.is_alive():
            raise IllegalStateError("cannot clean up: the stream thread is still stopping")
        from .reset import clean_local_state
        clean_local_state(self.config.app_state_dir)

    # -- interactive queries ------------------------------------------------------------------

    def store(self, name: str) -> ReadOnlyStoreView:
        if name not in self.topology.stores and name not in self.topology.global_stores:
            raise KeyError(f"no state store named {name!r} in this topology")
        return ReadOnlyStoreView(name, self)

    def local_task_ids(self) -> list[str]:
        """Active tasks of this instance (like ``metadataForLocalThreads()``' task ids)."""
        thread = self._stream_thread
        return sorted(str(t) for t in list(thread.tasks)) if thread is not None else []

    def metadata_for_local_threads(self) -> list[ThreadMetadata]:
        """This instance's stream thread with its active and standby tasks (Kafka's
        ``metadataForLocalThreads()``); empty before ``start()``."""
        thread = self._stream_thread
        if thread is None:
            return []
        gen = thread.gen
        manager = gen.tasks if gen is not None else None
        consumer = gen.consumer if gen is not None else None

        def describe(task_id: Any, active: bool) -> TaskMetadata:
            parts = manager.partitions.get(task_id, []) if manager is not None and active \
                else []
            tps = frozenset(TopicPartition(t, p) for t, p in parts)
            done = dict(manager.committed) if manager is not None and active else {}
            committed = {tp: done[(tp.topic, tp.partition)] for tp in tps
                         if (tp.topic, tp.partition) in done}
            ends = {tp: end for tp in tps
                    if consumer is not None and (end := consumer.highwater(tp)) is not None}
            return TaskMetadata(str(task_id), tps, committed, ends)

        active = tuple(describe(t, True) for t in sorted(thread.tasks))
        standby = tuple(describe(t, False) for t in sorted(getattr(manager, "standbys", {})))
        name = self._thread.name if self._thread is not None else \
            f"{self.config.application_id}-StreamThread-1"
        return [ThreadMetadata(name, self._state.value, active, standby)]

    def local_stores(self, name: str) -> list[Any]:
        thread = self._stream_thread
        if thread is None:
            return []
        if thread.globals is not None and name in thread.globals.stores:
            return [thread.globals.stores[name]]
        # dict(): one C-level copy the stream thread cannot interrupt (interactive queries)
        return [task.stores[name] for task_id, task in dict(thread.tasks).items()
                if name in task.stores and task_id not in thread.restoring]

    # -- queries across instances (KIP-67) ----------------------------------------------------

    def _on_assignment_info(self, info: AssignmentInfo) -> None:
        """Called by the assignor with every new assignment's host map."""
        if info.shutdown:
            self._on_shutdown_requested()
        thread = self._stream_thread
        if thread is None or thread.layout is None:
            return
        self._metadata = StreamsMetadataState(
            info, thread.layout, self.topology, self.config.default_key_serde or InternalSerde())

    def _local_host(self) -> HostInfo | None:
        server = self.config.application_server
        return HostInfo.parse(server) if server else None

    def query_metadata_for_key(self, store_name: str, key: Any,
                               key_serializer: Serde[Any] | Callable[[Any], bytes] | None = None,
                               *, partitioner: Callable[[str, Any, Any, int], int | None]
                               | None = None) -> KeyQueryMetadata:
        """Which instance holds ``key`` in ``store_name`` (``KeyQueryMetadata.NOT_AVAILABLE``
        before the first assignment, or when no instance set ``application.server``). The key
        is serialized with ``key_serializer`` (a Serde or a function returning bytes), else
        with the store's key serde, and hashed as Kafka's default partitioner does; an input
        written with a custom partitioner passes it as ``partitioner(topic, key, value,
        partitions)`` (Kafka's ``StreamPartitioner``; value is None)."""
        self._check_store(store_name)
        metadata = self._metadata
        if metadata is None:
            return KeyQueryMetadata.NOT_AVAILABLE
        return metadata.key_query_metadata(store_name, key, self._local_host(), key_serializer,
                                           partitioner)

    def streams_metadata_for_store(self, store_name: str) -> list[StreamsMetadata]:
        """Every instance (with an ``application.server``) that holds part of the store."""
        self._check_store(store_name)
        metadata = self._metadata
        return metadata.metadata_for_store(store_name) if metadata is not None else []

    def metadata_for_all_streams_clients(self) -> list[StreamsMetadata]:
        """Every instance of this application that set ``application.server``."""
        metadata = self._metadata
        return metadata.all_metadata() if metadata is not None else []

    def _check_store(self, name: str) -> None:
        if name not in self.topology.stores and name not in self.topology.global_stores:
            raise KeyError(f"no state store named {name!r} in this topology")

    def __enter__(self) -> KafkaStreams:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
