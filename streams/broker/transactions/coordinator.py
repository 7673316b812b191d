"""The transaction coordinator: producer epochs, transaction state and COMMIT/ABORT markers.

State machine (Kafka's): Empty -> Ongoing -> PrepareCommit|PrepareAbort ->
CompleteCommit|CompleteAbort. Every transition is written to ``__transaction_state`` and fsynced
before it takes effect, and a Prepare* state found at start is finished by writing its markers
again, so a crash between "commit decided" and "markers written" still ends in a committed
transaction, never a half-visible one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..protocol import ms
from ..records import build_control_batch, validate_produced
from ..topics import TRANSACTION_TOPIC, TopicError
from .state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TransactionLog,
    TxnMetadata,
)

if TYPE_CHECKING:
    from ..server import Broker

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
MAX_EPOCH = 32767 - 1
TIMEOUT_CHECK_INTERVAL_S = 1.0


def fenced_code(api_version: int, first_version_with_fenced: int) -> int:
    """PRODUCER_FENCED for new request versions, INVALID_PRODUCER_EPOCH for older ones."""
    return PRODUCER_FENCED if api_version >= first_version_with_fenced else INVALID_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.txns: dict[str, TxnMetadata] = {}
        self.by_producer_id: dict[int, TxnMetadata] = {}
        self.log: TransactionLog | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        topic = self.broker.topics.ensure_internal(
            TRANSACTION_TOPIC, self.broker.config.transaction_state_log_num_partitions
        )
        self.log = TransactionLog(topic)
        for meta in self.log.replay():
            self._index(meta)
        for meta in list(self.txns.values()):
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                log.info("finishing transaction %s left in %s", meta.transactional_id, meta.state)
                await self._finish(meta, meta.state == PREPARE_COMMIT)
        self.broker.spawn(self._abort_timed_out_loop())

    async def stop(self) -> None:
        return None

    def _index(self, meta: TxnMetadata) -> None:
        self.txns[meta.transactional_id] = meta
        self.by_producer_id[meta.producer_id] = meta

    async def _persist(self, meta: TxnMetadata, durable: bool = True) -> None:
        assert self.log is not None
        meta.updated_ms = _now()
        await self.log.write(meta, durable)

    # -- InitProducerId -----------------------------------------------------------------------

    async def init_producer_id(self, api_version: int, request: Any) -> dict[str, Any]:
        timeout = ms(request.transaction_timeout)
        if timeout <= 0 or timeout > self.broker.config.transaction_max_timeout_ms:
            return _init_result(INVALID_TRANSACTION_TIMEOUT)
        tid = request.transactional_id
        meta = self.txns.get(tid)
        if meta is None:
            meta = TxnMetadata(tid, self.broker.producer_ids.new_producer_id(), 0, timeout, EMPTY)
            self._index(meta)
            async with meta.lock:
                await self._persist(meta)
            return _init_result(NONE, meta.producer_id, meta.producer_epoch)
        async with meta.lock:
            given_pid = getattr(request, "producer_id", -1)
            given_epoch = getattr(request, "producer_epoch", -1)
            if given_pid != -1 and (given_pid, given_epoch) != (
                meta.producer_id, meta.producer_epoch
            ):
                return _init_result(fenced_code(api_version, 4))
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                return _init_result(CONCURRENT_TRANSACTIONS)
            self._bump_epoch(meta)
            if meta.state == ONGOING:
                # The previous incarnation left a transaction open: abort it under the new
                # epoch, which also fences any zombie still writing with the old one.
                await self._complete(meta, commit=False)
            meta.timeout_ms = timeout
            meta.state = EMPTY
            meta.partitions.clear()
            await self._persist(meta)
            return _init_result(NONE, meta.producer_id, meta.producer_epoch)

    def _bump_epoch(self, meta: TxnMetadata) -> None:
        if meta.producer_epoch >= MAX_EPOCH:
            self.by_producer_id.pop(meta.producer_id, None)
            meta.producer_id = self.broker.producer_ids.new_producer_id()
            meta.producer_epoch = 0
            self.by_producer_id[meta.producer_id] = meta
        else:
            meta.producer_epoch += 1

    # -- adding partitions --------------------------------------------------------------------

    def _check_producer(
        self, tid: str, pid: int, epoch: int, fenced: int
    ) -> tuple[TxnMetadata | None, int]:
        meta = self.txns.get(tid)
        if meta is None or meta.producer_id != pid:
            return None, INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return None, fenced
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return None, CONCURRENT_TRANSACTIONS
        return meta, NONE

    async def add_partitions(
        self, api_version: int, tid: str, pid: int, epoch: int, wanted: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        meta, code = self._check_producer(tid, pid, epoch, fenced_code(api_version, 2))
        if meta is None:
            return dict.fromkeys(wanted, code)
        async with meta.lock:
            missing = []
            for topic, partition in wanted:
                try:
                    self.broker.topics.partition(topic, partition)
                except TopicError:
                    missing.append((topic, partition))
            if missing:
                return {tp: UNKNOWN_TOPIC_OR_PARTITION if tp in missing else OPERATION_NOT_ATTEMPTED
                        for tp in wanted}
            await self._add(meta, wanted)
            return dict.fromkeys(wanted, NONE)

    async def _add(self, meta: TxnMetadata, partitions: list[tuple[str, int]]) -> None:
        new = [tp for tp in partitions if tp not in meta.partitions]
        if not new and meta.state == ONGOING:
            return
        if meta.state != ONGOING:
            meta.state = ONGOING
            meta.partitions.clear()
            meta.start_ms = _now()
        meta.partitions.update(new)
        await self._persist(meta)

    async def add_offsets(
        self, api_version: int, tid: str, pid: int, epoch: int, group_id: str
    ) -> int:
        meta, code = self._check_producer(tid, pid, epoch, fenced_code(api_version, 2))
        if meta is None:
            return code
        partition = self.broker.groups.offsets_partition_for(group_id)
        async with meta.lock:
            await self._add(meta, [partition])
        return NONE

    def check_offsets_commit(self, tid: str, pid: int, epoch: int, group_id: str) -> int:
        """TxnOffsetCommit: the producer must be current and have added the group's partition."""
        meta = self.txns.get(tid)
        if meta is None or meta.producer_id != pid:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return INVALID_PRODUCER_EPOCH
        if meta.state != ONGOING or (
            self.broker.groups.offsets_partition_for(group_id) not in meta.partitions
        ):
            return INVALID_TXN_STATE
        return NONE

    # -- produce-side verification ------------------------------------------------------------

    def verify_produce(self, pid: int, epoch: int, topic: str, partition: int) -> int:
        """A transactional batch must come from the current epoch into an added partition."""
        meta = self.by_producer_id.get(pid)
        if meta is None:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch < meta.producer_epoch:
            return INVALID_PRODUCER_EPOCH
        if meta.state != ONGOING or (topic, partition) not in meta.partitions:
            return INVALID_TXN_STATE
        return NONE

    # -- EndTxn -------------------------------------------------------------------------------

    async def end_txn(self, api_version: int, tid: str, pid: int, epoch: int, commit: bool) -> int:
        meta = self.txns.get(tid)
        if meta is None or meta.producer_id != pid:
            return INVALID_PRODUCER_ID_MAPPING
        async with meta.lock:
            if epoch != meta.producer_epoch:
                return fenced_code(api_version, 2)
            if meta.state == ONGOING:
                await self._complete(meta, commit)
                return NONE
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                return CONCURRENT_TRANSACTIONS
            if (meta.state == COMPLETE_COMMIT and commit) or (
                meta.state == COMPLETE_ABORT and not commit
            ):
                return NONE  # a retry of the request that completed it
            return INVALID_TXN_STATE

    async def _complete(self, meta: TxnMetadata, commit: bool) -> None:
        meta.state = PREPARE_COMMIT if commit else PREPARE_ABORT
        await self._persist(meta)
        await self._finish(meta, commit)

    async def _finish(self, meta: TxnMetadata, commit: bool) -> None:
        """Write markers to every partition of the transaction, then mark it complete."""
        now = _now()
        flushes = []
        for topic, partition in sorted(meta.partitions):
            try:
                plog = self.broker.topics.partition(topic, partition)
            except TopicError:
                continue  # deleted since: nothing left to mark
            batch = build_control_batch(meta.producer_id, meta.producer_epoch, commit, now)
            plog.append(bytearray(batch), validate_produced(batch))
            flushes.append(plog.flush_to(plog.next_offset))
        await asyncio.gather(*flushes)
        self.broker.groups.complete_transaction(meta.producer_id, commit)
        meta.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        meta.partitions.clear()
        # No fsync wait: if this record is lost in a crash, the durable Prepare* state makes
        # the restarted coordinator write the (idempotent) markers again and complete.
        await self._persist(meta, durable=False)

    # -- timeouts -----------------------------------------------------------------------------

    async def _abort_timed_out_loop(self) -> None:
        while True:
            await asyncio.sleep(TIMEOUT_CHECK_INTERVAL_S)
            try:
                await self.abort_timed_out()
            except Exception:
                log.exception("aborting timed-out transactions failed")

    async def abort_timed_out(self, now_ms: int | None = None) -> list[str]:
        now_ms = _now() if now_ms is None else now_ms
        aborted = []
        for meta in list(self.txns.values()):
            if meta.state != ONGOING or now_ms - meta.start_ms <= meta.timeout_ms:
                continue
            async with meta.lock:
                if meta.state != ONGOING:
                    continue
                log.info("aborting transaction %s after its %d ms timeout",
                         meta.transactional_id, meta.timeout_ms)
                self._bump_epoch(meta)  # fence the producer that went quiet
                await self._complete(meta, commit=False)
                aborted.append(meta.transactional_id)
        return aborted


def _init_result(code: int, pid: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}


def _now() -> int:
    return int(time.time() * 1000)
