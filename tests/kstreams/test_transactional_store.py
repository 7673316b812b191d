"""Transactional RocksDB stores: a commit interval's writes reach the database only with the
changelog offsets of their commit, in one atomic write; reads see the database with the task's
uncommitted writes laid over it and never flush them; a close without a commit drops them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from streams import Serdes
from streams.runtime.queries import ReadOnlyStoreView
from streams.state.kv import KeyValueStore
from streams.state.readonly import ReadOnlyStoreError, read_only_view
from streams.state.rocksdb import RocksDBBytesStore
from streams.state.stores import StoreBuilder, StoreInitContext
from streams.state.versioned import VersionedKeyValueStore
from streams.windowing import Window, Windowed

TP = ("app-s-changelog", 0)


def kv(path: Path) -> KeyValueStore:
    return KeyValueStore("s", RocksDBBytesStore("s", path / "s"), Serdes.string(),
                         Serdes.long())


def committed(path: Path) -> dict[bytes, bytes]:
    """What the database holds, read from a fresh handle after the store closed."""
    store = RocksDBBytesStore("s", path / "s")
    try:
        return dict(store.db.items())
    finally:
        store.close()


def test_writes_reach_the_database_only_with_their_commit(tmp_path: Path) -> None:
    store = kv(tmp_path)
    store.put("a", 1, 10)
    store.put("b", 2, 20)
    inner = store.inner
    assert inner.db.get(b"a") is None  # uncommitted...
    assert store.get("a") == 1  # ...but read by the task
    store.flush()
    assert inner.db.get(b"a") is None  # the commit started: still not in the database
    store.commit({TP: 5})
    assert inner.db.get(b"a") is not None
    assert store.stored_offsets() == {TP: 5}


def test_a_close_without_commit_drops_the_interval(tmp_path: Path) -> None:
    store = kv(tmp_path)
    store.put("a", 1)
    store.flush()
    store.commit({TP: 3})
    store.put("a", 2)
    store.put("b", 7)
    store.delete("a")
    store.close()  # a dirty close (aborted transaction, crash): nothing of it remains
    reopened = kv(tmp_path)
    assert list(reopened.all()) == [("a", 1)]
    assert reopened.stored_offsets() == {TP: 3}
    reopened.close()


def test_writes_after_the_commit_started_belong_to_the_next_one(tmp_path: Path) -> None:
    """Under exactly_once_v2 the transaction commits in the background while the task goes
    on: what it writes meanwhile must not ride on that commit."""
    store = kv(tmp_path)
    store.put("a", 1)
    store.flush()  # the commit starts
    store.put("a", 2)
    store.put("b", 3)
    assert store.get("a") == 2 and list(store.all()) == [("a", 2), ("b", 3)]
    store.commit({TP: 10})  # the transaction committed
    assert store.inner.db.get(b"b") is None
    assert list(store.all()) == [("a", 2), ("b", 3)]
    store.close()
    reopened = kv(tmp_path)
    assert list(reopened.all()) == [("a", 1)]
    assert reopened.stored_offsets() == {TP: 10}
    reopened.close()


def test_range_reads_overlay_without_flushing(tmp_path: Path) -> None:
    store = kv(tmp_path)
    for key, value in [("a", 1), ("c", 3), ("e", 5)]:
        store.put(key, value)
    store.flush()
    store.commit({TP: 1})
    store.put("b", 2)  # committing overlay
    store.delete("c")
    store.flush()
    store.put("d", 4)  # pending overlay
    store.put("b", 20)
    store.put("e", None)
    assert list(store.all()) == [("a", 1), ("b", 20), ("d", 4)]
    assert list(store.reverse_all()) == [("d", 4), ("b", 20), ("a", 1)]
    assert list(store.range("b", "d")) == [("b", 20), ("d", 4)]
    assert list(store.reverse_range("a", "c")) == [("b", 20), ("a", 1)]
    assert store.approximate_num_entries() == 3
    assert store.inner.uncommitted() == 5  # the scans flushed nothing
    assert dict(store.inner.db.items()) == {k: v for k, v in store.inner.db.items()}
    assert [k for k, _ in store.inner.db.items()] == [b"a", b"c", b"e"]
    # Writes during a scan do not disturb it (the overlay's range is taken when it starts).
    seen = []
    for key, _ in store.all():
        seen.append(key)
        store.put("z" + key, 0)
    assert seen == ["a", "b", "d"]
    store.close()


def test_window_and_session_stores_commit_both_databases(tmp_path: Path) -> None:
    ctx = StoreInitContext(tmp_path, lambda name: None, Serdes.string(), Serdes.long())
    window = StoreBuilder("w", "window", Serdes.string(), Serdes.long(),
                          retention_ms=1000, window_size_ms=10).build(ctx)
    session = StoreBuilder("ss", "session", Serdes.string(), Serdes.long(),
                           retention_ms=1000).build(ctx)
    window.put("k", 1, 0, timestamp=1)
    session.put(Windowed("k", Window(0, 5)), 9)
    for store, tp in ((window, ("w-cl", 0)), (session, ("ss-cl", 0))):
        store.flush()
        store.commit({tp: 4})
    window.put("k", 2, 10, timestamp=11)  # uncommitted
    session.put(Windowed("k", Window(7, 8)), 3)
    assert [v for _, v in window.fetch_all(0, 100)] == [1, 2]  # through the time index too
    assert [v for _, v in session.find_sessions_by_end(0, 100)] == [9, 3]
    window.close()
    session.close()
    window = StoreBuilder("w", "window", Serdes.string(), Serdes.long(),
                          retention_ms=1000, window_size_ms=10).build(ctx)
    session = StoreBuilder("ss", "session", Serdes.string(), Serdes.long(),
                           retention_ms=1000).build(ctx)
    assert [v for _, v in window.fetch_all(0, 100)] == [1]
    assert [v for _, v in session.find_sessions_by_end(0, 100)] == [9]
    assert window.stored_offsets() == {("w-cl", 0): 4}
    # A crash between the two databases' writes: the lower offset wins, the tail is replayed.
    window.index.commit({("w-cl", 0): 2})
    assert window.stored_offsets() == {("w-cl", 0): 2}
    window.close()
    session.close()


def test_read_only_views_see_uncommitted_writes_and_cannot_commit(tmp_path: Path) -> None:
    store = kv(tmp_path)
    store.put("a", 1)
    store.flush()
    store.put("b", 2)
    view = read_only_view(store)
    assert view.get("a") == 1 and list(view.all()) == [("a", 1), ("b", 2)]
    with pytest.raises(ReadOnlyStoreError):
        view.inner.commit({TP: 1})
    store.close()


def test_queries_from_another_thread_meet_no_conflict(tmp_path: Path) -> None:
    """A query thread reads while the owner writes, commits, closes and reopens the store
    (a rebalance, or a wipe before restoring): reads succeed or say the store is closed;
    RocksDB never refuses one for a concurrent close ("Already mutably borrowed")."""
    holder = {"store": kv(tmp_path)}
    app = type("App", (), {})()
    app.local_stores = lambda name: [holder["store"]]
    app.state = type("S", (), {"value": "RUNNING"})()
    view = ReadOnlyStoreView("s", app)  # type: ignore[arg-type]
    failures: list[BaseException] = []
    reads = [0]
    stop = threading.Event()

    def query() -> None:
        while not stop.is_set():
            try:
                view.get("k5")
                reads[0] += 1
                if reads[0] % 1000 == 0:
                    next(iter(view.all()), None)
            except Exception as exc:  # noqa: BLE001 - collected and checked below
                if "not available" not in str(exc):
                    failures.append(exc)

    reader = threading.Thread(target=query)
    reader.start()
    try:
        deadline = time.monotonic() + 4
        round_ = 0
        while time.monotonic() < deadline or reads[0] < 20:
            store = holder["store"]
            for i in range(20_000):  # a memtable that takes close() a while to flush
                store.put(f"k{i}", round_)
            store.flush()
            store.commit({TP: round_})
            round_ += 1
            if round_ % 2 == 0:
                store.close()
                holder["store"] = kv(tmp_path)
    finally:
        stop.set()
        reader.join()
        holder["store"].close()
    assert not failures, failures[:3]
    assert reads[0] >= 20


def test_a_versioned_store_commits_like_the_others(tmp_path: Path) -> None:
    """Versioned stores share the typed stores' commit (kv.TypedBytesStore): their writes
    reach RocksDB with their commit's offsets, so a restart restores only the tail (it wrote
    everything at every flush, stored no offsets, and was wiped and restored in full)."""
    def versioned() -> VersionedKeyValueStore:
        return VersionedKeyValueStore("s", RocksDBBytesStore("s", tmp_path / "s"),
                                      Serdes.string(), Serdes.long(), 1_000)

    store = versioned()
    store.put("a", 1, 10)
    store.flush()
    assert store.inner.db.get(b"a") is None  # the commit started: not in the database yet
    store.commit({TP: 4})
    store.put("a", 2, 20)  # never committed: a dirty close drops it
    assert store.get("a").value == 2
    store.close()
    reopened = versioned()
    assert reopened.stored_offsets() == {TP: 4}
    assert reopened.get("a").value == 1 and [r.value for r in reopened.versions("a")] == [1]
    reopened.close()
