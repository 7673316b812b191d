"""The record cache (statestore.cache.max.bytes): dedup until flush, eviction order, merged
reads, config, and the TopologyTestDriver still emitting every update."""

from __future__ import annotations

from typing import Any

import pytest

from streams import Serdes, StreamsBuilder
from streams.processor.api import TaskId
from streams.processor.task import StreamTask, TaskConfig
from streams.runtime.config import StreamsConfig
from streams.state.cache import DEFAULT_CACHE_MAX_BYTES, CacheBudget
from streams.state.kv import KeyValueStore
from streams.state.memory import InMemoryBytesStore
from streams.testing import TopologyTestDriver


class Capture:
    """A RecordCollector that keeps what tasks send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, int]] = []

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Any, partition: int | None) -> None:
        self.sent.append((topic, key, value, timestamp))

    def partitions_for(self, topic: str) -> int:
        return 1

    def on(self, topic: str) -> list[tuple[str, int]]:
        return [(k.decode(), int.from_bytes(v, "big", signed=True))
                for t, k, v, _ in self.sent if t == topic and k is not None and v is not None]


def count_topology() -> Any:
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream("in", key_serde=s, value_serde=s).group_by_key().count("counts")
        .to_stream().to("out", key_serde=s, value_serde=Serdes.long()))
    return builder.build()


def make_task(tmp_path: Any, cache_bytes: int | None) -> tuple[StreamTask, Capture]:
    topology = count_topology()
    sub = topology.sub_topologies()[0]
    collector = Capture()
    config = TaskConfig("app", Serdes.bytes(), Serdes.bytes(), tmp_path,
                        cache=None if cache_bytes is None else CacheBudget(cache_bytes))
    task = StreamTask(TaskId(sub.id, 0), topology, sub, config, collector, lambda: 0)
    return task, collector


def pipe(task: StreamTask, keys: list[str]) -> None:
    from streams.processor.task import InboundRecord

    start = sum(len(q) for q in task.queues.values()) + len(task.consumed)
    task.add_records([InboundRecord("in", 0, start + i, k.encode(), b"v", 1000 + i)
                      for i, k in enumerate(keys)])
    task.process()


def test_updates_are_deduplicated_until_flush(tmp_path) -> None:
    task, out = make_task(tmp_path, DEFAULT_CACHE_MAX_BYTES)
    pipe(task, ["a", "b", "a", "a", "b"])
    assert out.on("out") == []  # nothing forwarded or logged before the flush
    assert task.stores["counts"].get("a") == 3  # reads see the cached value
    task.flush()
    assert out.on("out") == [("a", 3), ("b", 2)]  # least recently written first
    assert out.on("app-counts-changelog") == [("a", 3), ("b", 2)]
    pipe(task, ["a"])
    task.flush()
    assert out.on("out")[-1] == ("a", 4)
    task.flush()  # nothing dirty: nothing sent again
    assert len(out.on("out")) == 3
    task.close()


def test_flushed_change_carries_the_last_forwarded_value_as_old(tmp_path) -> None:
    task, _ = make_task(tmp_path, DEFAULT_CACHE_MAX_BYTES)
    seen: list[tuple[Any, Any, Any]] = []
    forward_from = task.context.forward_from
    task.context.forward_from = lambda node, record, metadata: (  # type: ignore[method-assign]
        seen.append((record.key, record.value.new, record.value.old)),
        forward_from(node, record, metadata))
    pipe(task, ["a", "a"])
    task.flush()
    pipe(task, ["a", "a", "a"])
    task.flush()
    assert seen == [("a", 2, None), ("a", 5, 2)]
    task.close()


def test_eviction_flushes_least_recently_written_first(tmp_path) -> None:
    task, out = make_task(tmp_path, 1)  # every put overflows the budget
    pipe(task, ["a", "b", "a"])
    assert out.on("out") == [("a", 1), ("b", 1), ("a", 2)]
    task.close()


def test_eviction_order_under_a_small_budget(tmp_path) -> None:
    budget = CacheBudget(10_000)
    store = KeyValueStore("s", InMemoryBytesStore("s"), Serdes.string(), Serdes.long())
    store.attach_cache(budget)
    flushed: list[tuple[str, int]] = []
    assert store.enable_caching(lambda k, new, old, ts, ctx: flushed.append((k, new)))
    for i in range(5):
        store.put(f"k{i}", i, 0)
    store.put("k0", 10, 0)  # rewritten: now the most recent
    size = store.cache.entries[b"k1"].size
    budget.max_bytes = budget.used - size  # room for all but one entry
    store.put("k1", 11, 0)  # k1 moves to the end; k2 is now the oldest and is evicted
    assert flushed == [("k2", 2)]
    assert store.cache.get(b"k2") is None and store.inner.get(b"k2") is not None
    store.flush()
    assert flushed == [("k2", 2), ("k3", 3), ("k4", 4), ("k0", 10), ("k1", 11)]


def test_range_and_all_merge_the_cache_over_the_store(tmp_path) -> None:
    store = KeyValueStore("s", InMemoryBytesStore("s"), Serdes.string(), Serdes.long())
    store.attach_cache(CacheBudget(DEFAULT_CACHE_MAX_BYTES))
    assert store.enable_caching(lambda *args: None)
    for key, value in (("a", 1), ("c", 3), ("e", 5)):
        store.put(key, value, 0)
    store.flush()
    store.put("b", 2, 0)
    store.put("c", 30, 0)
    store.delete("e")
    assert list(store.all()) == [("a", 1), ("b", 2), ("c", 30)]
    assert list(store.reverse_all()) == [("c", 30), ("b", 2), ("a", 1)]
    assert list(store.range("b", "d")) == [("b", 2), ("c", 30)]
    assert store.approximate_num_entries() == 3
    assert store.get("e") is None


def test_two_writers_disable_caching() -> None:
    store = KeyValueStore("s", InMemoryBytesStore("s"), Serdes.string(), Serdes.long())
    store.attach_cache(CacheBudget(DEFAULT_CACHE_MAX_BYTES))
    assert store.enable_caching(lambda *args: None)
    assert not store.enable_caching(lambda *args: None)
    assert store.cache is None


def test_cache_size_zero_means_every_update_is_forwarded(tmp_path) -> None:
    for cache in (None, 0):
        task, out = make_task(tmp_path / str(cache), cache)
        pipe(task, ["a", "a", "b"])
        assert out.on("out") == [("a", 1), ("a", 2), ("b", 1)]
        task.close()


def test_topology_test_driver_still_emits_every_update() -> None:
    with TopologyTestDriver(count_topology()) as driver:
        source = driver.create_input_topic("in", Serdes.string(), Serdes.string())
        sink = driver.create_output_topic("out", Serdes.string(), Serdes.long())
        for key in ["a", "a", "b", "a"]:
            source.pipe_input(key, "v")
        assert sink.read_key_values_to_list() == [("a", 1), ("a", 2), ("b", 1), ("a", 3)]


def test_cache_config_keys() -> None:
    base = {"application.id": "a"}
    assert StreamsConfig.from_mapping(base).cache_max_bytes == DEFAULT_CACHE_MAX_BYTES
    assert StreamsConfig.from_mapping(
        {**base, "cache.max.bytes.buffering": "1000"}).cache_max_bytes == 1000
    assert StreamsConfig.from_mapping(
        {**base, "statestore.cache.max.bytes": 0,
         "cache.max.bytes.buffering": 5}).cache_max_bytes == 0
    assert StreamsConfig.from_mapping(
        {**base, "statestore.cache.max.bytes": 0}).task_config().cache is None
    with pytest.raises(ValueError, match="statestore.cache.max.bytes"):
        StreamsConfig.from_mapping({**base, "statestore.cache.max.bytes": -1})
