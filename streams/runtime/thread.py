"""The stream thread: runs one client generation after another (see generation.py).

Loop: ``getmany`` -> route records to tasks -> move restored tasks to running (the state
updater restores in the background) -> process in time slices -> wall-clock punctuation ->
hand produced batches to the producer -> commit every ``commit.interval.ms`` (committer.py).
Under at_least_once, caught-up record caches are flushed only by a commit, together with the
offsets, so a crash never restores state that is ahead of the committed input. Under
exactly_once_v2 the transaction commit runs in the background while the loop goes on
processing. Fencing, a failed commit or a lost broker abort the open transaction, close the
generation with all its tasks dirty and start a new one (``TaskMigrated``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    InvalidProducerEpoch,
    InvalidTxnState,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFenced,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from ..kafka import clients
from ..kafka.batching import RecordCollector
from ..kafka.internals import (
    FencedByGroupError,
    GroupMetadata,
    check_membership,
    fetch_position,
    fetch_stable_committed,
    group_metadata,
)
from ..metrics.streams_app import ThreadStats, store_wrapper
from ..processor.api import TaskId
from ..processor.errors import HandlerFailedError
from ..processor.task import StreamTask
from .assignor import MemberInfo, StreamsPartitionAssignor
from .committer import Committer, TaskMigrated
from .generation import ClientGeneration, build_producer
from .globals import GlobalStores
from .partitioner_check import PartitionerCheck
from .state_updater import StateUpdater
from .statedir import StateDirectory
from .task_manager import TaskManager
from .topics import TopicLayout, ensure_internal_topics

log = logging.getLogger(__name__)

MIGRATION_ERRORS = (CommitFailedError, IllegalGenerationError, UnknownMemberIdError,
                    RebalanceInProgressError, ProducerFenced, InvalidProducerEpoch,
                    InvalidTxnState, FencedByGroupError)

LOST_BROKER_ERRORS = (KafkaConnectionError, KafkaTimeoutError)
# A generation that fails within REJOIN_QUICK_S of the last one (a broker outage) waits before
# the next attempt, doubling from REJOIN_BACKOFF_S up to REJOIN_BACKOFF_MAX_S (Kafka's
# reconnect.backoff.ms / reconnect.backoff.max.ms): one log line per attempt, not thousands.
REJOIN_QUICK_S = 5.0
REJOIN_BACKOFF_S = 0.1
REJOIN_BACKOFF_MAX_S = 1.0

PROCESS_CHUNK = 100  # records per task between checks of the time slice
PROCESS_SLICE_S = 0.1  # one iteration processes at most this long before polling again
EARLY_COMMIT_MIN_S = 0.1  # at_least_once: caught-up commits at most this often

__all__ = ["StreamThread", "TaskMigrated", "ThreadHost"]


@dataclass(frozen=True)
class ThreadHost:
    """What a stream thread needs from the client that runs it (KafkaStreams): its settings
    and callbacks, so that the thread never reaches into the client's internals."""

    config: Any  # StreamsConfig
    topology: Any  # Topology
    metrics_registry: Any
    set_state: Callable[[str], None]  # "REBALANCING" / "RUNNING"
    on_assignment_info: Callable[[Any], None]  # every new assignment's AssignmentInfo
    shutdown_requested: Callable[[], bool]  # SHUTDOWN_APPLICATION, told to the group on joining
    restore_listener: Any = None  # Kafka's StateRestoreListener
    standby_listener: Any = None  # Kafka's StandbyUpdateListener


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StreamThread:
    def __init__(self, host: ThreadHost) -> None:
        self.host = host
        self.config = host.config
        self.topology = host.topology
        self.task_config = self.config.task_config()
        self.task_config.store_wrapper = store_wrapper(host.metrics_registry)  # DEBUG: Metered
        self.app_id = self.config.application_id
        self.guarantee = self.config.guarantee
        self.eos = self.guarantee.exactly_once  # the commit is a transaction
        self.state_dir = StateDirectory(self.config.app_state_dir)
        self.lock = asyncio.Lock()
        self.layout: TopicLayout | None = None
        self.admin: AIOKafkaAdminClient | None = None
        self.globals: GlobalStores | None = None
        self.partitioner_check: PartitionerCheck | None = None
        self.gen: ClientGeneration | None = None
        self.generations = 0
        # Bumped when a rebalance starts and when it ends: records are processed only by the
        # assignment they were fetched for.
        self.assignment_version = 0
        self.shutting_down = False
        self.processed = 0
        self.next_task = 0  # round-robin start of the time slices
        self.failure: BaseException | None = None  # raised in a rebalance callback
        self.last_alive = time.monotonic()  # end of the last loop iteration
        self.stats = ThreadStats()  # polls, commits and time spent, read by the metrics

    # read by KafkaStreams (queries, local task ids) and the CLI
    @property
    def tasks(self) -> dict[TaskId, StreamTask]:
        gen = self.gen
        return gen.tasks.tasks if gen is not None else {}

    @property
    def restoring(self) -> set[TaskId]:
        gen = self.gen
        return gen.tasks.restoring if gen is not None else set()

    # -- lifecycle ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        self.state_dir.lock()
        try:
            admin_settings = self.config.client_kwargs("admin")
            self.admin = clients.admin(admin_settings)
            try:
                await clients.start(self.admin, admin_settings)
            except clients.BootstrapError as exc:  # say why: a refused login, an untrusted cert
                raise KafkaConnectionError(
                    f"cannot connect to bootstrap.servers {self.config.bootstrap_servers}: "
                    f"{exc.reason or exc.__cause__} (is the broker running, and is that its "
                    f"address?)") from exc
            self.layout = await ensure_internal_topics(
                self.admin, self.topology, self.app_id, self.config.replication_factor)
            self.partitioner_check = PartitionerCheck(
                self.layout.partitions, [t for t in self.layout.source_topics()
                                         if t not in self.layout.internal])
            if self.topology.global_stores:
                self.globals = GlobalStores(self.topology, self.task_config,
                                            self.config.client_kwargs("global.consumer"),
                                            self.guarantee, self.config.app_state_dir,
                                            wall_clock_ms)
                await self.globals.bootstrap()
            failures, began = 0, time.monotonic()
            while not stop.is_set():
                try:
                    await self._run_generation(stop)
                except TaskMigrated as exc:
                    failures = failures + 1 if time.monotonic() - began < REJOIN_QUICK_S else 1
                    delay = 0.0 if failures < 2 else \
                        min(REJOIN_BACKOFF_S * 2 ** (failures - 2), REJOIN_BACKOFF_MAX_S)
                    log.warning("tasks migrated (%s); rejoining the group%s", exc,
                                f" in {delay:.1f} s (attempt {failures})" if delay else "")
                    if delay:
                        waiting = asyncio.ensure_future(stop.wait())
                        await asyncio.wait({waiting}, timeout=delay)
                        waiting.cancel()
                    began = time.monotonic()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if stop.is_set() or task is None:
                        raise
                    # Nothing of ours cancels this task without setting stop: a cancellation
                    # that leaked out of a client operation. Start over, loudly.
                    log.warning("processing was cancelled without a stop; rejoining the group "
                                "with fresh clients", exc_info=True)
                    while task.cancelling():
                        task.uncancel()
        finally:
            self.shutting_down = True
            if self.globals is not None:
                await self.globals.close()
            if self.admin is not None:
                await self.admin.close()
            self.state_dir.unlock()

    def _new_generation(self) -> ClientGeneration:
        layout = self.layout
        assert layout is not None
        self.generations += 1
        producer = build_producer(
            self.config.client_kwargs("producer"), self.guarantee,
            f"{self.app_id}-{self.state_dir.process_id}-0",
            self.config.max_batch_size, self.config.transaction_timeout_ms)
        holder: list[Committer] = []

        async def begin_txn() -> None:
            await holder[0].begin_txn()

        collector = RecordCollector(producer, dict(layout.partitions),
                                    begin_txn if self.eos else None)
        assignor = StreamsPartitionAssignor(layout, self._member_info,
                                            self.host.on_assignment_info,
                                            self.config.num_standby_replicas)
        consumer = clients.consumer(
            self.config.client_kwargs("main.consumer"), group_id=self.app_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=self.guarantee.isolation_level,
            partition_assignment_strategy=(assignor,),
            max_poll_records=self.config.max_poll_records,
            fetch_max_wait_ms=self.config.fetch_max_wait_ms,
            max_partition_fetch_bytes=self.config.max_partition_fetch_bytes,
            session_timeout_ms=self.config.session_timeout_ms,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            max_poll_interval_ms=self.config.max_poll_interval_ms,
            metadata_max_age_ms=self.config.metadata_max_age_ms)
        updater = StateUpdater(self.config.client_kwargs("restore.consumer"), self.guarantee,
                               self.host.restore_listener, self.host.standby_listener)
        tasks = TaskManager(self.topology, layout, self.task_config, collector, updater,
                            self.globals.stores if self.globals else None, wall_clock_ms)
        committer = Committer(self.app_id, self.guarantee, tasks, consumer, producer, collector,
                              set(layout.repartition_topics),
                              self.config.repartition_purge_interval_ms, self.admin,
                              self.task_config.errors)
        committer.guard_membership(self.config.session_timeout_ms,
                                   self.config.heartbeat_interval_ms)
        holder.append(committer)
        self.stats.instrument(committer)
        return ClientGeneration(self.generations, consumer, producer, collector, tasks,
                                committer, updater, assignor)

    async def _run_generation(self, stop: asyncio.Event) -> None:
        gen = self.gen = self._new_generation()
        self.failure = None
        try:
            await gen.producer.start()
            # Before start(): the first assignment may complete inside start(), and its
            # RUNNING must not be overwritten.
            self.host.set_state("REBALANCING")
            assert self.layout is not None
            gen.consumer.subscribe(self.layout.source_topics(), listener=_Listener(self, gen))
            await gen.consumer.start()
            while not stop.is_set():
                batch, assignment = await self._poll(gen)
                async with self.lock:
                    # Checked under the lock: a rebalance callback may have failed while
                    # the loop waited for it.
                    self._raise_failure(gen)
                    if assignment != self.assignment_version:
                        # Taken from the fetcher during or before a rebalance that has run
                        # since: the consumer restarts from the committed offsets, which
                        # do not cover these records, so they come again.
                        batch = {}
                    await self._iteration(gen, batch)
            async with self.lock:
                await gen.committer.commit(force=True)
                gen.closed = True  # before close_all: no callback may create tasks now
                gen.tasks.close_all(clean=True)
        except MIGRATION_ERRORS as exc:
            await self._abandon(gen, exc)
            raise TaskMigrated(repr(exc)) from exc
        except TaskMigrated:
            await self._abandon(gen, None)
            raise
        except asyncio.CancelledError as exc:
            await self._abandon(gen, exc)
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # the app is being stopped
            # A client cancelled an operation we awaited (aiokafka does when a connection
            # or its coordinator goes away): start over with fresh clients.
            raise TaskMigrated(f"a client operation was cancelled: {exc!r}") from exc
        except KafkaError as exc:
            await self._abandon(gen, exc)
            if not lost_broker(exc):
                raise
            # The broker went away or timed out (a restart, an outage): abort what is open
            # and rejoin with fresh clients once it is back.
            raise TaskMigrated(repr(exc)) from exc
        except HandlerFailedError:
            await self._deliver_before_failing(gen)
            await self._abandon(gen, None)
            raise
        except BaseException:
            await self._abandon(gen, None)
            raise
        finally:
            await gen.close()

    def _raise_failure(self, gen: ClientGeneration) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            if isinstance(failure, HandlerFailedError):
                raise failure  # an exception handler said FAIL (in a rebalance's commit)
            raise TaskMigrated(repr(failure)) from failure
        if gen.updater.failure is not None:
            raise TaskMigrated(f"restoring failed: {gen.updater.failure!r}")

    async def _poll(self, gen: ClientGeneration
                    ) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        """The next records and the assignment they belong to (None: taken mid-rebalance)."""
        committer = gen.committer
        if committer.pending is not None and not self._has_work(gen):
            batch, assignment = await self._fetch_while_committing(gen)
            if batch:
                return batch, assignment
            if committer.pending_done():
                async with self.lock:
                    await committer.await_pending()
        if self._has_work(gen) or gen.collector.pending():
            # getmany(0) returns buffered records without suspending: yield to the event
            # loop once per slice so heartbeats and the commit in flight run.
            await asyncio.sleep(0)
            return await self._getmany(gen, 0)
        return await self._getmany(gen, self.config.poll_ms)

    async def _getmany(self, gen: ClientGeneration, timeout_ms: int
                       ) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        self.stats.polls += 1
        batch = await gen.consumer.getmany(timeout_ms=timeout_ms)
        # Read in the same step as the fetcher handed the records over.
        return batch, None if gen.rebalancing else self.assignment_version

    async def _fetch_while_committing(self, gen: ClientGeneration
                                      ) -> tuple[dict[TopicPartition, list[Any]], int | None]:
        """Nothing buffered while the EOS commit is in flight: wait for whichever comes first,
        new records (processed while the commit goes on) or the commit (so its held output
        is sent at once rather than after a poll timeout)."""
        pending = gen.committer.pending
        assert pending is not None
        fetch = asyncio.ensure_future(self._getmany(gen, self.config.poll_ms))
        try:
            await asyncio.wait({fetch, pending}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not fetch.done():
                fetch.cancel()
        try:
            return await fetch
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # we are being cancelled, not just the fetch
            return {}, None

    async def _deliver_before_failing(self, gen: ClientGeneration) -> None:
        """An exception handler said FAIL: under at_least_once, deliver what was produced so
        far (as Kafka's producer close does) so a dead-letter record written just before
        the failure is not lost; its input offset stays uncommitted. Under EOS the open
        transaction is aborted instead, dead letters included."""
        if self.eos:
            return
        try:
            await asyncio.wait_for(gen.collector.flush(), 10)
            await asyncio.wait_for(gen.producer.flush(), 10)
        except Exception as exc:
            log.warning("could not deliver pending records before failing: %r", exc)

    async def _abandon(self, gen: ClientGeneration, exc: BaseException | None) -> None:
        """Abort the open transaction, drop unsent output, close every task dirty."""
        gen.closed = True
        await gen.committer.abort(exc)
        gen.tasks.close_all(clean=False)

    # -- one loop iteration -------------------------------------------------------------------

    async def _iteration(self, gen: ClientGeneration,
                         batch: dict[TopicPartition, list[Any]]) -> None:
        tasks = gen.tasks
        by_partition = tasks.by_partition
        check = self.partitioner_check
        for tp, records in batch.items():
            task = by_partition.get((tp.topic, tp.partition))
            if task is not None:
                task.add_batch(tp.topic, tp.partition, records)  # ConsumerRecords, uncopied
                if check is not None:
                    check.observe(tp.topic, tp.partition, records)
        if tasks.restoring and tasks.mark_restored() and not tasks.restoring:
            self.host.set_state("RUNNING")
        if self.globals is not None:
            await self.globals.poll()
        now = time.monotonic()
        started = time.perf_counter()
        self._process_slice(gen, now)
        self.stats.process_seconds += time.perf_counter() - started
        for _task_id, task in tasks.running():
            # Kafka's TaskExecutor#punctuate: stream time may be due without a new record
            # (a task that resumed the stream time its last owner committed).
            task.punctuate_stream_time()
            task.punctuate_wall_clock()
        committer = gen.committer
        if self.task_config.cache is not None and committer.dirty and self._caught_up(gen):
            if self.eos:  # into the open transaction, committed with the offsets
                for _task_id, task in tasks.running():
                    task.flush_caches()
            elif time.monotonic() - committer.last_commit >= EARLY_COMMIT_MIN_S:
                await committer.commit()  # caches flush only together with the offsets
        if committer.pending_done():
            await committer.await_pending()
        if committer.pending is None:  # else: output waits for the next transaction
            await self._check_after_a_gap(gen)
            await gen.collector.flush()
            if (now - committer.last_commit) * 1000 >= self.config.effective_commit_interval_ms \
                    or any(t.commit_requested for _, t in tasks.running()):
                await committer.commit(background=self.eos)
        self._apply_backpressure(gen)
        self.last_alive = time.monotonic()

    async def _check_after_a_gap(self, gen: ClientGeneration) -> None:
        """at_least_once sends output and changelog records every iteration, with no
        transaction to fence them. If this loop stood still for half a session timeout (the
        process was paused, or starved), the group may have given its tasks to another
        instance meanwhile: ask the coordinator before sending anything stale."""
        if self.eos or not gen.collector.pending() or gen.committer.group is None:
            return
        if time.monotonic() - self.last_alive > self.config.session_timeout_ms / 2000:
            await check_membership(gen.consumer, gen.committer.group)

    def _process_slice(self, gen: ClientGeneration, now: float) -> None:
        """Process buffered records for at most PROCESS_SLICE_S, round-robin over the tasks,
        so heartbeats, fetches and commits are never starved by a long backlog."""
        running = list(gen.tasks.running())
        if not running:
            return
        deadline = now + PROCESS_SLICE_S
        start = self.next_task % len(running)
        order = running[start:] + running[:start]
        for index, (task_id, task) in enumerate(order):
            limit = self._processable(gen, task_id, task, now)
            if limit == 0:
                continue
            done = 0
            while limit is None or done < limit:
                chunk = PROCESS_CHUNK if limit is None else min(PROCESS_CHUNK, limit - done)
                count = task.process(chunk)
                done += count
                if count < chunk or time.monotonic() >= deadline:
                    break
            self.processed += done
            if done:
                gen.committer.dirty = True
            if time.monotonic() >= deadline:
                self.next_task = start + index + 1
                return
        self.next_task = start + 1

    def _has_work(self, gen: ClientGeneration) -> bool:
        now = time.monotonic()
        return any(t.buffered() and self._processable(gen, task_id, t, now) != 0
                   for task_id, t in gen.tasks.running())

    def _caught_up(self, gen: ClientGeneration) -> bool:
        """Nothing buffered and nothing more on the broker: the record caches have nothing
        left to deduplicate, so holding their changes until the commit would only add
        latency (under at_least_once the commit may be 30 s away)."""
        tasks = gen.tasks
        if any(t.buffered() for t in tasks.tasks.values()):
            return False
        return not any(self._lagging(gen, tp) for parts in tasks.partitions.values()
                       for tp in parts)

    def _processable(self, gen: ClientGeneration, task_id: TaskId, task: StreamTask,
                     now: float) -> int | None:
        """How many records may be processed now: None = all buffered, 0 = wait (idling)."""
        parts = gen.tasks.partitions[task_id]
        if len(parts) == 1:
            return None
        queues = task.queues
        sizes = [len(queues[tp]) if tp in queues else 0 for tp in parts]
        idle_since = gen.tasks.idle_since
        if all(sizes):
            idle_since.pop(task_id, None)
            return min(sizes)
        if not any(sizes):
            return 0
        idle = self.config.max_task_idle_ms
        if idle < 0:
            return None
        for tp, size in zip(parts, sizes, strict=True):
            if size == 0 and self._lagging(gen, tp):
                return 0  # the broker has data for the empty partition: wait for the fetch
        if idle > 0:
            since = idle_since.setdefault(task_id, now)
            if (now - since) * 1000 < idle:
                return 0
        return None

    def _lagging(self, gen: ClientGeneration, tp: tuple[str, int]) -> bool:
        consumer = gen.consumer
        key = TopicPartition(*tp)
        end = self.guarantee.end_offset(consumer, key)
        position = fetch_position(consumer, key)
        return end is None or position is None or position < end

    def _apply_backpressure(self, gen: ClientGeneration) -> None:
        consumer = gen.consumer
        limit = self.config.buffered_records_per_partition
        paused = consumer.paused()
        to_pause, to_resume = [], []
        for task in gen.tasks.tasks.values():
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

    # -- rebalances ---------------------------------------------------------------------------

    def _member_info(self) -> MemberInfo:
        return MemberInfo(self.state_dir.process_id, set(self.tasks),
                          self.state_dir.task_ids_on_disk(), self.config.application_server or "",
                          self.host.shutdown_requested())

    async def on_revoked(self, gen: ClientGeneration, revoked: list[TopicPartition]) -> None:
        self.assignment_version += 1
        gen.rebalancing = True
        if gen.closed or self.failure is not None:
            return
        async with self.lock:
            if gen.closed:
                return
            self.host.set_state("REBALANCING")
            if gen.tasks.tasks:
                try:
                    await gen.committer.commit(force=True)
                except (Exception, asyncio.CancelledError) as exc:
                    # aiokafka swallows listener errors: hand it over to the loop (and a
                    # cancellation of one of aiokafka's own operations is a failure too).
                    if isinstance(exc, asyncio.CancelledError) and \
                            asyncio.current_task().cancelling():  # type: ignore[union-attr]
                        raise
                    log.warning("commit before the rebalance failed: %r", exc)
                    self.failure = exc
                    return
            for task in gen.tasks.tasks.values():
                task.queues.clear()  # refetched from the committed offsets after the rebalance
            gen.tasks.idle_since.clear()

    async def on_assigned(self, gen: ClientGeneration, assigned: list[TopicPartition]) -> None:
        self.assignment_version += 1
        if gen.closed or self.failure is not None:
            return
        assert self.layout is not None
        async with self.lock:
            if gen.closed:
                return
            previous, current = gen.committer.group, group_metadata(gen.consumer, self.app_id)
            gen.committer.group = current
            tasks = gen.tasks
            if tasks.tasks and _left_the_group(previous, current):
                await self._drop_lost_tasks(gen, previous, current)
            wanted = {TaskId(self.layout.topic_to_sub[tp.topic], tp.partition) for tp in assigned}
            standby = set(gen.assignor.assigned.standby) - wanted if gen.assignor else set()
            for task_id in [t for t in tasks.tasks if t not in wanted]:
                tasks.close(task_id, clean=True)
            for task_id in [t for t in tasks.standbys if t not in standby]:
                # before the active is created: it restores from the standby's checkpoint
                tasks.close_standby(task_id, "PROMOTED" if task_id in wanted else "MIGRATED")
            created = wanted - set(tasks.tasks)
            for task_id in sorted(created):
                tasks.create(task_id)
            for task_id in sorted(standby - set(tasks.standbys)):
                tasks.create_standby(task_id)
            try:
                await self._seek_to_start_positions(gen, assigned, created)
            except Exception as exc:
                log.warning("fetching the committed offsets failed: %r", exc)
                self.failure = exc
                return
            log.info("assigned tasks %s (restoring %s)", ", ".join(map(str, sorted(wanted))),
                     ", ".join(map(str, sorted(tasks.restoring))) or "none")
            if not tasks.restoring:
                self.host.set_state("RUNNING")
        self.assignment_version += 1
        gen.rebalancing = False

    async def _drop_lost_tasks(self, gen: ClientGeneration, previous: GroupMetadata | None,
                               current: GroupMetadata) -> None:
        """This member was out of the group for a while (its session expired while the process
        was paused or starved, and it rejoined as a new member): other instances may have run
        its tasks and committed past its local state meanwhile. Kafka's consumer reports the
        partitions as lost and Kafka Streams closes their tasks dirty; so do we, giving up
        whatever the open transaction (or the collector) holds. Tasks assigned again are
        created afresh and restore from the changelogs; keeping them would answer from state
        that misses everything the other owner processed."""
        log.warning("this member was out of the group (generation %s, member %s -> generation "
                    "%d, member %s): closing its %d task(s) dirty to restore them",
                    previous.generation_id if previous else None,
                    previous.member_id if previous else None, current.generation_id,
                    current.member_id, len(gen.tasks.tasks))
        await gen.committer.abort(None)
        gen.tasks.close_all(clean=False)

    async def _seek_to_start_positions(self, gen: ClientGeneration,
                                       assigned: list[TopicPartition],
                                       created: set[TaskId]) -> None:
        """Put every assigned partition where its task starts, in the same step as the
        assignment version moves on: records the fetcher handed over meanwhile are dropped
        by the loop, and would be lost if nothing set the positions back.

        The committed offsets are fetched with ``require_stable`` (KIP-447; the Java consumer
        always asks so): a zombie's open transaction that already holds offsets for these
        partitions is waited for, so its commit (or abort) decides where this instance
        starts, never both. A partition without a committed offset starts at its beginning
        (``auto.offset.reset=earliest``, as Kafka Streams sets it). The tasks just
        ``created`` take up the stream time and processor metadata committed with the
        offsets (KAFKA-7994, KIP-825)."""
        consumer = gen.consumer
        committed = await fetch_stable_committed(
            consumer, self.app_id, assigned,
            timeout_s=2 * self.config.transaction_timeout_ms / 1000 + 30)
        offsets = {tp: offset for tp, (offset, _metadata) in committed.items()}
        fresh = [tp for tp in assigned if tp not in offsets]
        beginnings = await consumer.beginning_offsets(fresh) if fresh else {}
        if gen.closed:
            return
        for tp, offset in (*offsets.items(), *beginnings.items()):
            consumer.seek(tp, offset)
        starts = {(tp.topic, tp.partition): offset
                  for tp, offset in (*offsets.items(), *beginnings.items())}
        gen.tasks.resume_from_committed(
            created, {(tp.topic, tp.partition): c for tp, c in committed.items()}, starts)
        gen.tasks.set_restore_limits(starts)


class _Listener(ConsumerRebalanceListener):
    def __init__(self, thread: StreamThread, gen: ClientGeneration) -> None:
        self.thread = thread
        self.gen = gen

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.thread.on_revoked(self.gen, list(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.thread.on_assigned(self.gen, list(assigned))


def lost_broker(exc: BaseException) -> bool:
    """The broker went away or timed out: ``exc`` or what caused it is retriable or a lost
    connection. aiokafka's producer sender dies of a connection lost in mid-request (a
    cluster node killed while it looked up a coordinator) and fails every batch with a plain
    ``KafkaError("Unexpected error during batch delivery")`` caused by it: fresh clients
    recover from that, as from the connection error itself."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (*LOST_BROKER_ERRORS, ConnectionError)) or \
                getattr(seen, "retriable", False):
            return True
        seen = seen.__cause__
    return False


def _left_the_group(previous: GroupMetadata | None, current: GroupMetadata) -> bool:
    """True if ``current`` is not the generation right after ``previous`` for the same member:
    a new member id (the coordinator had removed this one) or a generation skipped (one this
    member was not part of). An eager rebalance this member took part in moves the generation
    by exactly one."""
    if previous is None:
        return False
    return (current.member_id != previous.member_id
            or current.generation_id != previous.generation_id + 1)
