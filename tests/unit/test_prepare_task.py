"""Where restoration starts: from a clean checkpoint, or from a wiped store.

A running task's RocksDB stores may hold updates whose changelog records were never delivered
(a crash between the two), under at_least_once as much as under exactly-once: an orphan
session window found by the fault harness came from exactly that. So the checkpoint is
consumed when a task starts, and without one the store is wiped, whatever the guarantee.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from streams.processor.api import TaskId
from streams.runtime.restore import prepare_task, read_checkpoint, write_checkpoint


class FakeStore:
    def __init__(self, persistent: bool = True) -> None:
        self.persistent = persistent
        self.wiped = False

    def wipe(self) -> None:
        self.wiped = True


def _task(task_dir: Path, stores: dict[str, FakeStore]) -> SimpleNamespace:
    return SimpleNamespace(task_dir=task_dir, stores=stores, task_id=TaskId(0, 1),
                           changelog_topic=lambda name: f"app-{name}-changelog")


def _topology(*logged: str) -> SimpleNamespace:
    return SimpleNamespace(stores={name: SimpleNamespace(logging=True, source_changelog=None) for name in logged})


def test_a_clean_checkpoint_is_used_once_and_nothing_is_wiped(tmp_path: Path) -> None:
    store = FakeStore()
    write_checkpoint(tmp_path, {("app-counts-changelog", 1): 42})
    state = prepare_task(_task(tmp_path, {"counts": store}), _topology("counts"))
    assert state.start == {("app-counts-changelog", 1): 42}
    assert not store.wiped
    # Consumed: a crash from here on leaves no checkpoint behind.
    assert read_checkpoint(tmp_path) is None


def test_without_a_checkpoint_persistent_stores_are_wiped(tmp_path: Path) -> None:
    rocks, memory = FakeStore(), FakeStore(persistent=False)
    state = prepare_task(_task(tmp_path, {"counts": rocks, "buffer": memory}),
                         _topology("counts", "buffer"))
    assert rocks.wiped, "a store that may be ahead of its changelog must be rebuilt"
    assert not memory.wiped  # in-memory stores start empty anyway
    assert state.start == {("app-counts-changelog", 1): None,
                           ("app-buffer-changelog", 1): None}
