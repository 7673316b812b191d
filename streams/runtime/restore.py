"""State restoration from changelog topics, and the per-task checkpoint file.

A task's ``.checkpoint`` (JSON: ``{"topic:partition": next_offset}``) says how far its local
stores already reflect the changelog. Restoring reads each changelog partition from there (or
from the beginning) up to its end offset, with read_committed under exactly-once. Under EOS the
checkpoint is deleted when a task starts and rewritten only on a clean close, so a missing
checkpoint means "unclean stop": the local stores are wiped and rebuilt from the changelog
(reference §3.2).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

log = logging.getLogger(__name__)

CHECKPOINT_FILE = ".checkpoint"


def read_checkpoint(task_dir: Path) -> dict[tuple[str, int], int] | None:
    path = task_dir / CHECKPOINT_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        log.warning("ignoring unreadable checkpoint %s", path)
        return None
    result = {}
    for key, offset in raw.items():
        topic, _, partition = key.rpartition(":")
        result[(topic, int(partition))] = int(offset)
    return result


def write_checkpoint(task_dir: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Write atomically (temp file + rename), as a crash may come at any moment."""
    task_dir.mkdir(parents=True, exist_ok=True)
    tmp = task_dir / (CHECKPOINT_FILE + ".tmp")
    tmp.write_text(json.dumps({f"{t}:{p}": o for (t, p), o in sorted(offsets.items())}))
    os.replace(tmp, task_dir / CHECKPOINT_FILE)


def delete_checkpoint(task_dir: Path) -> None:
    (task_dir / CHECKPOINT_FILE).unlink(missing_ok=True)


@dataclass
class ChangelogState:
    """Per task: which store each changelog partition feeds, and where restore starts/ended."""

    stores: dict[tuple[str, int], Any] = field(default_factory=dict)
    start: dict[tuple[str, int], int | None] = field(default_factory=dict)  # None: beginning
    restored: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset at end


def prepare_task(task: Any, topology: Any, eos: bool) -> ChangelogState:
    """Decide where each store's restore starts; wipe after an unclean stop under EOS."""
    state = ChangelogState()
    checkpoint = read_checkpoint(task.task_dir)
    for name, store in task.stores.items():
        if not topology.stores[name].logging:
            continue
        tp = (task.changelog_topic(name), task.task_id.partition)
        state.stores[tp] = store
        persistent = getattr(store, "persistent", True)
        start = checkpoint.get(tp) if (checkpoint is not None and persistent) else None
        if eos and start is None and persistent:
            log.info("task %s: no clean checkpoint for store %s, wiping it to restore from "
                     "the changelog", task.task_id, name)
            store.wipe()
        state.start[tp] = start
    if eos:
        delete_checkpoint(task.task_dir)
    return state


class Restorer:
    """Reads changelog partitions into stores before their tasks process anything."""

    def __init__(self, client_kwargs: dict[str, Any], eos: bool) -> None:
        self.client_kwargs = client_kwargs
        self.eos = eos

    async def restore(self, states: list[tuple[str, ChangelogState]]) -> int:
        """Restore every listed task's changelogs; returns the number of records applied."""
        targets: dict[TopicPartition, tuple[Any, ChangelogState]] = {}
        for _task_name, state in states:
            for (topic, partition), store in state.stores.items():
                targets[TopicPartition(topic, partition)] = (store, state)
        if not targets:
            return 0
        consumer = AIOKafkaConsumer(
            **self.client_kwargs, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed" if self.eos else "read_uncommitted")
        await consumer.start()
        try:
            return await self._restore(consumer, targets, [name for name, _ in states])
        finally:
            await consumer.stop()

    async def _restore(self, consumer: AIOKafkaConsumer,
                       targets: dict[TopicPartition, tuple[Any, ChangelogState]],
                       task_names: list[str]) -> int:
        tps = list(targets)
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        beginnings = await consumer.beginning_offsets(tps)
        remaining: dict[TopicPartition, int] = {}
        total = 0
        for tp in tps:
            store, state = targets[tp]
            key = (tp.topic, tp.partition)
            start = state.start.get(key)
            start = beginnings[tp] if start is None else max(start, beginnings[tp])
            state.restored[key] = ends[tp]
            if start >= ends[tp]:
                continue
            consumer.seek(tp, start)
            remaining[tp] = ends[tp]
            total += ends[tp] - start
        if not remaining:
            return 0
        consumer.pause(*[tp for tp in tps if tp not in remaining])
        log.info("restoring %d changelog partition(s) of task(s) %s: up to %d records",
                 len(remaining), ", ".join(task_names), total)
        progress = _Progress(total)
        applied = 0
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=200, max_records=10_000)
            for tp, records in batch.items():
                store = targets[tp][0]
                restore = store.restore
                for record in records:
                    restore(record.key, record.value, record.timestamp)
                applied += len(records)
            for tp in list(remaining):
                if await consumer.position(tp) >= remaining[tp]:
                    targets[tp][0].flush()
                    del remaining[tp]
                    consumer.pause(tp)
            progress.update(applied)
        progress.done(applied)
        return applied


class _Progress:
    """A console progress bar (when stderr is a terminal) and a log line every few seconds."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.started = time.monotonic()
        self.last_log = self.started
        self.tty = sys.stderr.isatty()

    def _line(self, applied: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        share = min(applied / self.total, 1.0)
        bar = "#" * int(share * 30)
        return (f"restoring [{bar:<30}] {applied}/{self.total} records "
                f"({applied / elapsed:,.0f} records/s)")

    def update(self, applied: int) -> None:
        now = time.monotonic()
        if self.tty:
            sys.stderr.write("\r" + self._line(applied))
            sys.stderr.flush()
        if now - self.last_log >= 5:
            self.last_log = now
            log.info(self._line(applied))

    def done(self, applied: int) -> None:
        if self.tty:
            sys.stderr.write("\r" + self._line(applied) + "\n")
        elapsed = time.monotonic() - self.started
        log.info("restored %d records in %.2fs", applied, elapsed)
