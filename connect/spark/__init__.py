"""SparkSink: Kafka topics into a Spark (Parquet) table with exactly-once delivery.

Needs the ``spark`` extra (pyspark, pyarrow). See :mod:`connect.spark.commit_log` for the
protocol (pure Python, importable without Spark) and :mod:`connect.spark.sink` for the settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connect.spark.sink import SparkSinkConnector, SparkSinkTask

__all__ = ["SparkSinkConnector", "SparkSinkTask"]


def __getattr__(name: str) -> Any:
    # Lazy, so that ``connect.spark.commit_log`` imports without pyspark/pyarrow installed.
    if name in __all__:
        from connect.spark import sink

        return getattr(sink, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
