"""State restoration from changelog topics, and the per-task checkpoint file.

A task's ``.checkpoint`` (JSON: ``{"topic:partition": next_offset}``) says how far its local
stores reflect the changelog, and that they reflect nothing beyond it. Restoring reads each
changelog partition from there (or from the beginning) up to its end offset, with
read_committed under exactly-once. The checkpoint is deleted when a task starts and rewritten
only on a clean close, under either guarantee: while a task runs, its RocksDB stores are
written before the changelog records that mirror them are delivered (a range scan flushes the
pending writes at any moment), so after a crash local state may hold updates the changelog
never got. A missing checkpoint therefore means "unclean stop": the local stores are wiped and
rebuilt from the changelog. (Kafka Streams keeps RocksDB's WAL off and flushes stores only
after the offsets commit to the same end.)
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    names: dict[tuple[str, int], str] = field(default_factory=dict)  # store name (listeners)
    # Input topics used as changelogs (reuse.ktable.source.topics): restored only up to the
    # group's committed offset, which the stream thread supplies once it has fetched it
    # (records after it are processed again, and must find the store as it was before them).
    source: set[tuple[str, int]] = field(default_factory=set)
    limits: dict[tuple[str, int], int] = field(default_factory=dict)


def prepare_task(task: Any, topology: Any) -> ChangelogState:
    """Decide where each store's restore starts; wipe after an unclean stop."""
    state = ChangelogState()
    checkpoint = read_checkpoint(task.task_dir)
    for name, store in task.stores.items():
        source = topology.stores[name].source_changelog
        if not topology.stores[name].logging and source is None:
            continue
        tp = (task.changelog_topic(name), task.task_id.partition)
        if source is not None:
            state.source.add(tp)
        state.stores[tp] = store
        state.names[tp] = name
        persistent = getattr(store, "persistent", True)
        start = checkpoint.get(tp) if (checkpoint is not None and persistent) else None
        if start is None and persistent:
            log.info("task %s: no clean checkpoint for store %s, wiping it to restore from "
                     "the changelog", task.task_id, name)
            store.wipe()
        state.start[tp] = start
    delete_checkpoint(task.task_dir)
    return state
