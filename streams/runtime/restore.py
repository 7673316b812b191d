"""Where a task's restoration starts: the changelog offsets stored in its own stores.

Each persistent store keeps, in the same RocksDB database as its data, the next changelog
offset of the last commit whose writes it took in (written in one atomic batch with them, see
``streams/state/rocksdb.py``). Writes of an interval reach the database only after their commit
succeeded (the changelog records are delivered, and under exactly_once_v2 the transaction is
committed), so a store is never ahead of its changelog, and after a crash, under either
guarantee, restoration reads only the changelog records after the stored offset, with
read_committed under exactly-once. Nothing is wiped: an aborted transaction's writes were never
in the database. A store with no stored offset (new, or its disk lost) restores from the
beginning; a store older than the committed changelog (an old disk) replays the tail from where
it stands, which is what it lacks.

The ``.checkpoint`` file (JSON ``{"topic:partition": next_offset}``) of earlier versions, written
on a clean close, is still read once for upgrades: its offsets are moved into the stores and the
file is deleted. A store with data, no stored offset and no checkpoint entry stopped uncleanly
under such a version: it is wiped and rebuilt, as before.
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
    """Decide where each store's restore starts (see the module docstring)."""
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
        start = None
        if getattr(store, "persistent", True):
            start = _stored_offset(store, tp)
            if start is None and checkpoint is not None and tp in checkpoint:
                start = checkpoint[tp]  # an upgrade: move the clean close's offset in
                store.commit({tp: start})
            elif start is None:
                log.info("task %s: store %s has no stored changelog offset, wiping it to "
                         "restore from the changelog", task.task_id, name)
                store.wipe()
        state.start[tp] = start
    delete_checkpoint(task.task_dir)
    return state


def _stored_offset(store: Any, tp: tuple[str, int]) -> int | None:
    stored_offsets = getattr(store, "stored_offsets", None)
    return None if stored_offsets is None else stored_offsets().get(tp)
