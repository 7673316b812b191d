"""Background restoration of changelogs (Kafka's state updater, KIP-869).

Tasks with logged stores are handed to the updater when they are created; it reads their
changelog partitions up to the end offsets seen at that moment into the stores (the high
watermark under exactly-once too, read with read_committed: a previous owner's transaction still
open then is waited for, see ``streams.kafka.internals.high_watermarks``), while the stream thread goes on processing the tasks that are
already restored, and answering heartbeats and rebalances. A task revoked while restoring is
removed at once: the updater never touches its stores again. One updater belongs to one client
generation and is closed with it.

Standby tasks (``num.standby.replicas``) are kept here too, as in Kafka: their changelogs are
read on and on, never "restored", so a standby's stores follow the active's a moment behind and
a fail-over onto this instance restores only the tail. While any active task is restoring,
the standbys' partitions are paused: an active task waiting is worse than a standby lagging.
The listeners Kafka Streams offers are called from here: ``StateRestoreListener``
(``on_restore_start``, ``on_batch_restored``, ``on_restore_end``) for active restoration and
``StandbyUpdateListener`` (``on_update_start``, ``on_batch_loaded``, ``on_update_suspended``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from ..kafka import clients
from ..kafka.internals import fetch_position, high_watermarks, stop_client
from ..processor.api import TaskId
from .guarantee import ProcessingGuarantee
from .restore import ChangelogState

log = logging.getLogger(__name__)

BATCH_RECORDS = 10_000


@dataclass
class _Changelog:
    """One changelog partition being restored into one store."""

    task_id: TaskId
    store: Any
    state: ChangelogState
    next_offset: int | None = None  # None: not positioned yet
    end: int = 0
    sought: bool = False  # the restore consumer stands at next_offset
    standby: bool = False  # read on and on, never finished
    name: str = ""  # the store's name, for the listeners
    total: int = 0  # records applied
    announced: bool = False  # the listener was told the restoration started


class StateUpdater:
    def __init__(self, client_kwargs: dict[str, Any], guarantee: ProcessingGuarantee,
                 restore_listener: Any = None, standby_listener: Any = None) -> None:
        self.client_kwargs = client_kwargs
        self.guarantee = guarantee
        self.restore_listener = restore_listener
        self.standby_listener = standby_listener
        self._changelogs: dict[TopicPartition, _Changelog] = {}
        self._pending: dict[TaskId, set[TopicPartition]] = {}  # task -> partitions left
        self._standbys: dict[TaskId, set[TopicPartition]] = {}
        self._restored: list[TaskId] = []
        self._wakeup = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self._runner: asyncio.Task[None] | None = None
        self._assigned: frozenset[TopicPartition] = frozenset()
        self.failure: BaseException | None = None
        self.applied = 0

    # -- called by the stream thread (same event loop, never concurrently with the runner's
    #    record application, which has no await inside) -----------------------------------

    def add(self, task_id: TaskId, state: ChangelogState, standby: bool = False) -> None:
        """Start restoring ``task_id``'s stores (none left: it is restored at once), or, for a
        standby task, start following its changelogs."""
        parts = set()
        for (topic, partition), store in state.stores.items():
            tp = TopicPartition(topic, partition)
            self._changelogs[tp] = _Changelog(task_id, store, state, standby=standby,
                                              name=state.names.get((topic, partition), ""))
            parts.add(tp)
        if standby:
            self._standbys[task_id] = parts
        else:
            self._pending[task_id] = parts
            if not parts:
                self._finish(task_id)
                return
        self._wakeup.set()
        if self._runner is None:
            self._runner = asyncio.ensure_future(self._run())

    def remove(self, task_id: TaskId, reason: str = "MIGRATED") -> None:
        """Forget ``task_id`` (revoked or closed): its stores may be closed right after. A
        standby's listener hears ``on_update_suspended`` with ``reason`` (MIGRATED: the task
        went elsewhere; PROMOTED: it becomes active here)."""
        for tp in self._pending.pop(task_id, ()):
            self._changelogs.pop(tp, None)
        for tp in self._standbys.pop(task_id, ()):
            changelog = self._changelogs.pop(tp, None)
            if changelog is not None and changelog.next_offset is not None:
                self._tell(self.standby_listener, "on_update_suspended", tp, changelog.name,
                           changelog.next_offset, self._end_of(tp), reason)
        with contextlib.suppress(ValueError):
            self._restored.remove(task_id)
        self._wakeup.set()

    def standby_offsets(self, task_id: TaskId) -> dict[tuple[str, int], int]:
        """Per changelog partition of a standby task, the next offset its stores reflect."""
        result = {}
        for tp in self._standbys.get(task_id, ()):
            changelog = self._changelogs.get(tp)
            if changelog is not None and changelog.next_offset is not None:
                result[(tp.topic, tp.partition)] = changelog.next_offset
        return result

    def progress(self, task_id: TaskId) -> list[dict[str, Any]]:
        """Where each changelog partition of a restoring or standby task stands: the store,
        the next offset applied (None before positioning), the end it is heading for, and the
        records applied so far (the console's restore progress and standby lag)."""
        rows = []
        for tp in sorted(self._pending.get(task_id, set()) | self._standbys.get(task_id, set())):
            changelog = self._changelogs.get(tp)
            if changelog is None:
                continue
            end = self._end_of(tp) if changelog.standby else changelog.end
            rows.append({"store": changelog.name, "topic": tp.topic, "partition": tp.partition,
                         "position": changelog.next_offset, "end": end,
                         "applied": changelog.total})
        return rows

    def limits_changed(self) -> None:
        """Restore limits of input-topic changelogs arrived (TaskManager.set_restore_limits)."""
        self._wakeup.set()

    def restoring(self, task_id: TaskId) -> bool:
        return task_id in self._pending

    def drain_restored(self) -> list[TaskId]:
        """Tasks whose restoration finished since the last call."""
        done, self._restored = self._restored, []
        return done

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.cancel()
            # A client call inside the runner can absorb the cancellation (the runner then
            # waits on its wake-up event forever and close() never returned): cancel again
            # until it has ended.
            while not runner.done():
                await asyncio.wait({runner}, timeout=0.2)
                if not runner.done():
                    runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await stop_client(consumer)
        self._changelogs.clear()
        self._pending.clear()
        self._standbys.clear()

    # -- the runner ---------------------------------------------------------------------------

    def _finish(self, task_id: TaskId) -> None:
        if self._pending.pop(task_id, None) is not None:
            self._restored.append(task_id)

    async def _run(self) -> None:
        try:
            self._consumer = clients.consumer(
                self.client_kwargs, group_id=None, enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level=self.guarantee.isolation_level)
            await self._consumer.start()
            while True:
                if not self._changelogs:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                await self._position_new()
                await self._reassign()
                await self._restore_batch()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the thread rejoins with fresh clients
            log.warning("restoring changelogs failed: %r", exc)
            self.failure = exc

    async def _position_new(self) -> None:
        # An input topic used as changelog waits for its limit (the committed offset); a
        # standby does not follow one at all (it would run ahead of the committed offset,
        # which a promotion must not find), so a promoted task restores it from scratch.
        new = [tp for tp, c in self._changelogs.items() if c.next_offset is None
               and ((tp.topic, tp.partition) not in c.state.source
                    or (not c.standby and (tp.topic, tp.partition) in c.state.limits))]
        if not new:
            return
        assert self._consumer is not None
        # Under exactly-once: up to the high watermark, read_committed (see high_watermarks:
        # the LSO could stop before a previous owner's transaction that commits later).
        ends = (await high_watermarks(self._consumer, new) if self.guarantee.exactly_once
                else await self._consumer.end_offsets(new))
        beginnings = await self._consumer.beginning_offsets(new)
        for tp in new:
            changelog = self._changelogs.get(tp)
            if changelog is None or changelog.next_offset is not None:
                continue  # removed (or positioned) while we waited
            key = (tp.topic, tp.partition)
            start = changelog.state.start.get(key)
            start = beginnings[tp] if start is None else max(start, beginnings[tp])
            end = ends[tp]
            if key in changelog.state.limits:
                end = min(end, changelog.state.limits[key])  # an input topic: see restore.py
                start = min(start, end)
            ends[tp] = end
            if start > end and key not in changelog.state.limits:
                # The store says it holds more than the changelog has (the topic was deleted
                # and made again, or truncated): rebuild it, as Kafka does on an offset out of
                # range.
                log.warning("task %s: store %s holds changelog %s-%d up to offset %d, past its "
                            "end %d: wiping it to restore from the beginning",
                            changelog.task_id, changelog.name, tp.topic, tp.partition, start, end)
                changelog.store.wipe()
                start = beginnings[tp]
            changelog.next_offset, changelog.end = start, end
            if changelog.standby:  # its stores keep next_offset with each batch
                self._tell(self.standby_listener, "on_update_start", tp, changelog.name, start)
                continue
            changelog.state.restored[key] = ends[tp]
            if start < ends[tp]:
                log.info("task %s: restoring %s-%d from offset %d to %d", changelog.task_id,
                         tp.topic, tp.partition, start, ends[tp])
                changelog.announced = True
                self._tell(self.restore_listener, "on_restore_start", tp, changelog.name,
                           start, ends[tp])
        self._complete_caught_up()

    def _complete_caught_up(self) -> None:
        for tp, changelog in list(self._changelogs.items()):
            if changelog.standby:
                continue
            if changelog.next_offset is not None and changelog.next_offset >= changelog.end:
                self._store_progress(tp, changelog, changelog.end)
                del self._changelogs[tp]
                if changelog.announced:
                    self._tell(self.restore_listener, "on_restore_end", tp, changelog.name,
                               changelog.total)
                parts = self._pending.get(changelog.task_id)
                if parts is not None:
                    parts.discard(tp)
                    if not parts:
                        self._finish(changelog.task_id)

    async def _reassign(self) -> None:
        """Assign the partitions still restoring (aiokafka's assign resets positions, so every
        one is sought again to where its restoration stands)."""
        wanted = frozenset(tp for tp, c in self._changelogs.items() if c.next_offset is not None)
        assert self._consumer is not None
        if wanted != self._assigned:
            self._consumer.assign(list(wanted))
            self._assigned = wanted
            for tp in wanted:
                self._changelogs[tp].sought = False
        for tp in wanted:
            changelog = self._changelogs[tp]
            if not changelog.sought:  # new, or re-added after a removal: seek it
                self._consumer.seek(tp, changelog.next_offset)  # type: ignore[arg-type]
                changelog.sought = True

    async def _restore_batch(self) -> None:
        assert self._consumer is not None
        if not self._assigned:
            self._wakeup.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), 0.1)
            return
        started = time.monotonic()
        self._pause_standbys_while_restoring()
        fetching = {tp: c for tp, c in self._changelogs.items() if c.sought}
        batch = await self._consumer.getmany(timeout_ms=100, max_records=BATCH_RECORDS)
        for tp, records in batch.items():
            changelog = self._changelogs.get(tp)
            if changelog is None or changelog is not fetching.get(tp) or not records:
                continue  # its task was removed (or re-added) while we fetched
            if (not changelog.standby and records[-1].offset >= changelog.end
                    and (tp.topic, tp.partition) in changelog.state.source):
                # an input topic used as changelog goes on past the restore limit
                records = [r for r in records if r.offset < changelog.end]
                if not records:
                    continue
            restore = changelog.store.restore
            for record in records:
                restore(record.key, record.value, record.timestamp)
            self.applied += len(records)
            changelog.total += len(records)
            if changelog.standby:
                self._tell(self.standby_listener, "on_batch_loaded", tp, changelog.name,
                           changelog.task_id, records[-1].offset, len(records),
                           self._end_of(tp))
            elif changelog.announced:
                self._tell(self.restore_listener, "on_batch_restored", tp, changelog.name,
                           records[-1].offset, len(records))
        for tp in self._assigned:
            changelog = self._changelogs.get(tp)
            position = fetch_position(self._consumer, tp)
            if changelog is not None and changelog is fetching.get(tp) and position is not None:
                if position != changelog.next_offset:
                    self._store_progress(tp, changelog, position)
                changelog.next_offset = position
        self._complete_caught_up()
        if batch:
            log.debug("restored a batch of %d records in %.3fs",
                      sum(len(r) for r in batch.values()), time.monotonic() - started)

    @staticmethod
    def _store_progress(tp: TopicPartition, changelog: _Changelog, position: int) -> None:
        """Write what was restored into the store with the offset it reached (one atomic
        write): a crash while restoring goes on from here."""
        if (tp.topic, tp.partition) in changelog.state.source and not changelog.standby:
            position = min(position, changelog.end)  # records past the limit were not applied
        store = changelog.store
        store.flush()
        commit = getattr(store, "commit", None)
        if commit is not None:
            commit({(tp.topic, tp.partition): position})

    def _pause_standbys_while_restoring(self) -> None:
        assert self._consumer is not None
        standbys = [tp for tp in self._assigned if self._changelogs[tp].standby]
        if not standbys:
            return
        if self._pending:
            self._consumer.pause(*standbys)
        else:
            self._consumer.resume(*standbys)

    def _end_of(self, tp: TopicPartition) -> int | None:
        """The changelog's end as the last fetch saw it (for the standby listener)."""
        consumer = self._consumer
        if consumer is None:
            return None
        try:
            return self.guarantee.end_offset(consumer, tp)
        except Exception:  # not assigned (any more)
            return None

    @staticmethod
    def _tell(listener: Any, method: str, *args: Any) -> None:
        """Call a user's listener; its failure is logged, never the restoration's."""
        if listener is None:
            return
        callback = getattr(listener, method, None)
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            log.exception("the state listener's %s failed", method)
