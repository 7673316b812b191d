"""MirrorMaker 2's metrics under Kafka's names (``mirror-source-connector``: record-count,
byte-count, byte-rate, record-age-ms, replication-latency-ms with -min/-max/-avg, tags target,
topic, partition; ``mirror-checkpoint-connector``: checkpoint-latency-ms, tags source, target,
group, topic, partition). Tasks bump plain per-partition counters; a Connect worker's /metrics
reads them at scrape time through :func:`samples` (domain ``kafka.connect``, so they print as
``kafka_connect_mirror_source_connector_record_count``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

DOMAIN = "kafka.connect"
SOURCE_GROUP = "mirror-source-connector"
CHECKPOINT_GROUP = "mirror-checkpoint-connector"


class _Stat:
    """count, sum, min and max of a value since start (Kafka's Min/Max/Avg sensors)."""

    __slots__ = ("count", "max", "min", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.min = float("inf")
        self.max = float("-inf")

    def add(self, value: float, count: int = 1) -> None:
        self.count += count
        self.total += value * count
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value

    def avg(self) -> float:
        return self.total / self.count if self.count else 0.0


class _PartitionMetrics:
    __slots__ = ("age", "bytes", "latency", "records", "started")

    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0
        self.age = _Stat()
        self.latency = _Stat()
        self.started = time.monotonic()


class _FlowMetrics:
    def __init__(self, store: SourceMetrics, source: str, target: str) -> None:
        self.store = store
        self.source = source
        self.target = target
        self.cache: dict[tuple[str, str, int], _PartitionMetrics] = {}

    def _get(self, topic: str, partition: int) -> _PartitionMetrics:
        key = (self.target, topic, partition)
        found = self.cache.get(key)
        if found is not None:
            return found
        found = self.store.partitions.get(key)
        if found is None:
            with self.store.lock:
                found = self.store.partitions.setdefault(key, _PartitionMetrics())
        self.cache[key] = found
        return found

    def polled(self, topic: str, partition: int, count: int, size: int, age_ms: int) -> None:
        metrics = self._get(topic, partition)
        metrics.bytes += size
        metrics.age.add(max(age_ms, 0), count)

    def replicated(self, topic: str, partition: int, latency_ms: int) -> None:
        metrics = self.cache.get((self.target, topic, partition)) or self._get(topic, partition)
        metrics.records += 1
        latency_ms = max(latency_ms, 0)
        stat = metrics.latency
        stat.count += 1
        stat.total += latency_ms
        if latency_ms < stat.min:
            stat.min = latency_ms
        if latency_ms > stat.max:
            stat.max = latency_ms


class SourceMetrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.partitions: dict[tuple[str, str, int], _PartitionMetrics] = {}

    def for_flow(self, source: str, target: str) -> _FlowMetrics:
        return _FlowMetrics(self, source, target)


class CheckpointMetrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[tuple[str, str, str, str, int], _Stat] = {}

    def checkpoint(self, source: str, target: str, group: str, topic: str, partition: int,
                   latency_ms: int) -> None:
        key = (source, target, group, topic, partition)
        stat = self.latency.get(key)
        if stat is None:
            with self.lock:
                stat = self.latency.setdefault(key, _Stat())
        stat.add(max(latency_ms, 0))


SOURCE_METRICS = SourceMetrics()
CHECKPOINT_METRICS = CheckpointMetrics()


def samples() -> Iterator[Any]:
    """The current values as ``streams.metrics.registry.Sample``s."""
    from streams.metrics.registry import COUNTER, GAUGE, Sample

    now = time.monotonic()
    with SOURCE_METRICS.lock:
        partitions = list(SOURCE_METRICS.partitions.items())
    for (target, topic, partition), m in partitions:
        tags = {"target": target, "topic": topic, "partition": partition}
        elapsed = max(now - m.started, 1e-3)
        yield Sample(DOMAIN, SOURCE_GROUP, "record-count", COUNTER, tags, m.records,
                     "Number of replicated records.")
        yield Sample(DOMAIN, SOURCE_GROUP, "byte-count", COUNTER, tags, m.bytes,
                     "Number of replicated bytes.")
        yield Sample(DOMAIN, SOURCE_GROUP, "byte-rate", GAUGE, tags, m.bytes / elapsed,
                     "Average number of bytes replicated per second.")
        for name, stat, what in (("record-age-ms", m.age, "age of incoming source records"),
                                 ("replication-latency-ms", m.latency,
                                  "time it takes records to replicate")):
            if not stat.count:
                continue
            yield Sample(DOMAIN, SOURCE_GROUP, name, GAUGE, tags, stat.avg(), f"Average {what}.")
            yield Sample(DOMAIN, SOURCE_GROUP, f"{name}-min", GAUGE, tags, stat.min,
                         f"Min {what}.")
            yield Sample(DOMAIN, SOURCE_GROUP, f"{name}-max", GAUGE, tags, stat.max,
                         f"Max {what}.")
            yield Sample(DOMAIN, SOURCE_GROUP, f"{name}-avg", GAUGE, tags, stat.avg(),
                         f"Average {what}.")
    with CHECKPOINT_METRICS.lock:
        latencies = list(CHECKPOINT_METRICS.latency.items())
    for (source, target, group, topic, partition), stat in latencies:
        tags = {"source": source, "target": target, "group": group, "topic": topic,
                "partition": partition}
        yield Sample(DOMAIN, CHECKPOINT_GROUP, "checkpoint-latency-ms", GAUGE, tags, stat.avg(),
                     "Time it takes consumer group offsets to replicate.")
        yield Sample(DOMAIN, CHECKPOINT_GROUP, "checkpoint-latency-ms-min", GAUGE, tags,
                     stat.min, "Min time it takes consumer group offsets to replicate.")
        yield Sample(DOMAIN, CHECKPOINT_GROUP, "checkpoint-latency-ms-max", GAUGE, tags,
                     stat.max, "Max time it takes consumer group offsets to replicate.")
        yield Sample(DOMAIN, CHECKPOINT_GROUP, "checkpoint-latency-ms-avg", GAUGE, tags,
                     stat.avg(), "Average time it takes consumer group offsets to replicate.")


__all__ = ["CHECKPOINT_METRICS", "SOURCE_METRICS", "samples"]
