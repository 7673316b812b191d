"""Exactly-once source connectors (KIP-618).

With ``exactly.once.source.support=enabled`` on the worker (distributed mode only, as Kafka),
every source task gets a transactional producer, ``transactional.id`` =
``${group.id}-${connector}-${task}``, and writes its records *and* their source offsets (to the
connector's offsets topic) in one transaction. A transaction ends per ``poll()`` batch, per
``transaction.boundary.interval.ms``, or where the task says through its
:class:`~connect.api.TransactionContext` (``transaction.boundary``). A crash leaves an open
transaction that the next ``InitProducerId`` of the same transactional id aborts, so readers with
``read_committed`` see every record once, and the task resumes from the offsets committed with
them.

Zombies: before a task of a new generation of task configs starts, the leader fences the
transactional ids of the previous generation (one ``InitProducerId`` each, which aborts their open
transactions and bumps their epoch) and writes the connector's task-count record
(``tasks-fencing-<connector>``) to the config topic, as Kafka's ``fenceZombies`` round. A task that
moves to another worker (a worker paused past its session timeout) keeps its transactional id, so
its new owner's ``InitProducerId`` fences the old owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConnectException,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTask,
    TransactionBoundary,
    TransactionContext,
)
from connect.config_def import ConfigException
from connect.runtime import clients
from connect.runtime.config import (
    EXACTLY_ONCE_SUPPORT,
    OFFSETS_TOPIC,
    TRANSACTION_BOUNDARY,
    TRANSACTION_BOUNDARY_INTERVAL,
)
from connect.runtime.config_writer import request_leader
from connect.runtime.offsets import offset_key
from connect.runtime.source_task import WorkerSourceTask, _client_overrides
from connect.runtime.status import TaskId
from streams.kafka import clients as kafka_clients

if TYPE_CHECKING:
    from connect.runtime.config import WorkerConfig
    from connect.runtime.errors import ErrorHandler

log = logging.getLogger("connect.exactly_once")

TASK_COUNT_PREFIX = "tasks-fencing-"  # Kafka's KafkaConfigBackingStore.TASK_COUNT_RECORD_PREFIX

# Records converted between two turns of the event loop while a transaction commits beside the
# conversion of the next poll. Each step of the commit (a produce answer read, the next batch
# handed to the producer, the next request written) waits for a turn, so with 64 records (about
# 0.7 ms) per turn the transaction's produce requests went out one per several milliseconds
# while the conversion ran. 16 keeps them moving, for some 60 more turns per 1,000 records.
CONVERT_CHUNK = 16

# DistributedHerder.validateSourceConnectorExactlyOnceSupport / ...TransactionBoundary messages.
NO_PREFLIGHT = (
    "The connector does not implement the API required for preflight validation of "
    "exactly-once source support. Please consult the documentation for the connector to "
    "determine whether it supports exactly-once semantics, and then consider reconfiguring the "
    "connector to use the value \"requested\" for this property (which will disable this "
    "preflight check and allow the connector to be created).")
UNSUPPORTED = "The connector does not support exactly-once semantics with the provided " \
              "configuration."
NO_BOUNDARIES = (
    "The connector does not support connector-defined transaction boundaries with the given "
    "configuration. Please reconfigure it to use a different transaction boundary definition.")


def transactional_id(group_id: str | None, connector: str, task: int) -> str:
    """Kafka's ``Worker.taskTransactionalId``: ``${group.id}-${connector}-${task}``."""
    return f"{group_id}-{connector}-{task}"


# -- validation ----------------------------------------------------------------------------------


def validation_errors(worker: WorkerConfig, connector: SourceConnector,
                      config: Mapping[str, Any], distributed: bool) -> list[tuple[str, str]]:
    """(key, message) for every KIP-618 setting this worker cannot honour with this connector."""
    problems: list[tuple[str, str]] = []
    enabled = distributed and worker.exactly_once_source_enabled
    support = str(config.get(EXACTLY_ONCE_SUPPORT) or "requested").strip().lower()
    boundary = str(config.get(TRANSACTION_BOUNDARY) or "poll").strip().lower()
    if not distributed and config.get(OFFSETS_TOPIC):
        problems.append((OFFSETS_TOPIC, "offsets.storage.topic applies only in distributed mode "
                         "(a standalone worker keeps offsets in offset.storage.file.filename)"))
    if not enabled:
        where = "the worker" if distributed else "a distributed worker (standalone mode does " \
                                                 "not support exactly-once source connectors)"
        if support == "required":
            problems.append((EXACTLY_ONCE_SUPPORT, "exactly.once.support=required needs "
                             f"exactly.once.source.support=enabled on {where}"))
        for key in (TRANSACTION_BOUNDARY, TRANSACTION_BOUNDARY_INTERVAL):
            if config.get(key) not in (None, ""):
                problems.append((key, f"{key} applies only with exactly.once.source.support="
                                      f"enabled on {where}"))
        return problems
    if config.get(TRANSACTION_BOUNDARY_INTERVAL) not in (None, "") and boundary != "interval":
        problems.append((TRANSACTION_BOUNDARY_INTERVAL, "transaction.boundary.interval.ms "
                         "applies only with transaction.boundary=interval"))
    if support == "required":
        try:
            answer = connector.exactly_once_support(dict(config))
        except Exception as exc:
            problems.append((EXACTLY_ONCE_SUPPORT, "An unexpected error occurred during "
                             f"validation: {exc}"))
        else:
            if answer is None:
                problems.append((EXACTLY_ONCE_SUPPORT, NO_PREFLIGHT))
            elif str(answer).upper() != ExactlyOnceSupport.SUPPORTED:
                problems.append((EXACTLY_ONCE_SUPPORT, UNSUPPORTED))
    if boundary == "connector":
        try:
            answer = connector.can_define_transaction_boundaries(dict(config))
        except Exception as exc:
            problems.append((TRANSACTION_BOUNDARY, "An unexpected error occurred during "
                             f"validation: {exc}"))
        else:
            if answer is not True and str(answer).upper() != \
                    ConnectorTransactionBoundaries.SUPPORTED:
                problems.append((TRANSACTION_BOUNDARY, NO_BOUNDARIES))
    return problems


def refuse_in_standalone(worker: WorkerConfig) -> str | None:
    """The one line a standalone worker gives for exactly-once settings it cannot honour."""
    if worker.exactly_once_source_support != "disabled":
        return (f"exactly.once.source.support={worker.exactly_once_source_support}: exactly-once "
                "source connectors need distributed mode (as in Kafka Connect); run "
                "'streams connect distributed' or remove the key")
    return None


# -- metrics -------------------------------------------------------------------------------------


class TransactionMetrics:
    """``transaction-size-{avg,min,max}`` of ``source-task-metrics`` (records per committed
    transaction), over Kafka's default metrics window (2 samples of 30 s)."""

    WINDOW_S = 60.0

    def __init__(self) -> None:
        self.size = 0
        self._sizes: deque[tuple[float, int]] = deque()

    def add_records(self, count: int) -> None:
        self.size += count

    def aborted(self) -> None:
        self.size = 0

    def committed(self) -> None:
        now = time.monotonic()
        self._sizes.append((now, self.size))
        self.size = 0
        while self._sizes and self._sizes[0][0] < now - self.WINDOW_S:
            self._sizes.popleft()

    def stats(self) -> tuple[float, int, int] | None:
        """(avg, min, max) of the window, None before the first commit in it."""
        now = time.monotonic()
        sizes = [size for at, size in list(self._sizes) if at >= now - self.WINDOW_S]
        if not sizes:
            return None
        return sum(sizes) / len(sizes), min(sizes), max(sizes)


# -- the task ------------------------------------------------------------------------------------


class ExactlyOnceWorkerSourceTask(WorkerSourceTask):
    """A source task whose records and offsets go to Kafka in the same transactions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.connector_config
        self.boundary = TransactionBoundary(
            str(config.get(TRANSACTION_BOUNDARY) or "poll").strip().lower())
        interval = config.get(TRANSACTION_BOUNDARY_INTERVAL)
        self.interval_s = (int(interval) if interval not in (None, "") else
                           self.env.worker.offset_flush_interval_ms) / 1000
        self.transactions = TransactionContext() \
            if self.boundary is TransactionBoundary.CONNECTOR else None
        self.transaction_metrics = TransactionMetrics()
        self.transactional_id = transactional_id(self.env.worker.group_id, self.id.connector,
                                                 self.id.task)
        self.in_transaction = False
        self.pending_offsets: dict[str, tuple[dict, dict | None]] = {}
        self._written: dict[str, dict | None] = {}  # offsets sent in the open transaction
        self._last_commit = time.monotonic()
        self._failed = False
        self._task_commit: asyncio.Future | None = None  # SourceTask.commit() still running

    # -- set-up --------------------------------------------------------------------------------
    async def _before_producer(self) -> None:
        fencing: Callable[[str], Awaitable[None]] | None = self.env.extra.get("fencing")
        if fencing is None:
            raise ConnectException("exactly-once source tasks need a distributed worker "
                                   "(no zombie fencing here)")
        await fencing(self.id.connector)
        self._check_generation()

    def _check_generation(self) -> None:
        """Kafka's pre- and post-producer checks: a task whose configs or assignment are
        outdated must not initialize (and so fence) the transactional id a newer task uses."""
        current: Callable[[TaskId], bool] | None = self.env.extra.get("current")
        if current is not None and not current(self.id):
            raise ConnectException(f"Task {self.id} belongs to an outdated generation of task "
                                   "configs or was reassigned; not starting its producer")

    async def _open_offsets(self, topic: str | None) -> None:
        self._check_generation()  # after InitProducerId, before anything is read or sent
        await super()._open_offsets(topic)

    def _make_producer(self) -> Any:
        overrides = _client_overrides(self, "producer")
        if str(overrides.get("enable.idempotence", "true")).lower() != "true":
            raise ConfigException("enable.idempotence=false cannot be used when "
                                  "exactly.once.source.support=enabled (transactions need it)")
        return clients.producer(self.env.worker.bootstrap_servers, overrides,
                                client_id=f"connector-producer-{self.id}",
                                enable_idempotence=True, transactional_id=self.transactional_id)

    def _transaction_context(self) -> TransactionContext | None:
        return self.transactions

    # The batches of a poll go to the producer (through the background sender, as at least
    # once) while the rest of it is converted, as Kafka's send() returns at once and its sender
    # thread writes a batch while the task converts the next records; a commit first waits
    # until the sender handed over everything (_handed_over), so it covers what was polled.
    hand_over_while_converting = True

    async def _handed_over(self) -> None:
        """Every batch of the open transaction is in the producer (not necessarily acked)."""
        if self.sender is not None:
            await self.sender.drained()

    async def _learn_topic(self, topic: str) -> None:
        if self.offsets is not None and topic == self.offsets.topic:
            # Kafka's rule: its own open transaction would block the task's next offset read.
            raise ConnectException("Source tasks may not produce to their own offsets topics "
                                   "when exactly-once support is enabled")
        await super()._learn_topic(topic)

    # -- the loop ------------------------------------------------------------------------------
    async def _loop(self, task: SourceTask, chain: Any, converters: Any,
                    errors: ErrorHandler) -> None:
        self._commit_record = task.commit_record \
            if type(task).commit_record is not SourceTask.commit_record else None
        # SourceTask.commit() does nothing unless the task overrides it: then it is not called,
        # so the next poll does not queue behind a call on the task's thread after every
        # transaction.
        self._task_commits = type(task).commit is not SourceTask.commit
        self._source_task = task
        self._last_commit = time.monotonic()
        self._prefetched: asyncio.Future | None = None
        # The next poll's records, converted into the collector while a commit ran (not yet
        # handed over: nothing of a transaction goes out before the one before it committed).
        converted: tuple[list, list | None, dict | None] | None = None
        try:
            while not self.stopping:
                await self.wait_resumed()
                if self.stopping:
                    break
                if converted is not None:
                    (records, placed, offsets), converted = converted, None
                    await self._send_in_transaction(records, chain, converters, errors, placed,
                                                    offsets)
                else:
                    records = await self.call(task.poll)
                    if records:
                        self.records_polled += len(records)
                        await self._dispatch(records, chain, converters, errors)
                    elif not self.stopping:
                        await asyncio.sleep(0.01)
                if self._commit_due():
                    if not self.stopping and not self.paused:
                        converted = await self._commit_and_convert_next(task, chain, converters,
                                                                        errors)
                    else:
                        await self._commit()
                else:
                    await self._batch_boundary()
        except BaseException:
            self._failed = True
            pending, self._task_commit = self._task_commit, None
            if pending is not None:  # its outcome no longer matters: the task ends failed
                pending.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise
        finally:
            if converted is not None:  # converted, never sent: read again after a restart
                self.collector.discard()
            prefetched, self._prefetched = self._prefetched, None
            if prefetched is not None:  # polled, never sent: read again after a restart
                # Let the poll return first: cancelling a plugin call that is still running
                # abandons the task's thread, and an abandoned task reports no FAILED status.
                # A poll stuck past the graceful timeout is given up on all the same.
                timeout = self.env.worker.task_shutdown_graceful_timeout_ms / 1000
                await asyncio.wait({prefetched}, timeout=timeout)
                prefetched.cancel()
                with contextlib.suppress(BaseException):
                    await prefetched

    async def _commit_and_convert_next(self, task: SourceTask, chain: Any, converters: Any,
                                       errors: ErrorHandler
                                       ) -> tuple[list, list | None, dict | None] | None:
        """Commit the open transaction while the task polls its next records on its thread
        and the loop converts them into batches (poll and interval boundaries). They are
        handed over only once the commit returned, into the next transaction: Kafka's
        producer, too, begins a transaction only after the last one's EndTxn was answered.
        Returns the next records, where they were placed and their source offsets; None if
        the poll had none. Records polled after the commit returned are returned unconverted
        (None, None): converting them whole before the next transaction begins would only
        delay its first batch, so they are sent batch by batch as a poll is."""
        self._prefetched = asyncio.ensure_future(self.call(task.poll))
        commit = asyncio.ensure_future(self._commit())
        try:
            records = await self._prefetched
            self._prefetched = None
            placed: list = []
            offsets: dict = {}
            if records and commit.done():
                await commit  # raises what a failed commit raised
                self.records_polled += len(records)
                return records, None, None
            if records:
                self.records_polled += len(records)
                placed, _ = await self._convert_all(records, chain, converters, errors,
                                                    early=False,
                                                    yield_every=CONVERT_CHUNK)
                offsets = self._offsets_of(records)
        except asyncio.CancelledError:
            commit.cancel()
            with contextlib.suppress(BaseException):
                await commit
            self.collector.discard()
            raise
        except BaseException:
            try:
                await commit  # the transaction before these records commits, as if polled after
            finally:
                self.collector.discard()
            raise
        try:
            await commit
        except BaseException:
            self.collector.discard()  # converted for a transaction that will not begin
            raise
        return (records, placed, offsets) if records else None

    def _commit_due(self) -> bool:
        """Whether a poll or interval boundary was reached (connector boundaries: never)."""
        if self.boundary is TransactionBoundary.POLL:
            return self.in_transaction or bool(self.pending_offsets)
        if self.boundary is TransactionBoundary.INTERVAL \
                and time.monotonic() >= self._last_commit + self.interval_s:
            self._last_commit = time.monotonic()
            return self.in_transaction or bool(self.pending_offsets)
        return False

    async def _dispatch(self, records: list, chain: Any, converters: Any,
                        errors: ErrorHandler) -> None:
        """Send a poll's records in the open transaction and note their offsets; commit or
        abort after a record the task named in its TransactionContext."""
        context = self.transactions
        if context is None or not context.has_record_requests():
            await self._send_in_transaction(records, chain, converters, errors)
            return
        start = 0
        for i, record in enumerate(records):
            request = context.take_record_request(record)
            if request is None:
                continue
            await self._send_in_transaction(records[start:i + 1], chain, converters, errors)
            start = i + 1
            if request == "abort":
                await self._abort()
            await self._commit()
        if start < len(records):
            await self._send_in_transaction(records[start:], chain, converters, errors)

    async def _send_in_transaction(self, records: list, chain: Any, converters: Any,
                                   errors: ErrorHandler, placed: list | None = None,
                                   offsets: dict[str, tuple[dict, dict]] | None = None) -> None:
        """Send records in the open transaction (``placed`` and ``offsets``: converted and
        gathered already, while the transaction before committed)."""
        if not records:
            return
        await self._begin()
        # dispatched or dropped: either way not to be read again
        self.pending_offsets.update(self._offsets_of(records) if offsets is None else offsets)
        if self.boundary is TransactionBoundary.POLL:
            # This batch ends the transaction: its offsets go out ahead of its records, so the
            # producer adds both partitions to the transaction at once.
            await self._write_offsets()
        if placed is None:
            sent = await self._send_all(records, chain, converters, errors)
        else:
            sent = await self._hand_over_converted(placed, [], start_sending=True)
        self.transaction_metrics.add_records(sent)

    def _offsets_of(self, records: list) -> dict[str, tuple[dict, dict]]:
        """The last source offset of every source partition among ``records``."""
        offsets: dict[str, tuple[dict, dict]] = {}
        for record in records:
            partition, offset = record.source_partition, record.source_offset
            if partition is not None and offset is not None:
                offsets[self._key_of(partition)] = (partition, offset)
        return offsets

    async def _write_offsets(self) -> None:
        """Send the pending offsets not yet sent in this transaction to the offsets topic."""
        assert self.offsets is not None and self.offsets.topic
        topic, written = self.offsets.topic, self._written
        for key, (partition, offset) in self.pending_offsets.items():
            if key in written and written[key] is offset:
                continue
            value = None if offset is None else json.dumps(dict(offset), sort_keys=True).encode()
            await self.producer.send(topic, key=offset_key(self.id.connector, partition).encode(),
                                     value=value)
            written[key] = offset

    async def _batch_boundary(self) -> None:
        if self.boundary is TransactionBoundary.POLL:
            await self._commit()
        elif self.boundary is TransactionBoundary.INTERVAL:
            if time.monotonic() >= self._last_commit + self.interval_s:
                await self._commit()
                self._last_commit = time.monotonic()
        else:
            assert self.transactions is not None
            request = self.transactions.take_batch_request()
            if request == "abort":
                await self._abort()
                await self._commit()
            elif request == "commit":
                await self._commit()

    # -- transactions --------------------------------------------------------------------------
    async def _begin(self) -> None:
        if not self.in_transaction:
            await self.producer.begin_transaction()
            self.in_transaction = True

    async def _commit(self) -> None:
        """Flush the records, write the offsets, commit: all of it or (on a crash) none."""
        await self._task_committed()
        if not self.in_transaction and not self.pending_offsets:
            return
        await self._begin()  # after an abort, the offsets still need a transaction
        await self._handed_over()
        await self._raise_failed_batch()
        offsets = list(self.pending_offsets.values())
        await self._write_offsets()
        assert self.offsets is not None
        try:
            await self.producer.commit_transaction()
        except Exception as exc:
            self.commits_failed += 1
            raise ConnectException(f"Failed to flush offsets and/or records for task {self.id}: "
                                   f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.in_transaction = False
            self._written = {}
        self.pending_offsets = {}
        self.offsets.applied(self.id.connector, offsets)
        self.transaction_metrics.committed()
        self.commits_ok += 1
        if self._commit_record is not None:
            self._collect_acked()  # every batch is acknowledged now: commit_record per record
        else:  # nothing to tell the task per record: only count them (all acked, see above)
            self.records_written += sum(1 for _r, f, _i in self.outstanding if f is not None)
            self.outstanding.clear()
        self.acked = {}  # written above, inside the transaction
        # SourceTask.commit() runs on the task's thread after the poll already queued there;
        # the loop goes on with the next transaction meanwhile, and the next commit (or the
        # task's stop) waits for it, so a commit() that raises still fails the task.
        if self._task_commits:
            self._task_commit = asyncio.ensure_future(self.call(self._source_task.commit))

    async def _task_committed(self) -> None:
        """Wait for the last SourceTask.commit() (raising what it raised)."""
        pending, self._task_commit = self._task_commit, None
        if pending is not None:
            await pending

    async def _raise_failed_batch(self) -> None:
        """Wait until every record of the transaction was written, and fail the commit if one
        was not. aiokafka's producer fails a batch on its own (a partition without a leader
        past request.timeout.ms, a record the broker refuses) and would still commit the
        transaction with the offsets of the lost records; Kafka's producer makes the
        transaction abortable, so its commitTransaction throws and the task fails, whatever
        errors.tolerance says."""
        futures = {f for _r, f, _i in self.outstanding if f is not None}
        if not futures:
            return
        await asyncio.gather(*futures, return_exceptions=True)
        for future in futures:
            failed = None if future.cancelled() else future.exception()
            if failed is not None:
                self.commits_failed += 1
                raise ConnectException(
                    f"Failed to flush offsets and/or records for task {self.id}: a batch of the "
                    f"transaction was not written ({type(failed).__name__}: {failed})"
                ) from failed

    async def _abort(self) -> None:
        """Drop the open transaction's records (the task asked to); their offsets stay pending."""
        if not self.in_transaction:
            return
        await self._handed_over()
        futures = [f for _r, f, _i in self.outstanding if f is not None]
        await asyncio.gather(*futures, return_exceptions=True)
        await self.producer.abort_transaction()
        self.in_transaction = False
        self._written = {}  # aborted with the records: written again in the next transaction
        self.transaction_metrics.aborted()
        outstanding, self.outstanding = self.outstanding, deque()
        if self._commit_record is not None:
            for record, _future, _index in outstanding:
                self._commit_record(record, None)

    async def on_pause(self) -> None:
        """Commit before idling, so a paused task holds no transaction open (Kafka's onPause)."""
        await self._final_transaction()
        await self._task_committed()

    async def _final_transaction(self) -> None:
        if self.boundary is TransactionBoundary.CONNECTOR:
            assert self.transactions is not None
            request = self.transactions.take_batch_request()
            if request == "commit":
                await self._commit()
                return
            if request == "abort":
                await self._abort()
                await self._commit()
                return
            await self._abort()  # no boundary requested: nothing of it may become visible
            return
        await self._commit()

    async def _final_flush(self, task: SourceTask) -> None:
        if self.producer is None or self.collector is None:
            return
        if self._failed or not hasattr(self, "_source_task"):
            return  # Kafka's finalOffsetCommit: nothing of a failed or cancelled task commits
        try:
            await self._final_transaction()
            await self._task_committed()
        except Exception as exc:
            log.error("task %s: final transaction failed at stop: %s", self.id, exc)


def runner_class(worker: WorkerConfig, default: type) -> type:
    """The runner for a source task on this worker (Kafka's Worker.startTask choice)."""
    return ExactlyOnceWorkerSourceTask if worker.exactly_once_source_enabled else default


# -- zombie fencing ------------------------------------------------------------------------------


async def fence_producers(worker: WorkerConfig, transactional_ids: list[str],
                          admin_overrides: dict[str, str] | None = None) -> None:
    """Admin.fenceProducers: an ``InitProducerId`` for each id, which aborts its open transaction
    and bumps its epoch, so an older producer of that id can neither write nor commit. With the
    connector's admin settings (the worker's ``admin.*``, then its ``admin.override.*``), as
    Kafka's Worker.fenceZombies."""
    settings = clients.admin_kwargs(worker, admin_overrides)

    async def fence(tid: str) -> None:
        producer = kafka_clients.producer(settings, transactional_id=tid, enable_idempotence=True,
                                          client_id=f"connector-fencing-{tid}")
        await producer.start()  # InitProducerId
        await producer.stop()

    await asyncio.gather(*(fence(tid) for tid in transactional_ids))


class ZombieFencing:
    """The config topic's task-count records and the fencing round (the leader's part).

    ``pending``: connectors whose latest task configs came after their latest task-count record,
    so older generations of their tasks may still run somewhere (Kafka's ``pendingFencing``).
    """

    def __init__(self, worker: WorkerConfig) -> None:
        self.worker = worker
        self.task_counts: dict[str, int] = {}
        self.pending: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}

    def apply(self, key: str, value: Any) -> None:
        """Follow one config-topic record (in topic order)."""
        if key.startswith(TASK_COUNT_PREFIX):
            name = key[len(TASK_COUNT_PREFIX):]
            if value is None:
                self.task_counts.pop(name, None)
            else:
                with contextlib.suppress(TypeError, ValueError):
                    self.task_counts[name] = int(value.get("task-count"))
                self.pending.discard(name)
        elif key.startswith("commit-"):
            self.pending.add(key[len("commit-"):])
        elif key.startswith("connector-") and value is None:
            name = key[len("connector-"):]
            self.pending.discard(name)
            self.task_counts.pop(name, None)

    async def fence(self, name: str, task_count: int, read_to_end: Callable[[], Awaitable[None]],
                    write: Callable[[str, Any], Awaitable[None]],
                    connector_config: Mapping[str, str] | None = None) -> None:
        """The leader's round for ``name`` (DistributedHerder.fenceZombieSourceTasks)."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            await read_to_end()
            if name not in self.pending:
                return  # the latest task configs were fenced for already
            previous = self.task_counts.get(name)
            # No record: no transactional producer ever ran for it. One task before and one now:
            # the new task's own InitProducerId fences the old one.
            if previous is not None and not (previous == 1 and task_count == 1):
                ids = [transactional_id(self.worker.group_id, name, i) for i in range(previous)]
                log.info("fencing out %d task producers of source connector %s", previous, name)
                prefix = "admin.override."
                overrides = {k[len(prefix):]: v for k, v in (connector_config or {}).items()
                             if k.startswith(prefix)}
                await fence_producers(self.worker, ids, overrides)
            await write(f"{TASK_COUNT_PREFIX}{name}", {"task-count": task_count})


async def request_fencing(leader_url: Callable[[], str | None], name: str,
                          timeout: float = 60.0,
                          headers: Callable[[bytes], dict[str, str]] | None = None) -> None:
    """A worker's task needs a round: ask the leader (``PUT /connectors/{name}/fence``)."""
    await request_leader(leader_url, "PUT", f"/connectors/{name}/fence", b"",
                         f"zombie fencing for connector {name} failed", timeout, headers)
