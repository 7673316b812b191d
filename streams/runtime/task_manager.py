"""The active and standby tasks of one client generation (Kafka's TaskManager).

A task is created with the generation's record collector and lives no longer than that
generation: when the generation ends, every task it still has is closed. So a task can never
send into a producer that nothing flushes any more, while a newer producer commits its input
offsets.

A standby task (``num.standby.replicas``) has the stores of an active task on another instance
and nothing else: the state updater keeps them following the changelogs, and it never
processes a record. Its stores hold changelog records up to the position the updater reached
and store that position with them; a promotion (or a later assignment of the task here) then
restores only what the changelog gained since.

After every successful commit each running task's stores take in that interval's writes and
their changelog offsets in one atomic write (``commit_stores``); a task closed dirty drops
what was not committed (see restore.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from ..kafka.batching import RecordCollector
from ..processor.api import TaskId
from ..processor.task import StreamTask, TaskConfig
from ..topology.topology import Topology
from .restore import ChangelogState, prepare_task
from .state_updater import StateUpdater
from .topics import TopicLayout

log = logging.getLogger(__name__)


class TaskManager:
    def __init__(self, topology: Topology, layout: TopicLayout, task_config: TaskConfig,
                 collector: RecordCollector, updater: StateUpdater,
                 global_stores: dict[str, Any] | None, wall_clock: Any) -> None:
        self.topology = topology
        self.layout = layout
        self.task_config = task_config
        self.collector = collector
        self.updater = updater
        self.global_stores = global_stores
        self.wall_clock = wall_clock
        self.tasks: dict[TaskId, StreamTask] = {}
        self.partitions: dict[TaskId, list[tuple[str, int]]] = {}
        self.by_partition: dict[tuple[str, int], StreamTask] = {}
        self.changelogs: dict[TaskId, ChangelogState] = {}
        self.restoring: set[TaskId] = set()
        self.committed: dict[tuple[str, int], int] = {}
        self.start_offsets: dict[tuple[str, int], int] = {}  # where each partition started
        self.idle_since: dict[TaskId, float] = {}
        self.standbys: dict[TaskId, StreamTask] = {}

    def running(self) -> Iterator[tuple[TaskId, StreamTask]]:
        """The tasks that are restored (and so may process and commit)."""
        restoring = self.restoring
        return ((tid, task) for tid, task in self.tasks.items() if tid not in restoring)

    def create(self, task_id: TaskId) -> None:
        sub = self.layout.sub_topologies[task_id.subtopology]
        task = StreamTask(task_id, self.topology, sub, self.task_config, self.collector,
                          self.wall_clock, self.global_stores)
        parts = [(t, task_id.partition) for t in self.layout.sources[sub.id]
                 if task_id.partition < self.layout.partitions[t]]
        self.tasks[task_id] = task
        self.partitions[task_id] = parts
        for tp in parts:
            self.by_partition[tp] = task
        state = prepare_task(task, self.topology)
        self.changelogs[task_id] = state
        if state.stores:
            self.restoring.add(task_id)
            self.updater.add(task_id, state)

    def create_standby(self, task_id: TaskId) -> None:
        """Start a standby of ``task_id`` (a task without logged stores needs none)."""
        sub = self.layout.sub_topologies[task_id.subtopology]
        task = StreamTask(task_id, self.topology, sub, self.task_config, self.collector,
                          self.wall_clock, self.global_stores)
        state = prepare_task(task, self.topology)
        if not state.stores:
            task.close()
            return
        self.standbys[task_id] = task
        self.updater.add(task_id, state, standby=True)

    def close_standby(self, task_id: TaskId, reason: str = "MIGRATED") -> None:
        """Stop following the changelogs; the stores keep where they stand."""
        task = self.standbys.pop(task_id)
        offsets = self.updater.standby_offsets(task_id)
        self.updater.remove(task_id, reason)
        try:
            task.flush()
            task.commit_stores(offsets)
        finally:
            try:
                task.close()
            except Exception:
                log.exception("closing standby task %s failed", task_id)

    def mark_restored(self) -> list[TaskId]:
        """Move the tasks the updater finished to running; returns them."""
        done = [t for t in self.updater.drain_restored() if t in self.tasks]
        self.restoring.difference_update(done)
        return done

    def checkpoint_offsets(self, task_id: TaskId) -> dict[tuple[str, int], int]:
        """Per changelog partition, the next offset the local stores reflect."""
        state = self.changelogs.get(task_id)
        if state is None:
            return {}
        produced = self.collector.offsets
        task = self.tasks.get(task_id)
        consumed = task.consumed if task is not None else {}
        result = {}
        for tp in state.stores:
            # an input topic used as changelog: the stores reflect what was consumed
            written = consumed.get(tp, -1) if tp in state.source else produced.get(tp, -1)
            offset = max(written, state.restored.get(tp, -1))
            if offset >= 0:
                result[tp] = offset
        return result

    def commit_stores(self) -> None:
        """The commit succeeded: every running task's stores write what the commit flushed,
        with their changelog offsets, atomically (per store)."""
        for task_id, task in self.running():
            task.commit_stores(self.checkpoint_offsets(task_id))

    def resume_from_committed(self, task_ids: set[TaskId],
                              committed: dict[tuple[str, int], tuple[int, str]],
                              starts: dict[tuple[str, int], int]) -> None:
        """Where each assigned partition starts (``starts``), and for the tasks just created
        the stream time and processor metadata their last owner committed with the offsets
        (StreamTask.resume_from_committed); tasks kept from before go on with their own."""
        self.start_offsets.update(starts)
        for task_id in task_ids:
            task = self.tasks.get(task_id)
            if task is not None:
                task.resume_from_committed(
                    {tp: committed[tp][1] for tp in self.partitions[task_id] if tp in committed})

    def set_restore_limits(self, offsets: dict[tuple[str, int], int]) -> None:
        """Where each task starts consuming: input topics used as changelogs restore up to
        there (reuse.ktable.source.topics)."""
        changed = False
        for state in self.changelogs.values():
            for tp in state.source:
                if tp in offsets and tp not in state.limits:
                    state.limits[tp] = offsets[tp]
                    changed = True
        if changed:
            self.updater.limits_changed()

    def close(self, task_id: TaskId, clean: bool) -> None:
        task = self.tasks.pop(task_id)
        for tp in self.partitions.pop(task_id):
            self.by_partition.pop(tp, None)
            self.committed.pop(tp, None)
            self.start_offsets.pop(tp, None)
        restoring = task_id in self.restoring
        self.restoring.discard(task_id)
        self.updater.remove(task_id)
        if clean and not restoring:
            task.flush()
            task.commit_stores(self.checkpoint_offsets(task_id))
        self.changelogs.pop(task_id, None)
        self.idle_since.pop(task_id, None)
        try:
            task.close()
        except Exception:
            log.exception("closing task %s failed", task_id)

    def close_all(self, clean: bool) -> int:
        """Close every task (standbys keep where they stand: see the module docstring);
        returns how many active tasks there were."""
        count = len(self.tasks)
        for task_id in list(self.tasks):
            self.close(task_id, clean)
        for task_id in list(self.standbys):
            self.close_standby(task_id)
        return count
