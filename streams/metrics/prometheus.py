"""Prometheus text exposition of our registries through ``prometheus_client``.

A custom Collector reads our registries at scrape time, inside a CollectorRegistry of its own
(never prometheus_client's global default), so a broker, an app and a worker in one process
each export only their own metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import CollectorRegistry

from .registry import COUNTER, HISTOGRAM, Histogram, MetricsRegistry, label_name, prometheus_name

log = logging.getLogger(__name__)

__all__ = ["CONTENT_TYPE_LATEST", "RegistryCollector", "exposition"]


class RegistryCollector:
    """prometheus_client Collector over one or more of our registries."""

    def __init__(self, registries: Iterable[MetricsRegistry]) -> None:
        self.registries = list(registries)

    def describe(self) -> list[Metric]:
        return []  # names are dynamic; an empty describe keeps register() from collecting

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}

        def family(name: str, kind: str, doc: str) -> Metric:
            fam = families.get(name)
            if fam is None:
                base = name[:-6] if kind == COUNTER and name.endswith("_total") else name
                cls: Any = {COUNTER: CounterMetricFamily, HISTOGRAM: HistogramMetricFamily
                            }.get(kind, GaugeMetricFamily)
                fam = families[name] = cls(base, doc or name)
            return fam

        for registry in self.registries:
            for metric in registry.registered():
                mn = metric.metric_name
                name = prometheus_name(metric.domain, mn.group, mn.name)
                labels = {label_name(k): v for k, v in mn.tags}
                try:
                    value = metric.read()
                except Exception as exc:  # one broken reader must not fail the scrape
                    log.debug("reading metric %s failed: %r", name, exc)
                    continue
                fam = family(name, metric.kind, metric.description)
                if metric.kind == HISTOGRAM and isinstance(value, Histogram):
                    for le, count in value.cumulative():
                        fam.add_sample(fam.name + "_bucket", {**labels, "le": le}, count)
                    fam.add_sample(fam.name + "_count", labels, float(value.count))
                    fam.add_sample(fam.name + "_sum", labels, float(value.sum))
                else:
                    _add(fam, metric.kind, labels, value)
            try:
                samples = list(registry.samples())
            except Exception as exc:
                log.warning("computing metrics for a scrape failed: %r", exc)
                samples = []
            for sample in samples:
                name = prometheus_name(sample.domain, sample.group, sample.name)
                labels = {label_name(k): str(v) for k, v in sample.tags.items()}
                _add(family(name, sample.kind, sample.description), sample.kind, labels,
                     sample.value)
        yield from families.values()


def _add(fam: Metric, kind: str, labels: dict[str, str], value: Any) -> None:
    suffix = "_total" if kind == COUNTER else ""
    fam.add_sample(fam.name + suffix, labels, float(value))


def exposition(*registries: MetricsRegistry) -> bytes:
    """The Prometheus text format of these registries, as ``GET /metrics`` answers."""
    target = CollectorRegistry(auto_describe=False)
    target.register(RegistryCollector(registries))  # type: ignore[arg-type]
    return generate_latest(target)
