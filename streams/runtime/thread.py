"""The stream thread: one consumer, one producer, the tasks assigned to this instance.

Loop: ``getmany`` -> route records to tasks -> restore new tasks -> ``task.process()`` ->
wall-clock punctuation -> hand produced batches to the producer -> commit every
``commit.interval.ms``. Commit under at_least_once: flush stores, flush the producer, commit
consumer offsets, write checkpoints. Under exactly_once_v2: flush stores, then
``send_offsets_to_transaction`` + ``commit_transaction`` of the single transactional producer,
finished in a background task while the loop keeps processing (its output is held in the
collector until the transaction committed). Record caches are also flushed whenever the
thread has caught up with its input, so deduplication never holds back the latest results.
Fencing or a failed commit aborts, closes every task dirty and rejoins the group with fresh
clients (``TaskMigrated``), so nothing uncommitted ever becomes visible twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    InvalidProducerEpoch,
    InvalidTxnState,
    ProducerFenced,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from ..processor.api import TaskId
from ..processor.errors import HandlerFailedError
from ..processor.task import StreamTask
from .assignor import MemberInfo, StreamsPartitionAssignor
from .collector import RecordCollector
from .globals import GlobalStores
from .restore import ChangelogState, Restorer, prepare_task, write_checkpoint
from .statedir import StateDirectory
from .topics import TopicLayout, ensure_internal_topics

if TYPE_CHECKING:
    from .app import KafkaStreams

log = logging.getLogger(__name__)

MIGRATION_ERRORS = (CommitFailedError, IllegalGenerationError, UnknownMemberIdError,
                    RebalanceInProgressError, ProducerFenced, InvalidProducerEpoch,
                    InvalidTxnState)


class TaskMigrated(Exception):
    """This instance lost its tasks (fenced, or the group moved on): rejoin with clean state."""


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StreamThread:
    def __init__(self, app: KafkaStreams) -> None:
        self.app = app
        self.config = app.config
        self.topology = app.topology
        self.task_config = self.config.task_config()
        self.app_id = self.config.application_id
        self.eos = self.config.eos
        self.client_kwargs: dict[str, Any] = {"bootstrap_servers": self.config.bootstrap_servers,
                                              "request_timeout_ms": self.config.request_timeout_ms}
        if self.config.client_id:
            self.client_kwargs["client_id"] = self.config.client_id
        self.state_dir = StateDirectory(self.config.app_state_dir)
        self.lock = asyncio.Lock()
        self.tasks: dict[TaskId, StreamTask] = {}
        self.task_partitions: dict[TaskId, list[tuple[str, int]]] = {}
        self.changelogs: dict[TaskId, ChangelogState] = {}
        self.restoring: list[TaskId] = []
        self.by_partition: dict[tuple[str, int], StreamTask] = {}
        self.committed: dict[tuple[str, int], int] = {}
        self.idle_since: dict[TaskId, float] = {}
        self.layout: TopicLayout | None = None
        self.consumer: AIOKafkaConsumer | None = None
        self.producer: AIOKafkaProducer | None = None
        self.collector: RecordCollector | None = None
        self.admin: AIOKafkaAdminClient | None = None
        self.globals: GlobalStores | None = None
        self.in_txn = False
        self.pending_commit: asyncio.Task[None] | None = None  # EOS commit finishing
        # Bumped when a rebalance starts and when it ends: records are processed only by the
        # assignment they were fetched for.
        self.assignment_version = 0
        self.rebalancing = False
        self.generation = -1
        self.shutting_down = False
        self.last_commit = time.monotonic()
        self.last_purge = time.monotonic()
        self.to_purge: dict[tuple[str, int], int] = {}
        self.processed = 0
        self.failure: BaseException | None = None  # raised in a rebalance callback

    # -- lifecycle ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        self.state_dir.lock()
        try:
            self.admin = AIOKafkaAdminClient(**self.client_kwargs)
            await self.admin.start()
            self.layout = await ensure_internal_topics(
                self.admin, self.topology, self.app_id, self.config.replication_factor)
            if self.topology.global_stores:
                self.globals = GlobalStores(self.topology, self.task_config, self.client_kwargs,
                                            self.eos, self.config.app_state_dir, wall_clock_ms)
                await self.globals.bootstrap()
            while not stop.is_set():
                try:
                    await self._run_generation(stop)
                except TaskMigrated as exc:
                    log.warning("tasks migrated (%s); rejoining the group", exc)
        finally:
            self.shutting_down = True
            if self.globals is not None:
                await self.globals.close()
            if self.admin is not None:
                await self.admin.close()
            self.state_dir.unlock()

    def _new_clients(self) -> None:
        assert self.layout is not None
        producer_kwargs: dict[str, Any] = {"acks": "all",
                                           "max_batch_size": self.config.max_batch_size}
        if self.eos:
            producer_kwargs.update(
                transactional_id=f"{self.app_id}-{self.state_dir.process_id}-0",
                enable_idempotence=True,
                transaction_timeout_ms=self.config.transaction_timeout_ms)
        self.producer = AIOKafkaProducer(**self.client_kwargs, **producer_kwargs)
        self.collector = RecordCollector(self.producer, dict(self.layout.partitions),
                                         self._begin_txn if self.eos else None)
        assignor = StreamsPartitionAssignor(self.layout, self._member_info)
        self.consumer = AIOKafkaConsumer(
            **self.client_kwargs, group_id=self.app_id, enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed" if self.eos else "read_uncommitted",
            partition_assignment_strategy=(assignor,),
            max_poll_records=self.config.max_poll_records,
            fetch_max_wait_ms=self.config.fetch_max_wait_ms,
            max_partition_fetch_bytes=self.config.max_partition_fetch_bytes,
            session_timeout_ms=self.config.session_timeout_ms,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            max_poll_interval_ms=self.config.max_poll_interval_ms,
            metadata_max_age_ms=self.config.metadata_max_age_ms)

    async def _run_generation(self, stop: asyncio.Event) -> None:
        self._new_clients()
        self.failure = None
        self.rebalancing = False
        assert self.consumer is not None and self.producer is not None
        await self.producer.start()
        self.in_txn = False
        clean = False
        try:
            # Before start(): the first assignment may complete inside start(), and its
            # RUNNING must not be overwritten.
            self.app._set_state("REBALANCING")
            self.consumer.subscribe(self.layout.source_topics(), listener=_Listener(self))
            await self.consumer.start()
            while not stop.is_set():
                batch, assignment = await self._poll()
                if self.failure is not None:
                    failure, self.failure = self.failure, None
                    raise TaskMigrated(repr(failure)) from failure
                async with self.lock:
                    if assignment != self.assignment_version:
                        # Taken from the fetcher during or before a rebalance that has run
                        # since: the consumer restarts from the committed offsets, which
                        # do not cover these records, so they come again.
                        batch = {}
                    await self._iteration(batch)
            async with self.lock:
                self.shutting_down = True
                await self._commit(force=True)
                self._close_tasks(clean=True)
            clean = True
        except MIGRATION_ERRORS as exc:
            await self._abandon(exc)
            raise TaskMigrated(repr(exc)) from exc
        except TaskMigrated:
            await self._abandon(None)
            raise
        except HandlerFailedError:
            await self._deliver_before_failing()
            await self._abandon(None)
            raise
        except BaseException:
            await self._abandon(None)
            raise
        finally:
            await self._stop_clients(leave=clean)

    async def _poll(self) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        """The next records and the assignment they belong to (None: taken mid-rebalance)."""
        assert self.collector is not None
        if self.pending_commit is not None and not self._has_work():
            batch, assignment = await self._fetch_while_committing()
            if batch:
                return batch, assignment
            if self.pending_commit is not None and self.pending_commit.done():
                async with self.lock:
                    await self._await_commit()
        busy = self._has_work() or self.collector.pending()
        return await self._getmany(0 if busy else self.config.poll_ms)

    async def _getmany(self, timeout_ms: int) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        assert self.consumer is not None
        batch = await self.consumer.getmany(timeout_ms=timeout_ms)
        # Read in the same step as the fetcher handed the records over.
        return batch, None if self.rebalancing else self.assignment_version

    async def _fetch_while_committing(self) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        """Nothing buffered while the EOS commit is in flight: wait for whichever comes first,
        new records (processed while the commit goes on) or the commit (so its held output
        is sent at once rather than after a poll timeout)."""
        assert self.pending_commit is not None
        fetch = asyncio.ensure_future(self._getmany(self.config.poll_ms))
        try:
            await asyncio.wait({fetch, self.pending_commit}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not fetch.done():
                fetch.cancel()
        try:
            return await fetch
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # we are being cancelled, not just the fetch
            return {}, None

    async def _deliver_before_failing(self) -> None:
        """An exception handler said FAIL: under at_least_once, deliver what was produced so
        far (as Kafka's producer close does) so a dead-letter record written just before
        the failure is not lost; its input offset stays uncommitted. Under EOS the open
        transaction is aborted instead, dead letters included."""
        if self.eos or self.collector is None or self.producer is None:
            return
        try:
            await asyncio.wait_for(self.collector.flush(), 10)
            await asyncio.wait_for(self.producer.flush(), 10)
        except Exception as exc:
            log.warning("could not deliver pending records before failing: %r", exc)

    async def _abandon(self, exc: BaseException | None) -> None:
        """Abort the open transaction, drop unsent output, close every task dirty."""
        self.shutting_down = True
        pending, self.pending_commit = self.pending_commit, None
        if pending is not None:
            try:
                await pending
            except BaseException as commit_exc:  # already failing; the abort below decides
                log.info("the commit in flight failed too: %r", commit_exc)
        if self.collector is not None:
            self.collector.discard()
        if self.eos and self.in_txn and self.producer is not None:
            try:
                await self.producer.abort_transaction()
            except Exception as abort_exc:  # fenced producers cannot abort; the broker will
                log.info("abort after %r failed: %r", exc, abort_exc)
        self.in_txn = False
        self._close_tasks(clean=False)
        self.shutting_down = False

    async def _stop_clients(self, leave: bool) -> None:
        for client in (self.consumer, self.producer):
            if client is None:
                continue
            try:
                await client.stop()
            except Exception as exc:
                log.debug("stopping %s failed: %r", type(client).__name__, exc)
        self.consumer = None
        self.producer = None
        self.shutting_down = False

    # -- one loop iteration -------------------------------------------------------------------

    async def _iteration(self, batch: dict[TopicPartition, list[Any]]) -> None:
        by_partition = self.by_partition
        for tp, records in batch.items():
            task = by_partition.get((tp.topic, tp.partition))
            if task is None:
                continue
            task.add_batch(tp.topic, tp.partition, records)  # ConsumerRecords, uncopied
        if self.restoring:
            await self._restore()
        if self.globals is not None:
            await self.globals.poll()
        now = time.monotonic()
        for task_id, task in self.tasks.items():
            if task_id in self.restoring:
                continue
            limit = self._processable(task_id, task, now)
            if limit != 0:
                self.processed += task.process(limit)
            task.punctuate_wall_clock()
        if self.task_config.cache is not None and self._caught_up():
            for task_id, task in self.tasks.items():
                if task_id not in self.restoring:
                    task.flush_caches()
        assert self.collector is not None
        if self.pending_commit is not None and self.pending_commit.done():
            await self._await_commit()
        if self.pending_commit is None:  # else: output waits for the next transaction
            await self.collector.flush()
            if (now - self.last_commit) * 1000 >= self.config.effective_commit_interval_ms \
                    or any(t.commit_requested for t in self.tasks.values()):
                await self._commit(background=self.eos)
        self._apply_backpressure()

    def _has_work(self) -> bool:
        now = time.monotonic()
        return any(t.buffered() and task_id not in self.restoring
                   and self._processable(task_id, t, now) != 0
                   for task_id, t in self.tasks.items())

    def _caught_up(self) -> bool:
        """Nothing buffered and nothing more on the broker: the record caches have nothing
        left to deduplicate, so holding their changes until the commit would only add
        latency (under at_least_once the commit may be 30 s away)."""
        if any(t.buffered() for t in self.tasks.values()):
            return False
        return not any(self._lagging(tp) for parts in self.task_partitions.values()
                       for tp in parts)

    def _processable(self, task_id: TaskId, task: StreamTask, now: float) -> int | None:
        """How many records may be processed now: None = all buffered, 0 = wait (idling)."""
        parts = self.task_partitions[task_id]
        if len(parts) == 1:
            return None
        queues = task.queues
        sizes = [len(queues[tp]) if tp in queues else 0 for tp in parts]
        if all(sizes):
            self.idle_since.pop(task_id, None)
            return min(sizes)
        if not any(sizes):
            return 0
        idle = self.config.max_task_idle_ms
        if idle < 0:
            return None
        for tp, size in zip(parts, sizes, strict=True):
            if size == 0 and self._lagging(tp):
                return 0  # the broker has data for the empty partition: wait for the fetch
        if idle > 0:
            since = self.idle_since.setdefault(task_id, now)
            if (now - since) * 1000 < idle:
                return 0
        return None

    def _lagging(self, tp: tuple[str, int]) -> bool:
        consumer = self.consumer
        assert consumer is not None
        key = TopicPartition(*tp)
        end = consumer.last_stable_offset(key) if self.eos else consumer.highwater(key)
        position = _position(consumer, key)
        return end is None or position is None or position < end

    def _apply_backpressure(self) -> None:
        consumer = self.consumer
        assert consumer is not None
        limit = self.config.buffered_records_per_partition
        paused = consumer.paused()
        to_pause, to_resume = [], []
        for task in self.tasks.values():
            for (topic, partition), queue in task.queues.items():
                tp = TopicPartition(topic, partition)
                if len(queue) >= limit:
                    if tp not in paused:
                        to_pause.append(tp)
                elif tp in paused:
                    to_resume.append(tp)
        if to_pause:
            consumer.pause(*to_pause)
        if to_resume:
            consumer.resume(*to_resume)

    # -- commit -------------------------------------------------------------------------------

    async def _begin_txn(self) -> None:
        if not self.in_txn:
            assert self.producer is not None
            await self.producer.begin_transaction()
            self.in_txn = True

    async def _await_commit(self) -> None:
        """Wait for the EOS commit in flight (raising what it raised)."""
        pending, self.pending_commit = self.pending_commit, None
        if pending is not None:
            await pending

    async def _commit(self, force: bool = False, background: bool = False) -> None:
        """Kafka's commit: stores, then output, then input offsets (atomically under EOS).

        With ``background`` (EOS, from the loop) the transaction is committed in a task while
        the loop goes on processing: what it produces meanwhile stays in the collector, and
        is handed to the producer, in the next transaction, only once this one committed."""
        await self._await_commit()
        collector, producer, consumer = self.collector, self.producer, self.consumer
        assert collector is not None and producer is not None and consumer is not None
        offsets: dict[TopicPartition, int] = {}
        for task_id, task in self.tasks.items():
            if task_id in self.restoring:
                continue
            task.flush()
            for tp, offset in task.consumed.items():
                if offset > self.committed.get(tp, -1):
                    offsets[TopicPartition(*tp)] = offset
        await collector.flush()
        if self.eos:
            if self.in_txn or offsets:
                if consumer._coordinator.generation != self.generation:  # noqa: SLF001
                    raise TaskMigrated("the group generation changed before the commit")
                await self._begin_txn()
                self.last_commit = time.monotonic()
                finish = self._finish_txn(offsets, force)
                if background:
                    self.pending_commit = asyncio.ensure_future(finish)
                else:
                    await finish
                return
        else:
            await producer.flush()
            await collector.wait_delivered()
            if offsets:
                await consumer.commit(offsets)
            self._write_checkpoints()
        await self._committed(offsets, force)

    async def _finish_txn(self, offsets: dict[TopicPartition, int], force: bool) -> None:
        producer, collector = self.producer, self.collector
        assert producer is not None and collector is not None
        if offsets:
            await producer.send_offsets_to_transaction(offsets, self.app_id)
        await producer.commit_transaction()
        self.in_txn = False
        await collector.wait_delivered()
        await self._committed(offsets, force)

    async def _committed(self, offsets: dict[TopicPartition, int], force: bool) -> None:
        for tp, offset in offsets.items():
            self.committed[(tp.topic, tp.partition)] = offset
            if tp.topic in self.layout.repartition_topics:  # type: ignore[union-attr]
                self.to_purge[(tp.topic, tp.partition)] = offset
        self.last_commit = time.monotonic()
        if offsets and not force:
            await self._maybe_purge()

    def _checkpoint_offsets(self, task_id: TaskId) -> dict[tuple[str, int], int]:
        state = self.changelogs.get(task_id)
        if state is None:
            return {}
        produced = self.collector.offsets if self.collector is not None else {}
        result = {}
        for tp in state.stores:
            offset = max(produced.get(tp, -1), state.restored.get(tp, -1))
            if offset >= 0:
                result[tp] = offset
        return result

    def _write_checkpoints(self) -> None:
        for task_id, task in self.tasks.items():
            if task_id not in self.restoring and self.changelogs.get(task_id):
                write_checkpoint(task.task_dir, self._checkpoint_offsets(task_id))

    async def _maybe_purge(self) -> None:
        """DeleteRecords below the committed offsets of consumed repartition partitions."""
        now = time.monotonic()
        if not self.to_purge or (now - self.last_purge) * 1000 < \
                self.config.repartition_purge_interval_ms:
            return
        self.last_purge = now
        request = {TopicPartition(*tp): RecordsToDelete(o) for tp, o in self.to_purge.items()}
        self.to_purge = {}
        try:
            assert self.admin is not None
            await self.admin.delete_records(request)
        except Exception as exc:  # purging is an optimisation; never fail processing for it
            log.warning("purging repartition topics failed: %r", exc)

    # -- tasks --------------------------------------------------------------------------------

    def _member_info(self) -> MemberInfo:
        return MemberInfo(self.state_dir.process_id, set(self.tasks),
                          self.state_dir.task_ids_on_disk())

    def _create_task(self, task_id: TaskId) -> None:
        assert self.layout is not None and self.collector is not None
        sub = self.layout.sub_topologies[task_id.subtopology]
        task = StreamTask(task_id, self.topology, sub, self.task_config, self.collector,
                          wall_clock_ms, self.globals.stores if self.globals else None)
        parts = [(t, task_id.partition) for t in self.layout.sources[sub.id]
                 if task_id.partition < self.layout.partitions[t]]
        self.tasks[task_id] = task
        self.task_partitions[task_id] = parts
        for tp in parts:
            self.by_partition[tp] = task
        self.changelogs[task_id] = prepare_task(task, self.topology, self.eos)
        if self.changelogs[task_id].stores:
            self.restoring.append(task_id)

    def _close_task(self, task_id: TaskId, clean: bool) -> None:
        task = self.tasks.pop(task_id)
        for tp in self.task_partitions.pop(task_id):
            self.by_partition.pop(tp, None)
            self.committed.pop(tp, None)
        restoring = task_id in self.restoring
        if restoring:
            self.restoring.remove(task_id)
        if clean and not restoring:
            task.flush()
            if self.changelogs.get(task_id) and self.changelogs[task_id].stores:
                write_checkpoint(task.task_dir, self._checkpoint_offsets(task_id))
        self.changelogs.pop(task_id, None)
        self.idle_since.pop(task_id, None)
        try:
            task.close()
        except Exception:
            log.exception("closing task %s failed", task_id)

    def _close_tasks(self, clean: bool) -> None:
        for task_id in list(self.tasks):
            self._close_task(task_id, clean)

    async def _restore(self) -> None:
        restorer = Restorer(self.client_kwargs, self.eos)
        ids = list(self.restoring)
        await restorer.restore([(str(t), self.changelogs[t]) for t in ids])
        self.restoring = [t for t in self.restoring if t not in ids]
        if not self.restoring:
            self.app._set_state("RUNNING")

    async def on_revoked(self, revoked: list[TopicPartition]) -> None:
        self.assignment_version += 1
        self.rebalancing = True
        if self.shutting_down or self.consumer is None or self.failure is not None:
            return
        async with self.lock:
            self.app._set_state("REBALANCING")
            if self.tasks:
                try:
                    await self._commit(force=True)
                except Exception as exc:  # aiokafka swallows listener errors: hand it over
                    log.warning("commit before the rebalance failed: %r", exc)
                    self.failure = exc
                    return
            for task in self.tasks.values():
                task.queues.clear()  # refetched from the committed offsets after the rebalance
            self.idle_since.clear()

    async def on_assigned(self, assigned: list[TopicPartition]) -> None:
        self.assignment_version += 1
        self.rebalancing = False
        if self.shutting_down or self.consumer is None or self.failure is not None:
            return
        assert self.layout is not None
        async with self.lock:
            self.generation = self.consumer._coordinator.generation  # noqa: SLF001
            wanted = {TaskId(self.layout.topic_to_sub[tp.topic], tp.partition) for tp in assigned}
            for task_id in [t for t in self.tasks if t not in wanted]:
                self._close_task(task_id, clean=True)
            for task_id in sorted(wanted - set(self.tasks)):
                self._create_task(task_id)
            log.info("assigned tasks %s (restoring %s)", ", ".join(map(str, sorted(wanted))),
                     ", ".join(map(str, self.restoring)) or "none")
            if not self.restoring:
                self.app._set_state("RUNNING")


def _position(consumer: AIOKafkaConsumer, tp: TopicPartition) -> int | None:
    """The consumer's fetch position without an await (aiokafka keeps it in its state)."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(tp)  # noqa: SLF001
    except AttributeError:
        return None
    if state is None or not state.has_valid_position:
        return None
    return state.position


class _Listener(ConsumerRebalanceListener):
    def __init__(self, thread: StreamThread) -> None:
        self.thread = thread

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.thread.on_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.thread.on_assigned(list(assigned))

