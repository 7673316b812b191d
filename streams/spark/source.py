"""``spark.read.format("streams")`` / ``spark.readStream.format("streams")``: topics as DataFrames.

Built on PySpark's Python Data Source API (Spark's own Kafka source needs a Maven artifact we
cannot fetch, see the project's Spark notes), with the option names, columns and offset semantics
of Spark's Kafka source, so code written for ``format("kafka")`` carries over:

* batch: the driver resolves ``[startingOffsets, endingOffsets)`` per topic-partition once, and
  every partition becomes one Spark task that reads its range with its own consumer;
* streaming: offsets are ``{"topic": {"partition": next_offset}}`` in Spark's checkpoint;
  ``latestOffset`` honours ``maxOffsetsPerTrigger`` (``ReadMaxRows``) and
  ``Trigger.AvailableNow`` (heads frozen by ``prepareForTriggerAvailableNow``).

The default isolation level is ``read_committed`` (Spark's default is ``read_uncommitted``): our
pipelines are exactly-once, so by default Spark sees only committed transactions, and ranges end
at the last stable offset. The broker I/O is :mod:`streams.kafka.fetch` (Arrow batches from it in
:mod:`streams.spark.kafka_read`), option and offset rules in :mod:`streams.spark.source_offsets`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from streams.spark.kafka_read import (
    DataLossError,
    OffsetClient,
    Range,
    data_loss_message,
    offset_client,
    read_range,
)
from streams.spark.source_offsets import (
    SourceOptionError,
    SourceOptions,
    TopicPartition,
    cap_offsets,
    from_json_offsets,
    parse_options,
    resolve_spec,
    to_json_offsets,
)

__all__ = ["SCHEMA", "DataLossError", "SourceOptionError", "StreamsDataSource"]

log = logging.getLogger("streams.spark.source")

FORMAT = "streams"

# Spark's Kafka source columns (with includeHeaders=true); every field nullable, as in Spark.
SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("headers", ArrayType(StructType([
        StructField("key", StringType()),
        StructField("value", BinaryType()),
    ]))),
])


class StreamsDataSource(DataSource):
    """The ``streams`` format: Kafka-protocol topics, read and written like Spark's ``kafka``
    format (the writers are in :mod:`streams.spark.sink`)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        parse_options(self.options, mode=None)  # fail at load(), not at the first action
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_schema(schema)
        return StreamsBatchReader(parse_options(self.options, mode="batch"))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        _check_schema(schema)
        return StreamsStreamReader(parse_options(self.options, mode="stream"))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from streams.spark.sink import new_writer

        return new_writer(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from streams.spark.sink import new_stream_writer

        return new_stream_writer(self.options, schema)


def _check_schema(schema: StructType) -> None:
    if schema != SCHEMA:
        raise SourceOptionError(
            f"the {FORMAT} source has a fixed schema ({SCHEMA.simpleString()}); do not pass "
            f"another one with .schema(...), got {schema.simpleString()}")


class RangePartition(InputPartition):
    """One Spark task: ``value`` is the :class:`~streams.spark.kafka_read.Range` it reads."""

    value: Range


def _read(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    # Spark substitutes a bare InputPartition(None) when there is nothing to read.
    if isinstance(partition, RangePartition):
        yield from read_range(partition.value)


def _subscribed(client: OffsetClient, options: SourceOptions,
                strict: bool) -> list[TopicPartition]:
    cluster = client.cluster()
    if strict:
        missing = options.subscription.missing_assigned(cluster)
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise SourceOptionError(f"option 'assign' names partitions that do not exist: {names}")
    return options.subscription.select(cluster)


def _ranges(start: dict[TopicPartition, int], end: dict[TopicPartition, int],
            options: SourceOptions) -> list[RangePartition]:
    return [RangePartition(Range(topic, partition, start.get((topic, partition), 0), until,
                                 options.client, options.fail_on_data_loss))
            for (topic, partition), until in sorted(end.items())
            if until > start.get((topic, partition), 0)]


class StreamsBatchReader(DataSourceReader):
    """``spark.read``: one task per topic-partition, offsets resolved once on the driver."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        opts = self.options
        with offset_client(opts.client) as client:
            tps = _subscribed(client, opts, strict=True)
            earliest = client.earliest(tps)
            latest = client.latest(tps)
        start = resolve_spec(opts.starting, "startingOffsets", tps, earliest, latest)
        end = resolve_spec(opts.ending, "endingOffsets", tps, earliest, latest)
        for tp in tps:
            if start[tp] > end[tp]:
                raise SourceOptionError(
                    f"the starting offset {start[tp]} of {tp[0]}-{tp[1]} is after its ending "
                    f"offset {end[tp]} (startingOffsets={_show(opts.starting)}, "
                    f"endingOffsets={_show(opts.ending)})")
        return list(_ranges(start, end, opts))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)


def _show(spec: Any) -> str:
    return spec if isinstance(spec, str) else str(to_json_offsets(spec))


class StreamsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: offsets are next-offsets per partition, as Spark's Kafka source.

    The offset methods run on the driver in one long-lived Python process, so the broker client
    is kept between calls (and closed in :meth:`stop`); :meth:`read` runs in tasks.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._client: OffsetClient | None = None
        self._frozen: dict[TopicPartition, int] | None = None
        self._last_head: dict[TopicPartition, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    @property
    def client(self) -> OffsetClient:
        if self._client is None:
            self._client = offset_client(self.options.client)
        return self._client

    def _head(self) -> dict[TopicPartition, int]:
        """End offsets (LSO under read_committed) of every subscribed partition right now."""
        return self.client.latest(_subscribed(self.client, self.options, strict=False))

    def initialOffset(self) -> dict:
        # Only for a new checkpoint; may run twice: reads the broker, changes nothing.
        tps = _subscribed(self.client, self.options, strict=True)
        earliest = self.client.earliest(tps)
        latest = self.client.latest(tps)
        return to_json_offsets(resolve_spec(self.options.starting, "startingOffsets", tps,
                                            earliest, latest))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._frozen = self._head()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json_offsets(start)
        head = self._frozen if self._frozen is not None else self._head()
        self._last_head = head
        end = dict(begin)  # a partition that disappeared keeps its offset
        for tp, offset in head.items():
            if tp in begin or offset > 0:  # an empty new partition is implicitly at 0
                end[tp] = offset
        if isinstance(limit, ReadMaxRows):
            end = cap_offsets(begin, end, limit.max_rows)
        return start if end == begin else to_json_offsets(end)

    def reportLatestOffset(self) -> dict | None:
        return None if self._last_head is None else to_json_offsets(self._last_head)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, until = from_json_offsets(start), from_json_offsets(end)
        for tp in sorted(set(begin) - set(until)):
            self._lost(f"{tp[0]}-{tp[1]} is no longer in the end offsets of the micro-batch")
        for tp, offset in sorted(until.items()):
            if offset < begin.get(tp, 0):
                self._lost(f"the end offset of {tp[0]}-{tp[1]} went back from "
                           f"{begin[tp]} to {offset}")
        return list(_ranges(begin, until, self.options))

    def _lost(self, what: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(data_loss_message(what))
        log.warning("%s: skipping (failOnDataLoss=false)", what)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets, and Spark commits lazily."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
