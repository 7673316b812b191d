"""Broker I/O of the ``streams`` Spark source, through ``streams.kafka.fetch``: offset lookups on
the driver (:class:`~streams.kafka.fetch.OffsetClient`) and range reads in tasks
(:func:`read_range`), whose records become Arrow batches of Spark's Kafka-source schema (Spark
turns tuples into Arrow anyway; building the columns ourselves is several times faster).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streams.kafka.fetch import OffsetClient, RecordColumns, read_partition
from streams.spark.source_offsets import ClientSettings

__all__ = ["ARROW_SCHEMA", "DataLossError", "OffsetClient", "Range", "data_loss_message",
           "read_range", "to_arrow"]

log = logging.getLogger("streams.spark.source")

# Arrow types Spark expects for the source's schema (pyspark's to_arrow_schema of SCHEMA, UTC).
TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER))
ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADERS),
])

# Rows per Arrow batch handed to Spark: big enough to amortise per-batch costs.
BATCH_ROWS = 32_768
# The driver's planning client runs on a thread of this name.
OFFSETS_THREAD = "streams-spark-offsets"


class DataLossError(RuntimeError):
    """Records the query should read are gone (retention, deleteRecords, a recreated topic)."""


def data_loss_message(what: str) -> str:
    return (f"{what}. Some data may have been lost because it is no longer available in the "
            "broker (deleted by retention or deleteRecords, or the topic was deleted and "
            "recreated). If you want the query to go on past this, set the source option "
            "failOnDataLoss to 'false'.")


def offset_client(settings: ClientSettings) -> OffsetClient:
    """The driver's planning client (metadata, earliest and latest offsets)."""
    return OffsetClient(settings, OFFSETS_THREAD)


@dataclass(frozen=True)
class Range:
    """``[start, end)`` of one topic-partition plus what a task needs to read it."""

    topic: str
    partition: int
    start: int
    end: int
    settings: ClientSettings
    fail_on_data_loss: bool = True

    def lost(self, what: str) -> None:
        """Offsets of the range are gone: fail the query, or skip them (failOnDataLoss)."""
        if self.fail_on_data_loss:
            raise DataLossError(data_loss_message(what))
        log.warning("%s: skipping (failOnDataLoss=false)", what)


def read_range(rng: Range) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as Arrow batches of :data:`ARROW_SCHEMA` (read and filtered
    by ``streams.kafka.fetch.read_partition``)."""
    for columns in read_partition(rng.settings, rng.topic, rng.partition, rng.start, rng.end,
                                  rng.lost, BATCH_ROWS):
        batch = to_arrow(columns, rng.topic, rng.partition)
        # Drop the decoded chunk now: held through the yield, it would still be alive while
        # the next one is decoded (two chunks of Python objects: ~10% more CPU in GC).
        del columns
        yield batch


def to_arrow(columns: RecordColumns, topic: str, partition: int) -> pa.RecordBatch:
    """One Arrow batch of :data:`ARROW_SCHEMA`; like Spark's Kafka source, a record without
    headers has a null ``headers`` value."""
    n = len(columns.offsets)
    millis = pa.array(columns.timestamps, pa.int64())
    return pa.RecordBatch.from_arrays([
        pa.array(columns.keys, pa.binary()),
        pa.array(columns.values, pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array(columns.offsets, pa.int64()),
        pc.multiply(millis, 1000).cast(TIMESTAMP),
        pa.array(columns.timestamp_types, pa.int32()),
        _headers(columns.headers),
    ], schema=ARROW_SCHEMA)


def _headers(per_record: list[Any]) -> pa.Array:
    if not any(per_record):
        return pa.nulls(len(per_record), HEADERS)
    starts = [0]
    names: list[str] = []
    contents: list[bytes | None] = []
    for headers in per_record:
        for name, content in headers or ():
            names.append(name)
            contents.append(content)
        starts.append(len(names))
    entries = pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(contents, pa.binary())],
        fields=list(HEADER))
    mask = pa.array([not headers for headers in per_record], pa.bool_())
    return pa.ListArray.from_arrays(pa.array(starts, pa.int32()), entries, type=HEADERS,
                                    mask=mask)
