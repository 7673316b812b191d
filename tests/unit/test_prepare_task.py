"""Where restoration starts: the changelog offsets stored in each store's own database.

A store's writes reach RocksDB only with the changelog offsets of the commit that made them
(streams/state/rocksdb.py), so a task restarts from the offsets its stores hold, under either
guarantee, and wipes nothing. The ``.checkpoint`` file of earlier versions is read once, for
upgrades; a store with data but neither (an unclean stop under such a version) is rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from streams import Serdes
from streams.processor.api import TaskId
from streams.runtime.restore import prepare_task, read_checkpoint, write_checkpoint
from streams.state.kv import KeyValueStore
from streams.state.memory import InMemoryBytesStore
from streams.state.rocksdb import RocksDBBytesStore

TP = ("app-counts-changelog", 1)


def _store(task_dir: Path) -> KeyValueStore:
    return KeyValueStore("counts", RocksDBBytesStore("counts", task_dir / "rocksdb" / "counts"),
                         Serdes.string(), Serdes.long())


def _task(task_dir: Path, stores: dict[str, object]) -> SimpleNamespace:
    return SimpleNamespace(task_dir=task_dir, stores=stores, task_id=TaskId(0, 1),
                           changelog_topic=lambda name: f"app-{name}-changelog")


def _topology(*logged: str) -> SimpleNamespace:
    return SimpleNamespace(stores={name: SimpleNamespace(logging=True, source_changelog=None)
                                   for name in logged})


def test_a_store_restarts_from_its_stored_offset_and_keeps_its_data(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put("a", 1)
    store.flush()
    store.commit({TP: 42})
    store.put("b", 2)  # never committed: a crash (or a dirty close) drops it
    store.close()
    store = _store(tmp_path)
    state = prepare_task(_task(tmp_path, {"counts": store}), _topology("counts"))
    assert state.start == {TP: 42}
    assert list(store.all()) == [("a", 1)]
    store.close()


def test_an_old_checkpoint_file_is_moved_into_the_store(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put("a", 1)
    store.flush()
    store.commit()  # data written as an earlier version did: no offsets in the database
    write_checkpoint(tmp_path, {TP: 7})
    state = prepare_task(_task(tmp_path, {"counts": store}), _topology("counts"))
    assert state.start == {TP: 7}
    assert list(store.all()) == [("a", 1)]
    assert read_checkpoint(tmp_path) is None
    assert store.stored_offsets() == {TP: 7}  # so a crash from here on still knows it
    store.close()


def test_a_store_with_data_but_no_offsets_is_wiped(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.put("a", 1)
    store.flush()
    store.commit()  # an unclean stop under an earlier version: no checkpoint, no offsets
    memory = KeyValueStore("buffer", InMemoryBytesStore("buffer"), Serdes.string(),
                           Serdes.long())
    state = prepare_task(_task(tmp_path, {"counts": store, "buffer": memory}),
                         _topology("counts", "buffer"))
    assert list(store.all()) == []
    assert state.start == {TP: None, ("app-buffer-changelog", 1): None}
    store.close()
