"""Window and session stores: layout, ordering, retention, logging, restore, reopen."""

from __future__ import annotations

import struct

import pytest

from streams import Serdes, Window, Windowed
from streams.state.stores import StoreBuilder, StoreInitContext


class Log:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None, int]] = []

    def __call__(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.records.append((key, value, timestamp))


def make(tmp_path, kind="window", store_type="rocksdb", log=None, **extra):
    builder = StoreBuilder("s", kind, Serdes.string(), Serdes.long(), store_type, **extra)
    ctx = StoreInitContext(tmp_path, lambda name: log, Serdes.string(), Serdes.string())
    return builder.build(ctx)


@pytest.mark.parametrize("store_type", ["rocksdb", "memory"])
def test_fetch_orders_by_time_and_separates_prefix_keys(tmp_path, store_type) -> None:
    store = make(tmp_path, store_type=store_type, retention_ms=1000, window_size_ms=10)
    store.put("a", 3, 30, timestamp=35)
    store.put("a", 1, 10, timestamp=12)
    store.put("ab", 9, 20, timestamp=21)
    store.put("a", 2, 20, timestamp=29)
    store.flush()
    assert list(store.fetch("a", 0, 100)) == [(10, 1), (20, 2), (30, 3)]
    assert list(store.fetch("a", 15, 30)) == [(20, 2), (30, 3)]
    assert list(store.backward_fetch("a", 0, 100)) == [(30, 3), (20, 2), (10, 1)]
    assert store.fetch("a", 20) == 2
    assert store.fetch_with_timestamp("a", 20) == (2, 29)
    assert store.fetch("a", 40) is None
    assert list(store.fetch_range("a", "ab", 20, 30)) == [
        (Windowed("a", Window(20, 30)), 2), (Windowed("a", Window(30, 40)), 3),
        (Windowed("ab", Window(20, 30)), 9)]
    assert list(store.fetch_all(10, 20)) == [
        (Windowed("a", Window(10, 20)), 1), (Windowed("a", Window(20, 30)), 2),
        (Windowed("ab", Window(20, 30)), 9)]
    assert [w.window.start for w, _ in store.all()] == [10, 20, 20, 30]
    store.put("a", None, 20)
    assert list(store.fetch("a", 0, 100)) == [(10, 1), (30, 3)]
    store.close()


def test_retention_drops_old_windows(tmp_path) -> None:
    store = make(tmp_path, store_type="memory", retention_ms=100, window_size_ms=10)
    store.put("k", 1, 0)
    store.put("k", 2, 50)
    store.put("k", 3, 100)  # observed 100: start 0 <= 100 - 100 is expired
    assert list(store.fetch("k", 0, 200)) == [(50, 2), (100, 3)]
    store.put("k", 4, 0)  # a put to an expired window is ignored
    assert store.fetch("k", 0) is None
    # Kafka's fetchAll starts at observed - retention + 1 (AbstractRocksDBSegmentedBytesStore);
    # only emit-on-close's time-ordered scan still sees the window at the cutoff.
    assert [w.window.start for w, _ in store.fetch_all(0, 200)] == [50, 100]
    assert [w.window.start for w, _, _ in store.fetch_all_timestamped(0, 200)] == [0, 50, 100]
    store.flush()
    assert store.approximate_num_entries() == 3
    store.put("k", 5, 151)
    store.flush()
    assert list(store.fetch("k", 0, 200)) == [(100, 3), (151, 5)]
    assert store.approximate_num_entries() == 2


def test_changelog_key_layout_and_restore(tmp_path) -> None:
    log = Log()
    store = make(tmp_path, store_type="memory", log=log, retention_ms=1000, window_size_ms=10)
    store.put("k", 7, 20, timestamp=25)
    assert log.records == [(b"k" + struct.pack(">qi", 20, 0), struct.pack(">q", 7), 25)]
    copy = make(tmp_path / "copy", store_type="memory", retention_ms=1000, window_size_ms=10)
    for key, value, ts in log.records:
        copy.restore(key, value, ts)
    assert copy.fetch_with_timestamp("k", 20) == (7, 25)


def test_retain_duplicates_keeps_every_put(tmp_path) -> None:
    log = Log()
    store = make(tmp_path, store_type="memory", log=log, retention_ms=1000, window_size_ms=0,
                 retain_duplicates=True)
    store.put("k", 1, 5, timestamp=5)
    store.put("k", 1, 5, timestamp=5)
    store.put("k", 2, 6, timestamp=6)
    store.put("k", None, 6)  # ignored with duplicates, as in Kafka
    assert list(store.fetch("k", 0, 10)) == [(5, 1), (5, 1), (6, 2)]
    assert [key[-4:] for key, _, _ in log.records] == [struct.pack(">i", n) for n in (1, 2, 3)]


def test_rocksdb_window_store_survives_reopen(tmp_path) -> None:
    store = make(tmp_path, retention_ms=100, window_size_ms=10)
    store.put("k", 1, 10, timestamp=11)
    store.put("j", 2, 60, timestamp=61)
    store.flush()
    store.commit()  # close() drops what was not committed
    store.close()
    store = make(tmp_path, retention_ms=100, window_size_ms=10)
    assert list(store.fetch("k", 0, 100)) == [(10, 1)]
    assert store.observed == 60
    store.put("j", 3, 115)  # observed 115: window 10 (<= 15) expires even after reopen
    assert list(store.all()) == [(Windowed("j", Window(60, 70)), 2),
                                 (Windowed("j", Window(115, 125)), 3)]
    store.close()


@pytest.mark.parametrize("store_type", ["rocksdb", "memory"])
def test_session_store_find_sessions(tmp_path, store_type) -> None:
    store = make(tmp_path, "session", store_type, retention_ms=1000)
    a1, a2, b1 = (Windowed("a", Window(10, 12)), Windowed("a", Window(20, 20)),
                  Windowed("b", Window(0, 30)))
    store.put(a2, 1)
    store.put(a1, 2)
    store.put(b1, 3)
    store.put(Windowed("ab", Window(11, 11)), 4)
    # a record at 16 with gap 5 looks for end >= 11 and start <= 21
    assert list(store.find_sessions("a", 11, 21)) == [(a1, 2), (a2, 1)]
    assert list(store.find_sessions("a", 13, 21)) == [(a2, 1)]
    assert list(store.find_sessions("a", 0, 19)) == [(a1, 2)]
    assert list(store.backward_find_sessions("a", 0, 100)) == [(a2, 1), (a1, 2)]
    assert store.fetch_session("a", 10, 12) == 2
    store.remove(a1)
    store.put(Windowed("a", Window(10, 20)), 5)
    store.remove(a2)
    assert list(store.fetch("a")) == [(Windowed("a", Window(10, 20)), 5)]
    assert [w.key for w, _ in store.find_sessions_by_end(0, 100)] == ["ab", "a", "b"]
    assert [w.key for w, _ in store.fetch_range("a", "ab")] == ["a", "ab"]
    store.close()


def test_session_store_retention_and_reopen(tmp_path) -> None:
    log = Log()
    store = make(tmp_path, "session", log=log, retention_ms=10)
    store.put(Windowed("a", Window(0, 5)), 1)
    assert store.fetch_session("a", 0, 5) == 1
    store.put(Windowed("b", Window(15, 15)), 2)  # 5 <= 15 - 10: expired for per-key reads
    assert store.fetch_session("a", 0, 5) is None
    assert [w.key for w, _ in store.find_sessions_by_end(0, 20)] == ["a", "b"]
    store.put(Windowed("b", Window(15, 16)), 3)  # 5 < 16 - 10: gone everywhere
    assert [w.key for w, _ in store.find_sessions_by_end(0, 20)] == ["b", "b"]
    store.flush()
    store.commit()
    store.close()
    store = make(tmp_path, "session", retention_ms=10)
    assert [v for _, v in store.all()] == [2, 3]
    assert log.records[0] == (b"a" + struct.pack(">qq", 5, 0), struct.pack(">q", 1), 5)
    store.close()
