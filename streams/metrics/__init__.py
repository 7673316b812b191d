"""Metrics for the broker, streams apps and Connect workers: a registry keyed like Kafka's
MetricName, its Prometheus exposition and the ``/metrics`` + ``/health`` HTTP endpoint.

Importing this package loads neither prometheus_client nor aiohttp: the exporter and the
server are imported where they are used (``streams.metrics.prometheus``, ``.http``).
"""

from .registry import (
    COUNTER,
    GAUGE,
    HISTOGRAM,
    Histogram,
    MetricName,
    MetricsRegistry,
    RecordingLevel,
    Sample,
    WindowedStat,
    prometheus_name,
)

__all__ = ["COUNTER", "GAUGE", "HISTOGRAM", "Histogram", "MetricName", "MetricsRegistry",
           "RecordingLevel", "Sample", "WindowedStat", "prometheus_name"]
