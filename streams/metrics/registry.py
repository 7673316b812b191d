"""A metrics registry keyed like Kafka's ``MetricName`` (group, name, tags).

The hot path never touches this module: components keep plain counters (``self.processed
+= n``) and register *readers* here — callables that fetch the current value when someone
asks (a Prometheus scrape, ``KafkaStreams.metrics()``). Metrics whose label sets change all
the time (per partition, per consumer group) come from a *collector* run at scrape time.

Kafka records some metrics only at ``metrics.recording.level=DEBUG`` (state store metrics,
for one); a registry knows its level so components can skip the cost of those altogether.
"""

from __future__ import annotations

import bisect
import enum
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

COUNTER = "counter"
GAUGE = "gauge"
HISTOGRAM = "histogram"


class RecordingLevel(enum.IntEnum):
    """``metrics.recording.level``: INFO records fewer metrics than DEBUG (Kafka's Sensor)."""

    INFO = 0
    DEBUG = 1
    TRACE = 2

    @classmethod
    def parse(cls, value: str | RecordingLevel, key: str = "metrics.recording.level"
              ) -> RecordingLevel:
        if isinstance(value, RecordingLevel):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            raise ValueError(f"{key}={value!r} is not one of INFO, DEBUG, TRACE") from None


class MetricName(NamedTuple):
    """Kafka's MetricName: a group (``stream-thread-metrics``), a name (``process-total``) and
    tags (``thread-id``). Tags are a sorted tuple of pairs so the name can key a dict."""

    group: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, group: str, name: str, tags: Mapping[str, Any] | None = None) -> MetricName:
        return cls(group, name, tuple(sorted((k, str(v)) for k, v in (tags or {}).items())))

    @property
    def tags_dict(self) -> dict[str, str]:
        return dict(self.tags)


def prometheus_name(domain: str, group: str, name: str) -> str:
    """What the Prometheus JMX exporter's common Kafka rules make of a JMX name: the domain,
    the type (group) and the attribute (name), lower-cased and joined with ``_``."""
    parts = (domain, group, name)
    return "_".join(p.lower().replace("-", "_").replace(".", "_") for p in parts if p)


def label_name(tag: str) -> str:
    """``thread-id`` -> ``thread_id`` (Prometheus labels take no dashes)."""
    return tag.replace("-", "_").replace(".", "_")


class Histogram:
    """Fixed buckets (upper bounds, seconds), updated with one bisect: cheap enough for every
    request, and exported as a Prometheus histogram."""

    __slots__ = ("bounds", "counts", "count", "sum")

    DEFAULT_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                      2.5, 5.0, 10.0)

    def __init__(self, bounds: Iterable[float] = DEFAULT_BOUNDS) -> None:
        self.bounds = tuple(sorted(bounds))
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, cumulative count)`` pairs, ending with ``+Inf``."""
        out, running = [], 0
        counts = list(self.counts)
        for bound, count in zip((*self.bounds, math.inf), counts, strict=True):
            running += count
            out.append(("+Inf" if bound == math.inf else repr(bound), float(running)))
        return out


class WindowedStat:
    """Kafka's windowed Rate and Avg over a cumulative count (and sum): values over roughly the
    last ``window_s`` seconds, computed when read from two snapshots — nothing is sampled on
    the hot path. With nothing recorded in the window a rate is 0 and an average NaN, as in
    Kafka."""

    def __init__(self, count: Callable[[], float], total: Callable[[], float] | None = None,
                 window_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._count = count
        self._total = total
        self._window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        first = (now, count(), total() if total else 0.0)
        self._snapshots = [first, first]  # the older one starts the window

    def _window(self) -> tuple[float, float, float]:
        now = self._clock()
        count = self._count()
        total = self._total() if self._total else 0.0
        with self._lock:
            older, newer = self._snapshots
            if now - newer[0] >= self._window_s:
                older, newer = newer, (now, count, total)
                self._snapshots = [older, newer]
            return now - older[0], count - older[1], total - older[2]

    def rate(self) -> float:
        elapsed, count, _ = self._window()
        return count / elapsed if elapsed > 0 else 0.0

    def avg(self) -> float:
        _, count, total = self._window()
        return total / count if count else math.nan


@dataclass
class Metric:
    """One registered metric: where to read it and how to export it."""

    metric_name: MetricName
    kind: str  # COUNTER | GAUGE | HISTOGRAM
    read: Callable[[], Any]  # a number, or a Histogram for HISTOGRAM
    domain: str
    description: str = ""


@dataclass
class Sample:
    """A value computed at scrape time by a collector (per-partition sizes, consumer lag)."""

    domain: str
    group: str
    name: str
    kind: str  # COUNTER | GAUGE
    tags: dict[str, Any]
    value: float
    description: str = ""


Collector = Callable[[], Iterable[Sample]]


@dataclass
class MetricsRegistry:
    """Every metric of one component (a broker, a streams app, a Connect worker)."""

    domain: str = "kafka.streams"
    recording_level: RecordingLevel = RecordingLevel.INFO
    _metrics: dict[MetricName, Metric] = field(default_factory=dict)
    _collectors: list[Collector] = field(default_factory=list)

    def should_record(self, level: RecordingLevel) -> bool:
        return level <= self.recording_level

    def add(self, group: str, name: str, kind: str, read: Callable[[], Any], *,
            tags: Mapping[str, Any] | None = None, description: str = "",
            domain: str | None = None) -> MetricName:
        metric_name = MetricName.of(group, name, tags)
        self._metrics[metric_name] = Metric(metric_name, kind, read, domain or self.domain,
                                            description)
        return metric_name

    def counter(self, group: str, name: str, read: Callable[[], float], **kw: Any
                ) -> MetricName:
        return self.add(group, name, COUNTER, read, **kw)

    def gauge(self, group: str, name: str, read: Callable[[], float], **kw: Any) -> MetricName:
        return self.add(group, name, GAUGE, read, **kw)

    def histogram(self, group: str, name: str, hist: Histogram, **kw: Any) -> MetricName:
        return self.add(group, name, HISTOGRAM, lambda: hist, **kw)

    def add_collector(self, collector: Collector) -> None:
        self._collectors.append(collector)

    def remove_collector(self, collector: Collector) -> None:
        if collector in self._collectors:
            self._collectors.remove(collector)

    def remove_tagged(self, **tags: Any) -> int:
        """Drop every metric carrying all these tags (a closed task's, a stopped connector's)."""
        wanted = {(k.replace("_", "-"), str(v)) for k, v in tags.items()}
        gone = [m for m in self._metrics if wanted <= set(m.tags)]
        for m in gone:
            del self._metrics[m]
        return len(gone)

    def registered(self) -> Iterator[Metric]:
        yield from list(self._metrics.values())

    def samples(self) -> Iterator[Sample]:
        for collector in list(self._collectors):
            yield from collector()

    def metrics(self) -> dict[MetricName, float]:
        """Every value now, keyed like Kafka's ``metrics()`` (histograms give their count)."""
        out: dict[MetricName, float] = {}
        for metric in self.registered():
            value = metric.read()
            out[metric.metric_name] = float(value.count if isinstance(value, Histogram)
                                            else value)
        for sample in self.samples():
            out[MetricName.of(sample.group, sample.name, sample.tags)] = float(sample.value)
        return out
