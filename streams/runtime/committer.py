"""Kafka Streams' commit: flush the stores and record caches, send what they forwarded, then
commit the input offsets (atomically with the output under exactly_once_v2).

Under exactly_once_v2 the offsets go in TxnOffsetCommit v3 with the group metadata of the
generation that assigned the tasks (KIP-447): if the group has moved on (this instance was
paused past its session timeout, or kicked out), the group coordinator refuses them, the
transaction is aborted and nothing of the stale generation becomes visible.

With ``background`` the transaction is finished in a task while the stream thread goes on
processing; what it produces meanwhile stays in the record collector and is handed to the
producer in the next transaction, only once this one committed.

The stores' writes of the interval reach RocksDB only once the commit succeeded, with the
changelog offsets it delivered (``TaskManager.commit_stores``, see restore.py).

Under at_least_once the offsets are committed only once every record produced before them was
delivered, as Kafka Streams flushes its producer first. A batch the producer gave up on (still
undelivered after ``delivery.timeout.ms``, or refused by the broker) goes to the production
exception handler as in Kafka's ``RecordCollectorImpl``: FAIL (the default) stops the thread
with those input offsets uncommitted; CONTINUE drops the batch, says so, and commits.

Also under at_least_once, every produce request waits for the group membership lease
(streams/kafka/lease.py, ``guard_membership``): an instance paused past its session timeout
never writes what it held after the new owner's writes; its held batches fail with
``MembershipLostError``, which means "tasks migrated" (the tasks close dirty and the thread
rejoins without committing), never a production failure. So the commit asks no Heartbeat of
its own before it flushes: the lease answers that question for every request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.errors import KafkaError

from ..kafka.batching import RecordCollector
from ..kafka.internals import (
    FencedByGroupError,
    GroupFencedOffsets,
    GroupMetadata,
    MembershipLease,
    check_membership,
    group_metadata,
    guard_produce_with_membership,
    rebalance_timeout_ms,
)
from ..processor.errors import (
    ErrorHandlerContext,
    ErrorHandling,
    HandlerFailedError,
    HandlerResponse,
    ProducerRecord,
)
from .guarantee import ProcessingGuarantee
from .task_manager import TaskManager

log = logging.getLogger(__name__)


class TaskMigrated(Exception):
    """This instance lost its tasks (fenced, or the group moved on): rejoin with clean state."""


class Committer:
    def __init__(self, app_id: str, guarantee: ProcessingGuarantee, tasks: TaskManager,
                 consumer: AIOKafkaConsumer,
                 producer: AIOKafkaProducer, collector: RecordCollector,
                 repartition_topics: set[str], purge_interval_ms: int,
                 admin: AIOKafkaAdminClient | None, errors: ErrorHandling | None = None) -> None:
        self.app_id = app_id
        self.errors = errors or ErrorHandling()
        self.eos = guarantee.exactly_once  # a transaction per commit
        self.tasks = tasks
        self.consumer = consumer
        self.producer = producer
        self.collector = collector
        self.repartition_topics = repartition_topics
        self.purge_interval_ms = purge_interval_ms
        self.admin = admin
        self.fenced_offsets = GroupFencedOffsets(producer) if self.eos else None
        self.group: GroupMetadata | None = None  # of the generation that assigned the tasks
        self.in_txn = False
        self.pending: asyncio.Task[None] | None = None
        self.last_commit = time.monotonic()
        self.dirty = False  # processed something since the last commit
        self.last_purge = time.monotonic()
        self.to_purge: dict[tuple[str, int], int] = {}
        self.lease: MembershipLease | None = None  # at_least_once: see guard_membership

    def guard_membership(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """at_least_once: send a produce request only while the group membership lease holds,
        renewing it with a Heartbeat for the tasks' generation when it has run out (lease.py).
        Under exactly_once_v2 the transaction fences a zombie instead (KIP-447): whatever it
        writes after its generation is gone stays in a transaction that is aborted and never
        read, so the guard is not installed there."""
        if self.eos:
            return
        self.lease = MembershipLease(session_timeout_ms, rebalance_timeout_ms(self.consumer),
                                     heartbeat_interval_ms)
        guard_produce_with_membership(self.consumer, self.producer, self.lease,
                                      self._renew_membership)

    async def _renew_membership(self) -> None:
        group = self.group or group_metadata(self.consumer, self.app_id)
        await check_membership(self.consumer, group)

    async def begin_txn(self) -> None:
        if not self.in_txn:
            await self.producer.begin_transaction()
            self.in_txn = True

    async def await_pending(self) -> None:
        """Wait for the EOS commit in flight (raising what it raised)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            await pending

    def pending_done(self) -> bool:
        return self.pending is not None and self.pending.done()

    async def commit(self, force: bool = False, background: bool = False) -> None:
        await self.await_pending()
        # No membership check before the flush under at_least_once: the lease already gates
        # every produce request the flush makes (guard_membership), and the offset commit
        # carries the generation for the coordinator to refuse. A Heartbeat here added a
        # round trip to every commit (about half the commit latency of a caught-up count app)
        # and closed no window the lease leaves open.
        offsets: dict[TopicPartition, tuple[int, str]] = {}
        for task_id, task in self.tasks.running():
            task.flush()
            offsets.update(self._committable(task_id, task))
        await self.collector.flush()
        self.dirty = False
        if self.eos:
            if not (self.in_txn or offsets):
                self.tasks.commit_stores()  # nothing was sent: no transaction to wait for
                return
            group = self.group
            current = group_metadata(self.consumer, self.app_id)
            if group is None or (current.generation_id, current.member_id) != \
                    (group.generation_id, group.member_id):
                raise TaskMigrated("the group generation changed before the commit")
            await self.begin_txn()
            self.last_commit = time.monotonic()
            finish = self._finish_txn(offsets, group, force)
            if background:
                self.pending = asyncio.ensure_future(finish)
            else:
                await finish
            return
        await self.producer.flush()
        await self.collector.wait_delivered(self._delivery_failed)
        if offsets:
            await self.consumer.commit(offsets)
        elif self.lease is not None and self.tasks.tasks and not self.lease.holds():
            # An idle commit sends nothing that could fail. Once the lease has run out (no
            # Heartbeat answered for most of a session: a broker outage, a lost membership),
            # ask the group here, so that an idle instance notices too and rejoins.
            await self._renew_membership()
        await self._committed(offsets, force)

    def _delivery_failed(self, tp: tuple[str, int], count: int, exc: BaseException) -> None:
        """at_least_once: a batch was not delivered. Kafka's producer only gives up after
        ``delivery.timeout.ms`` (or on a refusal), and Kafka Streams hands that error to the
        production exception handler (``RecordCollectorImpl.recordSendError``) before any
        offset is committed; so do we. Two exceptions, both rejoining with fresh clients and
        the input offsets uncommitted: aiokafka's sender task died (a connection lost
        mid-request fails every batch with a plain KafkaError caused by it), which Kafka's
        producer does not do; and the membership lease held the batch back because this member
        is (or may be) out of the group, which is a migration, not a production failure."""
        if type(exc) is KafkaError and exc.__cause__ is not None:
            raise exc
        if isinstance(exc, FencedByGroupError):
            raise exc  # held by the membership lease, never sent: tasks migrated
        topic, partition = tp
        context = ErrorHandlerContext(topic, partition, None, (), -1, None, None,  # type: ignore[arg-type]
                                      None, None)
        record = ProducerRecord(topic, None, None, -1, (), partition)
        reason = f"{type(exc).__name__}: {exc}"
        # The same asking as for a record (ErrorHandling.respond); a handler that raises or
        # answers nonsense fails the thread as FAIL does, keeping the offsets uncommitted. A
        # batch has no source record to dead-letter, so DEAD_LETTER is a FAIL here.
        response = ErrorHandling.respond(
            self.errors.production, context, record, exc,
            f"{count} undelivered record(s) for {topic}-{partition}", HandlerFailedError)
        if response is not HandlerResponse.CONTINUE:
            log.error("%d record(s) for %s-%d were not delivered (%s); the production exception "
                      "handler said %s: the input offsets since the last commit stay "
                      "uncommitted", count, topic, partition, reason, response)
            raise HandlerFailedError(
                f"{count} record(s) for {topic}-{partition} were not delivered ({reason}); the "
                f"production exception handler said {response.name}") from exc
        log.warning("dropping %d undelivered record(s) for %s-%d (%s): the production exception "
                    "handler said CONTINUE", count, topic, partition, reason)

    def _committable(self, task_id: Any, task: Any) -> dict[TopicPartition, tuple[int, str]]:
        """The task's input offsets to commit, each with its metadata string (partition time
        and processor metadata, see processor/commit_metadata.py): the partitions it consumed
        since the last commit, and all of its partitions when its processor metadata changed
        (Kafka's ``committableOffsetsAndMetadata``), at the offset it reached, else the one
        committed or where it started."""
        committed = self.tasks.committed
        result = {}
        for tp, offset in task.consumed.items():
            if offset > committed.get(tp, -1):
                result[TopicPartition(*tp)] = (offset, task.committed_metadata(tp))
        if task.processor_metadata_changed:
            task.processor_metadata_changed = False
            started = self.tasks.start_offsets
            for tp in self.tasks.partitions.get(task_id, ()):
                offset = task.consumed.get(tp, committed.get(tp, started.get(tp)))
                if offset is not None:
                    result[TopicPartition(*tp)] = (offset, task.committed_metadata(tp))
        return result

    async def _finish_txn(self, offsets: dict[TopicPartition, tuple[int, str]],
                          group: GroupMetadata, force: bool) -> None:
        # Every record of the transaction is in the log before its offsets are: a new owner
        # restores up to the high watermark it sees once the group has moved on, so a record
        # still in flight when the offsets committed (this process paused between the two)
        # would land after that mark and be missing from its state. And every batch must have
        # been written, or the transaction must not commit: aiokafka's producer fails a batch
        # on its own (a partition left without a leader past request.timeout.ms, a
        # non-retriable error) and still commits the transaction, where Kafka's producer
        # makes the transaction abortable. wait_delivered raises that batch's error, so the
        # transaction is aborted and the tasks restore (soak on a 3-node cluster, seed 622001:
        # 72 input records committed with none of their state).
        await self.producer.flush()
        await self.collector.wait_delivered()
        if offsets:
            assert self.fenced_offsets is not None
            await self.fenced_offsets.send_offsets(offsets, group)
        await self.producer.commit_transaction()
        self.in_txn = False
        await self._committed(offsets, force)

    async def _committed(self, offsets: dict[TopicPartition, tuple[int, str]],
                         force: bool) -> None:
        # Only now may the interval's store writes reach RocksDB, with the changelog offsets
        # just delivered (restore.py): a crash before this line restores them from the
        # changelog, an aborted transaction never gets here.
        self.tasks.commit_stores()
        for tp, (offset, _metadata) in offsets.items():
            self.tasks.committed[(tp.topic, tp.partition)] = offset
            if tp.topic in self.repartition_topics:
                self.to_purge[(tp.topic, tp.partition)] = offset
        self.last_commit = time.monotonic()
        if offsets and not force:
            await self._maybe_purge()

    async def abort(self, reason: BaseException | None) -> None:
        """Give up the open transaction (and whatever the collector still holds)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            try:
                await pending
            except BaseException as commit_exc:  # already failing; the abort below decides
                log.info("the commit in flight failed too: %r", commit_exc)
        self.collector.discard()
        if self.eos and self.in_txn:
            try:
                await self.producer.abort_transaction()
            except Exception as abort_exc:  # fenced producers cannot abort; the broker will
                log.info("abort after %r failed: %r", reason, abort_exc)
        self.in_txn = False

    async def _maybe_purge(self) -> None:
        """DeleteRecords below the committed offsets of consumed repartition partitions."""
        now = time.monotonic()
        if not self.to_purge or self.admin is None or \
                (now - self.last_purge) * 1000 < self.purge_interval_ms:
            return
        self.last_purge = now
        request: dict[TopicPartition, Any] = {
            TopicPartition(*tp): RecordsToDelete(o) for tp, o in self.to_purge.items()}
        self.to_purge = {}
        try:
            await self.admin.delete_records(request)
        except Exception as exc:  # purging is an optimisation; never fail processing for it
            log.warning("purging repartition topics failed: %r", exc)
