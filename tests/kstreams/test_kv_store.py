"""Key-value stores: RocksDB and in-memory behave the same through the typed KeyValueStore.

Order is serialized-key order (byte order for strings, big-endian two's complement for ints),
ranges are inclusive, pending writes are visible before flush, every write is change-logged.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from streams import Serdes
from streams.state.changelogging import ChangeLoggingBytesStore
from streams.state.kv import KeyValueStore
from streams.state.memory import InMemoryBytesStore
from streams.state.rocksdb import RocksDBBytesStore
from streams.state.stores import StoreBuilder, StoreInitContext


@pytest.fixture(params=["rocksdb", "memory"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def make(kind: str, tmp_path: Path, *, timestamped: bool = True, logger=None,
         key_serde=None) -> KeyValueStore:
    inner = (RocksDBBytesStore("s", tmp_path / "s") if kind == "rocksdb"
             else InMemoryBytesStore("s"))
    return KeyValueStore("s", inner, key_serde or Serdes.string(), Serdes.long(),
                         timestamped=timestamped, logger=logger)


def test_put_get_delete(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    assert store.get("a") is None
    store.put("a", 1, 10)
    assert store.get("a") == 1
    assert store.get_with_timestamp("a") == (1, 10)
    store.put("a", 2, 20)
    assert store.get_with_timestamp("a") == (2, 20)
    assert store.delete("a") == 2
    assert store.get("a") is None
    assert store.delete("a") is None
    store.put("b", 3)
    store.put("b", None)  # a tombstone deletes
    assert store.get("b") is None
    assert list(store.all()) == []
    assert store.persistent is (kind == "rocksdb")


def test_put_if_absent_and_put_all(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    assert store.put_if_absent("a", 1, 5) is None
    assert store.put_if_absent("a", 9, 6) == 1
    store.put_all([("b", 2), ("c", 3)], 7)
    assert dict(store.all()) == {"a": 1, "b": 2, "c": 3}
    assert store.get_with_timestamp("c") == (3, 7)


def test_none_key_is_rejected(kind: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="None"):
        make(kind, tmp_path).put(None, 1)


def fill(store: KeyValueStore) -> None:
    for key in ["b", "a", "B", "aa", "c", "\u00e9", "ab"]:
        store.put(key, len(key))


def test_ranges_follow_byte_order_with_inclusive_bounds(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    fill(store)  # pending writes, not flushed: ranges must still see them
    byte_order = ["B", "a", "aa", "ab", "b", "c", "\u00e9"]  # 'B' < 'a'; é is 0xc3 0xa9
    assert [k for k, _ in store.all()] == byte_order
    assert [k for k, _ in store.reverse_all()] == byte_order[::-1]
    assert [k for k, _ in store.range("a", "b")] == ["a", "aa", "ab", "b"]
    assert [k for k, _ in store.reverse_range("a", "b")] == ["b", "ab", "aa", "a"]
    assert [k for k, _ in store.range("aa", "aa")] == ["aa"]
    assert [k for k, _ in store.range("ab0", "b0")] == ["b"]  # bounds need not exist
    assert list(store.range("x", "y")) == []
    assert list(store.range("c", "a")) == []  # from > to: empty
    # open bounds
    assert [k for k, _ in store.range(None, "aa")] == ["B", "a", "aa"]
    assert [k for k, _ in store.range("c", None)] == ["c", "\u00e9"]
    assert [k for k, _ in store.reverse_range(None, "a")] == ["a", "B"]
    assert [k for k, _ in store.reverse_range("c", None)] == ["\u00e9", "c"]
    assert dict(store.range("a", "ab")) == {"a": 1, "aa": 2, "ab": 2}


def test_integer_keys_order_by_serialized_bytes(kind: str, tmp_path: Path) -> None:
    """Big-endian two's complement: negative numbers sort after positive ones, as in Kafka."""
    store = make(kind, tmp_path, key_serde=Serdes.integer())
    for key in [3, -1, 0, 256, -256, 1]:
        store.put(key, key)
    assert [k for k, _ in store.all()] == [0, 1, 3, 256, -256, -1]
    assert [k for k, _ in store.range(1, 256)] == [1, 3, 256]


def test_deletes_are_visible_before_flush_and_in_ranges(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    fill(store)
    store.flush()
    store.delete("aa")
    store.put("b", None)
    store.put("new", 7)
    assert store.get("aa") is None
    assert [k for k, _ in store.range("a", "b")] == ["a", "ab"]
    assert store.get("new") == 7
    assert store.approximate_num_entries() == 6
    store.flush()
    assert store.approximate_num_entries() == 6
    assert [k for k, _ in store.range("a", "b")] == ["a", "ab"]


def test_writes_while_iterating_do_not_break_the_iterator(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    fill(store)
    seen = []
    for key, _ in store.all():
        seen.append(key)
        store.delete(key)
    assert len(seen) == 7
    assert list(store.all()) == []


def test_approximate_num_entries(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    assert store.approximate_num_entries() == 0
    for i in range(50):
        store.put(f"k{i}", i)
    store.put("k0", 100)  # overwrite, not a new entry
    assert store.approximate_num_entries() == 50


def test_timestamped_layout(kind: str, tmp_path: Path) -> None:
    """Kafka's timestamped store value: [timestamp: 8 bytes big-endian][value bytes]."""
    store = make(kind, tmp_path)
    store.put("a", 5, 1234)
    assert store.inner.get(b"a") == struct.pack(">q", 1234) + struct.pack(">q", 5)
    plain = make(kind, tmp_path / "plain", timestamped=False)
    plain.put("a", 5, 1234)
    assert plain.inner.get(b"a") == struct.pack(">q", 5)
    assert plain.get_with_timestamp("a") == (5, -1)
    store.put("b", 6)  # no timestamp given
    assert store.get_with_timestamp("b") == (6, -1)


def test_every_write_is_change_logged(kind: str, tmp_path: Path) -> None:
    logged: list[tuple[bytes, bytes | None, int]] = []
    store = make(kind, tmp_path, logger=lambda k, v, ts: logged.append((k, v, ts)))
    store.put("a", 1, 10)
    store.put_all([("b", 2)], 11)
    store.put_if_absent("a", 3, 12)  # present: no write, no log
    store.delete("a")
    long1, long2 = struct.pack(">q", 1), struct.pack(">q", 2)
    # the changelog carries the plain value; the timestamp goes in the record
    assert logged == [(b"a", long1, 10), (b"b", long2, 11), (b"a", None, -1)]


def test_restore_applies_changelog_records_without_logging(kind: str, tmp_path: Path) -> None:
    logged: list[object] = []
    store = make(kind, tmp_path, logger=lambda *args: logged.append(args))
    store.restore(b"a", struct.pack(">q", 7), 70)
    store.restore(b"b", struct.pack(">q", 8), 80)
    store.restore(b"a", None, 90)
    assert logged == []
    assert store.get("a") is None
    assert store.get_with_timestamp("b") == (8, 80)
    assert store.approximate_num_entries() == 1


def test_wipe_deletes_everything(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    fill(store)
    store.flush()
    store.put("pending", 1)
    store.wipe()
    assert list(store.all()) == []
    assert store.approximate_num_entries() == 0
    store.put("after", 1)  # usable after a wipe
    assert store.get("after") == 1


def test_rocksdb_data_survives_close_and_reopen(tmp_path: Path) -> None:
    store = make("rocksdb", tmp_path)
    fill(store)
    store.put("b", None)
    store.put("t", 9, 99)
    store.flush()
    store.commit()  # close() drops what was not committed
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.get("a")
    reopened = make("rocksdb", tmp_path)
    assert [k for k, _ in reopened.all()] == ["B", "a", "aa", "ab", "c", "t", "\u00e9"]
    assert reopened.get_with_timestamp("t") == (9, 99)
    reopened.close()


def test_rocksdb_wipe_removes_files(tmp_path: Path) -> None:
    store = make("rocksdb", tmp_path)
    fill(store)
    store.wipe()
    store.close()
    assert list(make("rocksdb", tmp_path).all()) == []


def test_rocksdb_writes_reach_disk_only_at_flush(tmp_path: Path) -> None:
    inner = RocksDBBytesStore("s", tmp_path / "s")
    inner.put(b"k", b"v")
    assert inner.db.get(b"k") is None  # still pending
    assert inner.get(b"k") == b"v"  # but visible to reads
    inner.flush()
    assert inner.db.get(b"k") == b"v"
    inner.close()


def test_store_builder_builds_both_kinds_with_change_logging(tmp_path: Path) -> None:
    logged: list[tuple[str, bytes]] = []

    def logger_for(name: str):
        return lambda k, v, ts: logged.append((name, k))

    ctx = StoreInitContext(tmp_path, logger_for, Serdes.string(), Serdes.long())
    rocks = StoreBuilder("r").build(ctx)
    memory = StoreBuilder("m", store_type="memory").build(ctx)
    quiet = StoreBuilder("q", store_type="memory", logging=False).build(ctx)
    # Metered -> Caching -> ChangeLogging -> bytes store: the logged ones have the layer
    assert isinstance(rocks.inner, ChangeLoggingBytesStore)
    assert isinstance(rocks.inner.inner, RocksDBBytesStore)
    assert rocks.inner.inner.directory == tmp_path / "rocksdb" / "r"
    assert isinstance(memory.inner.inner, InMemoryBytesStore)
    assert isinstance(quiet.inner, InMemoryBytesStore)
    for store in (rocks, memory, quiet):
        store.put("k", 1)
    assert logged == [("r", b"k"), ("m", b"k")]
    rocks.close()
