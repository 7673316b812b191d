"""The record cache on window stores (Kafka's CachingWindowStore): windowed aggregations
forward the latest value per window at flush, every read sees cached writes, restore and
eviction behave as for key-value stores, and the final results equal the uncached ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from streams import Serdes, StreamsBuilder, Window, Windowed
from streams.dsl.windows import TimeWindows
from streams.processor.api import TaskId
from streams.processor.task import InboundRecord, StreamTask, TaskConfig
from streams.state.cache import DEFAULT_CACHE_MAX_BYTES, CacheBudget
from streams.state.stores import StoreBuilder, StoreInitContext

SIZE = 10


class Capture:
    """A RecordCollector that keeps what tasks send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Any, partition: int | None) -> None:
        self.sent.append((topic, key, value))

    def partitions_for(self, topic: str) -> int:
        return 1

    def counts(self, topic: str = "out") -> list[tuple[str, int, int]]:
        """(key, window start, count) in the order sent."""
        serde = Serdes.windowed(Serdes.string(), SIZE)
        result = []
        for t, k, v in self.sent:
            if t == topic and v is not None:
                windowed = serde.deserialize(t, k)
                result.append((windowed.key, windowed.window.start,
                               int.from_bytes(v, "big", signed=True)))
        return result


def windowed_count_task(tmp_path: Any, cache_bytes: int | None) -> tuple[StreamTask, Capture]:
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream("in", key_serde=s, value_serde=s).group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(SIZE)).count("counts")
        .to_stream().to("out", key_serde=Serdes.windowed(s, SIZE), value_serde=Serdes.long()))
    topology = builder.build()
    sub = topology.sub_topologies()[0]
    collector = Capture()
    config = TaskConfig("app", Serdes.bytes(), Serdes.bytes(), tmp_path,
                        cache=None if cache_bytes is None else CacheBudget(cache_bytes))
    return StreamTask(TaskId(sub.id, 0), topology, sub, config, collector, lambda: 0), collector


def pipe(task: StreamTask, records: list[tuple[str, int]]) -> None:
    start = sum(len(q) for q in task.queues.values()) + len(task.consumed)
    task.add_records([InboundRecord("in", 0, start + i, k.encode(), b"v", ts)
                      for i, (k, ts) in enumerate(records)])
    task.process()


def test_windowed_count_forwards_the_latest_value_per_window_at_flush(tmp_path) -> None:
    task, out = windowed_count_task(tmp_path, DEFAULT_CACHE_MAX_BYTES)
    pipe(task, [("a", 1), ("c", 2), ("b", 3), ("a", 4), ("c", 5), ("a", 5)])
    assert out.sent == []  # nothing forwarded or changelogged before the flush
    store = task.stores["counts"]
    assert store.fetch("a", 0) == 3  # reads see the cache
    assert list(store.fetch("a", 0, 20)) == [(0, 3)]
    task.flush()
    assert out.counts() == [("b", 0, 1), ("c", 0, 2), ("a", 0, 3)]  # least recently written
    assert len([t for t, _, _ in out.sent if t == "app-counts-changelog"]) == 3
    pipe(task, [("a", 7), ("a", 12)])  # the second one opens window 10
    task.flush()
    assert out.counts()[-2:] == [("a", 0, 4), ("a", 10, 1)]
    task.flush()  # nothing dirty: nothing sent again
    assert len(out.counts()) == 5
    task.close()


@pytest.mark.parametrize("cache_bytes", [None, 0, 1, 2_000, DEFAULT_CACHE_MAX_BYTES])
def test_final_windowed_counts_equal_the_uncached_ones(tmp_path, cache_bytes) -> None:
    rng = random.Random(5)
    records = [(f"k{rng.randrange(7)}", rng.randrange(200)) for _ in range(600)]
    records.sort(key=lambda r: r[1])
    expected: dict[tuple[str, int], int] = {}
    for key, ts in records:
        start = ts - ts % SIZE
        expected[(key, start)] = expected.get((key, start), 0) + 1
    task, out = windowed_count_task(tmp_path, cache_bytes)
    for i in range(0, len(records), 50):
        pipe(task, records[i:i + 50])
        if i % 150 == 0:
            task.flush()
    task.flush()
    latest: dict[tuple[str, int], int] = {}
    for key, start, count in out.counts():
        assert count > latest.get((key, start), 0), "a window's count went backwards"
        latest[(key, start)] = count
    assert latest == expected
    if cache_bytes in (None, 0):
        assert len(out.counts()) == len(records)  # every update forwarded
    elif cache_bytes == DEFAULT_CACHE_MAX_BYTES:
        assert len(out.counts()) < len(records) / 2
    task.close()


def cached_store(tmp_path: Any, flushed: list[Any], budget: CacheBudget | None = None) -> Any:
    builder = StoreBuilder("s", "window", Serdes.string(), Serdes.long(), "rocksdb",
                           retention_ms=10_000, window_size_ms=SIZE)
    store = builder.build(StoreInitContext(tmp_path, lambda name: None, Serdes.string(),
                                           Serdes.string()))
    store.attach_cache(budget or CacheBudget(DEFAULT_CACHE_MAX_BYTES))
    assert store.enable_caching(
        lambda key, new, old, ts, ctx: flushed.append((key, new, old, ts, ctx)))
    return store


def test_every_read_lays_the_cache_over_the_store(tmp_path) -> None:
    flushed: list[Any] = []
    store = cached_store(tmp_path, flushed)
    for key, value, start in (("a", 1, 0), ("a", 2, 10), ("ab", 3, 10), ("c", 4, 20)):
        store.put(key, value, start, timestamp=start + 1)
    store.flush()
    store.put("a", 20, 10, timestamp=15)  # overwrite, cached
    store.put("b", 5, 10, timestamp=12)  # new, cached
    store.put("c", None, 20)  # delete, cached
    assert store.inner.get(store._key("c") + (20).to_bytes(8, "big") + bytes(4)) is not None
    assert store.fetch("a", 10) == 20
    assert store.fetch_with_timestamp("a", 10) == (20, 15)
    assert store.fetch("c", 20) is None
    assert list(store.fetch("a", 0, 100)) == [(0, 1), (10, 20)]
    assert list(store.backward_fetch("a", 0, 100)) == [(10, 20), (0, 1)]
    assert list(store.fetch_timestamped("b", 0, 100)) == [(10, 5, 12)]

    def w(key: str, start: int) -> Windowed[str]:
        return Windowed(key, Window(start, start + SIZE))

    assert list(store.fetch_range("a", "b", 0, 100)) == [
        (w("a", 0), 1), (w("a", 10), 20), (w("ab", 10), 3), (w("b", 10), 5)]
    assert list(store.all()) == [(w("a", 0), 1), (w("a", 10), 20), (w("ab", 10), 3),
                                 (w("b", 10), 5)]
    assert list(store.backward_all()) == [(w("b", 10), 5), (w("ab", 10), 3),
                                          (w("a", 10), 20), (w("a", 0), 1)]
    assert list(store.fetch_all_timestamped(10, 10)) == [
        (w("a", 10), 20, 15), (w("ab", 10), 3, 11), (w("b", 10), 5, 12)]
    store.flush()
    assert [(key, new, old) for key, new, old, _, _ in flushed[-3:]] == [
        (("a", 10), 20, 2), (("b", 10), 5, None), (("c", 20), None, 4)]
    assert list(store.all()) == [(w("a", 0), 1), (w("a", 10), 20), (w("ab", 10), 3),
                                 (w("b", 10), 5)]
    store.close()


def test_restore_replaces_a_cached_value(tmp_path) -> None:
    flushed: list[Any] = []
    store = cached_store(tmp_path, flushed)
    store.put("a", 1, 0)
    primary = store._key("a") + (0).to_bytes(8, "big") + bytes(4)
    store.restore(primary, Serdes.long().serialize("t", 7), 3)
    assert store.fetch_with_timestamp("a", 0) == (7, 3)
    store.flush()
    assert flushed == []
    store.close()


def test_eviction_writes_and_forwards_the_oldest_window(tmp_path) -> None:
    flushed: list[Any] = []
    budget = CacheBudget(DEFAULT_CACHE_MAX_BYTES)
    store = cached_store(tmp_path, flushed, budget)
    store.put("a", 1, 0)
    store.put("b", 1, 0)
    budget.max_bytes = budget.used  # full: the next new entry evicts the oldest
    store.put("c", 1, 0)
    assert [key for key, *_ in flushed] == [("a", 0)]
    assert store.fetch("a", 0) == 1  # from the store now
    store.close()


def test_join_buffers_never_cache(tmp_path) -> None:
    builder = StoreBuilder("s", "window", Serdes.string(), Serdes.long(), "memory",
                           retention_ms=100, window_size_ms=SIZE, retain_duplicates=True)
    store = builder.build(StoreInitContext(tmp_path, lambda name: None, Serdes.string(),
                                           Serdes.string()))
    store.attach_cache(CacheBudget(DEFAULT_CACHE_MAX_BYTES))
    assert not store.enable_caching(lambda *args: None)
    assert store.cache is None


def test_a_flushed_window_delete_carries_the_deleting_records_time() -> None:
    """A reduce to None deletes the window; the flush forwards the delete with the time of
    the record that made it (a delete has no value timestamp: Kafka's
    TimestampedCacheFlushListener), not the window's latest (tests/reference case
    windowed-reduce-to-null-late-*)."""
    from streams.testing import TestRecord, TopologyTestDriver

    s = Serdes.string()
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=s, value_serde=s).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(SIZE, 20)).reduce(lambda agg, v: v)
     .to_stream(lambda k, v: f"{k.key}@{k.window.start}").to("out", key_serde=s, value_serde=s))
    for cache, delete_time in ((0, 24), (DEFAULT_CACHE_MAX_BYTES, 20)):
        config = {"statestore.cache.max.bytes": cache}
        with TopologyTestDriver(builder.build(), config) as driver:
            inp = driver.create_input_topic("in", s, s)
            inp.pipe_input("b", "x", 24)
            inp.pipe_input("b", None, 20)  # late, same window [20, 30): deletes it
            assert driver.create_output_topic("out", s, s).read_records_to_list() == [
                TestRecord("b@20", "x", 24), TestRecord("b@20", None, delete_time)]
