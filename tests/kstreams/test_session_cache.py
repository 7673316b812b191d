"""The record cache on session stores (Kafka's CachingSessionStore): a session-windowed
aggregation forwards each session's latest value, and the removal of sessions merged away, at
a flush; reads (the merge's own lookups included) see cached writes; the sessions that survive
equal the uncached ones, whatever the cache's size (evictions included)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from streams import Serdes, StreamsBuilder
from streams.dsl.windows import SessionWindows
from streams.processor.api import TaskId
from streams.processor.task import InboundRecord, StreamTask, TaskConfig
from streams.state.cache import DEFAULT_CACHE_MAX_BYTES, CacheBudget

GAP = 10


class Capture:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, int]] = []

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Any, partition: int | None) -> None:
        self.sent.append((topic, key, value, timestamp))

    def partitions_for(self, topic: str) -> int:
        return 1

    def sessions(self) -> list[tuple[str, int, int, int | None]]:
        """(key, start, end, count or None for a removal) in the order sent to ``out``."""
        serde = Serdes.session_windowed(Serdes.string())
        result = []
        for topic, key, value, _ in self.sent:
            if topic == "out":
                windowed = serde.deserialize(topic, key)
                result.append((windowed.key, windowed.window.start, windowed.window.end,
                               None if value is None else int.from_bytes(value, "big")))
        return result


def session_count_task(tmp_path: Any, cache_bytes: int | None) -> tuple[StreamTask, Capture]:
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream("in", key_serde=s, value_serde=s).group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP, 1000)).count("sessions")
        .to_stream().to("out", key_serde=Serdes.session_windowed(s), value_serde=Serdes.long()))
    topology = builder.build()
    sub = topology.sub_topologies()[0]
    collector = Capture()
    config = TaskConfig("app", Serdes.bytes(), Serdes.bytes(), tmp_path,
                        cache=None if cache_bytes is None else CacheBudget(cache_bytes))
    return StreamTask(TaskId(sub.id, 0), topology, sub, config, collector, lambda: 0), collector


def pipe(task: StreamTask, records: list[tuple[str, int]]) -> None:
    start = sum(task.consumed.values())
    task.add_records([InboundRecord("in", 0, start + i, k.encode(), b"v", ts)
                      for i, (k, ts) in enumerate(records)])
    task.process()


def test_merges_wait_in_the_cache_and_flush_as_the_latest_sessions(tmp_path) -> None:
    task, out = session_count_task(tmp_path, DEFAULT_CACHE_MAX_BYTES)
    pipe(task, [("a", 1), ("a", 5), ("b", 3), ("a", 30)])
    assert out.sent == []  # nothing forwarded or changelogged before the flush
    store = task.stores["sessions"]
    assert [(w.window.start, w.window.end, v) for w, v in store.fetch("a")] == [
        (1, 5, 2), (30, 30, 1)]
    assert store.fetch_session("a", 1, 5) == 2
    assert [(w.key, v) for w, v in store.find_sessions_by_end(0, 100)] == [
        ("b", 1), ("a", 2), ("a", 1)]
    task.flush()
    # [1,1] was merged into [1,5] before any flush: not forwarded (its tombstone is still
    # written and logged, as Kafka's CachingSessionStore does); least recently written first
    assert out.sessions() == [("a", 1, 5, 2), ("b", 3, 3, 1), ("a", 30, 30, 1)]
    logged = [(key, value) for t, key, value, _ in out.sent if t == "app-sessions-changelog"]
    assert len(logged) == 4 and logged[0][1] is None
    pipe(task, [("a", 12)])  # bridges [1,5] and [30,30]? no: 12 is within 10 of 5 only
    task.flush()
    assert out.sessions()[-2:] == [("a", 1, 5, None), ("a", 1, 12, 3)]
    task.close()


@pytest.mark.parametrize("cache_bytes", [None, 1, 2_000, DEFAULT_CACHE_MAX_BYTES])
def test_final_sessions_equal_the_uncached_ones(tmp_path, cache_bytes) -> None:
    rng = random.Random(9)
    records = sorted(((f"k{rng.randrange(5)}", rng.randrange(400)) for _ in range(300)),
                     key=lambda r: r[1])
    task, out = session_count_task(tmp_path / "cached", cache_bytes)
    reference, reference_out = session_count_task(tmp_path / "plain", None)
    for i in range(0, len(records), 40):
        pipe(task, records[i:i + 40])
        pipe(reference, records[i:i + 40])
        if i % 120 == 0:
            task.flush()
    task.flush()
    reference.flush()

    def surviving(sent: list[tuple[str, int, int, int | None]]) -> dict[tuple, int]:
        latest: dict[tuple, int | None] = {}
        for key, start, end, count in sent:
            latest[(key, start, end)] = count
        return {k: v for k, v in latest.items() if v is not None}

    assert surviving(out.sessions()) == surviving(reference_out.sessions())
    assert sorted((w.key, w.window.start, v) for w, v in task.stores["sessions"].all()) == \
        sorted((w.key, w.window.start, v) for w, v in reference.stores["sessions"].all())
    if cache_bytes == DEFAULT_CACHE_MAX_BYTES:
        assert len(out.sessions()) < len(reference_out.sessions())  # it did deduplicate
    task.close()
    reference.close()
