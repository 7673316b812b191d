"""Read-only store views (interactive queries): same answers as the store, never a write.

A view must see the record cache's dirty entries and the RocksDB write batch's pending writes
exactly as the owning thread does, without flushing either, and refuse writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import Serdes
from streams.state.cache import CacheBudget
from streams.state.kv import KeyValueStore
from streams.state.memory import InMemoryBytesStore
from streams.state.readonly import ReadOnlyStoreError, read_only_view
from streams.state.rocksdb import RocksDBBytesStore
from streams.state.window import WindowStore


def _bytes_store(kind: str, tmp_path: Path, name: str = "s"):
    return (RocksDBBytesStore(name, tmp_path / name) if kind == "rocksdb"
            else InMemoryBytesStore(name))


@pytest.mark.parametrize("kind", ["rocksdb", "memory"])
@pytest.mark.parametrize("cached", [False, True])
def test_key_value_view_reads_like_the_store_and_never_flushes(kind, cached, tmp_path) -> None:
    inner = _bytes_store(kind, tmp_path)
    logged = []
    store = KeyValueStore("s", inner, Serdes.string(), Serdes.long(),
                          logger=lambda k, v, ts: logged.append(k))
    for i in range(10):
        store.put(f"k{i}", i, timestamp=i)
    store.flush()  # k0..k9 in RocksDB
    if cached:
        store.attach_cache(CacheBudget(1 << 20))
        assert store.enable_caching(lambda *change: None)
    store.put("k3", 33)      # pending (or dirty in the cache)
    store.delete("k5")       # a pending / cached delete hides the stored value
    store.put("k95", 95)     # a new key between k9 and nothing
    writes = len(logged)
    pending = dict(getattr(inner, "_pending", {}))
    dirty = store.cache.dirty if store.cache is not None else 0

    view = read_only_view(store)
    seen = list(view.all())
    assert [k for k, _ in seen] == [f"k{i}" for i in range(10) if i != 5] + ["k95"]
    assert dict(seen)["k3"] == 33
    assert list(view.range("k2", "k6")) == [("k2", 2), ("k3", 33), ("k4", 4), ("k6", 6)]
    assert list(view.reverse_range("k8", None)) == [("k95", 95), ("k9", 9), ("k8", 8)]
    assert view.get("k3") == 33 and view.get("k5") is None
    assert view.approximate_num_entries() == 10
    # nothing was flushed, written or logged by the reads
    assert dict(getattr(inner, "_pending", {})) == pending
    assert (store.cache.dirty if store.cache is not None else 0) == dirty
    assert len(logged) == writes
    with pytest.raises(ReadOnlyStoreError):
        view.put("k1", 1)
    assert view.get("k1") == 1 and list(store.all()) == seen  # the owner sees the same


def test_window_view_reads_pending_writes_without_flushing(tmp_path) -> None:
    store = WindowStore("w", _bytes_store("rocksdb", tmp_path, "w"),
                        _bytes_store("rocksdb", tmp_path, "w.idx"), Serdes.string(),
                        Serdes.long(), window_size_ms=10, retention_ms=1_000)
    store.put("a", 1, 0)
    store.flush()
    store.put("a", 2, 10)
    store.put("b", 3, 10)
    view = read_only_view(store)
    assert [(w.key, w.window.start, v) for w, v in view.fetch_all(0, 100)] == [
        ("a", 0, 1), ("a", 10, 2), ("b", 10, 3)]
    assert list(view.fetch("a", 0, 100)) == [(0, 1), (10, 2)]
    assert store.inner._pending  # still waiting for the owner's flush
    with pytest.raises(ReadOnlyStoreError):
        view.put("a", 5, 20)
