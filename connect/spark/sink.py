"""SparkSink: write topics into a Spark (Parquet) table, exactly once.

Records are buffered per topic-partition as Arrow batches and written by Spark in flushes:
exactly ``flush.size`` rows once that many are buffered (a buffer is split at a row, the rest
waits for the next flush), or everything buffered when the oldest of it is ``flush.interval.ms``
old, or on close/stop. Each flush goes through the commit protocol of
:mod:`connect.spark.commit_log`: staged files, an atomic commit-log entry carrying the offsets,
then renames into the table. The table schema is fixed before any rows: by the log, a pydantic
model or an existing table, or else inferred from the first records buffered and committed as an
entry of its own (a task that finds another's schema there converts to it). The commit log, not the
consumer group, is the record of what was written: ``open`` rewinds to it, ``put`` drops what it
already covers and ``pre_commit`` reports only offsets it covers.

A due flush is handed to the background (:mod:`connect.spark.flusher`) and ``put`` returns:
Spark writes while the worker fetches and converts the next records. Two flushes may be in flight
(their Spark writes overlap; they commit in hand-over order; a third due flush waits: that is the
backpressure), ``pre_commit`` reports only offsets of committed entries, so never those of a
flush in flight, and ``open``/``flush``/``close``/``stop`` wait for them. A failed background
flush fails the task at its next call and blocks every later commit, so its records are re-read
after the restart.

With ``value.format=json`` and ``value.converter=org.apache.kafka.connect.converters.
ByteArrayConverter`` in the connector config (recommended for JSON), record values are JSON texts
the task parses itself: a batch at a
time with Arrow's JSON reader (same columns and types as the
JsonConverter path), record by record (``json.loads``) for a batch Arrow cannot take exactly, so
malformed records still go to the errant record reporter. A table whose schema is a single binary
``value`` column (raw bytes written before) keeps storing the bytes.
"""

from __future__ import annotations

import bisect
import contextlib
import importlib
import json
import logging
import os
import re
import shutil
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc

from connect.api import ConnectException, SinkConnector, SinkTask, TopicPartition
from connect.config_def import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)
from connect.data import DataException
from connect.records import SinkRecord, SinkRecordBatch
from connect.spark import schema as sch
from connect.spark.commit_log import (
    STAGING_DIR,
    TP,
    CommitConflict,
    CommitEntry,
    CommitLog,
    DataFile,
    fsync_tree,
)
from connect.spark.flusher import FlushThread, Turn

log = logging.getLogger("connect.spark.sink")

PATH, TABLE, MASTER = "path", "table", "spark.master"
FLUSH_SIZE, FLUSH_INTERVAL = "flush.size", "flush.interval.ms"
PARTITION_BY, MODEL, INCLUDE_KEY = "partition.by", "value.schema.model", "include.key"
TASK_ID = "task.id"
VALUE_FORMAT = "value.format"
_ONE_FILE_ROWS = 1_000_000
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
_COLUMN = re.compile(r"^[^/=\\\s]+$")


# -- configuration ----------------------------------------------------------------------------
def local_path(value: str) -> Path:
    """A plain or ``file:`` path as a local path; other URL schemes are refused."""
    parsed = urlparse(value)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:
        raise ValueError(f"'{value}' is not a local path: the commit protocol renames files, so "
                         "the table must be on a local or mounted filesystem")
    return Path(value).expanduser()


def _valid_path(name: str, value: Any) -> None:
    if value is not None:
        non_empty_string(name, value)
        local_path(str(value))


def _valid_table(name: str, value: Any) -> None:
    if value is not None and not _TABLE_NAME.match(str(value)):
        raise ConfigException(f"Invalid value {value} for configuration {name}: expected a table "
                              "name like 'events' or 'db.events'")


def _valid_partition_by(name: str, value: Any) -> None:
    for column in value or []:
        if not _COLUMN.match(column):
            raise ConfigException(f"Invalid value {column} for configuration {name}: a column "
                                  "name may not contain '/', '=' or whitespace")


def load_model(target: str) -> type:
    """The pydantic model class named ``module:Class`` (or ``module.Class``)."""
    from pydantic import BaseModel

    module_name, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"'{target}' is not of the form module:Class")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
        raise ValueError(f"'{target}' is not a pydantic model class")
    return obj


def _valid_model(name: str, value: Any) -> None:
    if value is not None:
        load_model(str(value))


CONFIG_DEF = (
    ConfigDef()
    .define(PATH, ConfigType.STRING, None, _valid_path, Importance.HIGH,
            "Parquet table directory (local or mounted filesystem); spark.read.parquet(path) "
            "returns exactly the committed rows. With 'table', the table's LOCATION.",
            group="Table", order_in_group=1)
    .define(TABLE, ConfigType.STRING, None, _valid_table, Importance.HIGH,
            "Metastore table name (created USING parquet if missing; refreshed after commits).",
            group="Table", order_in_group=2)
    .define(PARTITION_BY, ConfigType.LIST, "", _valid_partition_by, Importance.MEDIUM,
            "Comma-separated partition columns (Hive-style col=value directories). '_date' is "
            "the UTC date of the record's Kafka timestamp.", group="Table", order_in_group=3)
    .define(MODEL, ConfigType.STRING, None, _valid_model, Importance.MEDIUM,
            "Optional module:Class of a pydantic model defining the table's value columns; "
            "records that fail validation go to the errant record reporter.",
            group="Table", order_in_group=4)
    .define(VALUE_FORMAT, ConfigType.STRING, "auto", ValidString(["auto", "json"]),
            Importance.MEDIUM,
            "json: byte values (ByteArrayConverter) are JSON objects the sink parses in bulk with "
            "Arrow, the fast way to load JSON; auto: values as the converter gives them (bytes "
            "are stored as a binary 'value' column).")
    .define(INCLUDE_KEY, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Add the record key as column _key.", group="Table", order_in_group=5)
    .define(MASTER, ConfigType.STRING, "local[*]", non_empty_string, Importance.MEDIUM,
            "Spark master or Spark Connect URL (sc://...); an active session is reused.",
            group="Spark", order_in_group=1)
    .define(FLUSH_SIZE, ConfigType.INT, 10000, Range.at_least(1), Importance.MEDIUM,
            "Rows per write: once this many are buffered, exactly this many are written (the "
            "rest waits for the next write).", group="Spark", order_in_group=2)
    .define(FLUSH_INTERVAL, ConfigType.LONG, 10000, Range.at_least(0), Importance.MEDIUM,
            "A non-empty buffer older than this (ms) is written.", group="Spark",
            order_in_group=3)
)


def validate_config(props: dict[str, Any]) -> list[ConfigValue]:
    """Per-key results, plus the cross-key rule that 'path' or 'table' is set."""
    values = CONFIG_DEF.validate(props)
    by_name = {v.name: v for v in values}
    if not by_name[PATH].value and not by_name[TABLE].value \
            and not by_name[PATH].errors and not by_name[TABLE].errors:
        message = ("SparkSink needs a destination: set \"path\" (a Parquet table directory) or "
                   "\"table\" (a metastore table name), or both")
        by_name[PATH].errors.append(message)
        by_name[TABLE].errors.append(message)
    return values


def parse_config(props: dict[str, Any]) -> dict[str, Any]:
    values = validate_config(props)
    errors = list(dict.fromkeys(e for v in values for e in v.errors))
    if errors:
        raise ConfigException("; ".join(errors))
    return {v.name: v.value for v in values}


class SparkSinkConnector(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        parse_config(props)
        self.props = dict(props)

    def task_class(self) -> type:
        return SparkSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.props, TASK_ID: str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, props: dict[str, str]) -> list[ConfigValue]:
        return validate_config(props)

    def alter_offsets(self, props: dict[str, str], offsets: dict) -> bool:
        raise ConnectException(
            "SparkSink keeps its offsets in the table's commit log (<path>/_streams_sink) and "
            "rewinds the consumer to it when partitions are assigned, so changing the consumer "
            "group's offsets would have no effect. To re-ingest, write to a new path or table.")


def _loads(value: Any) -> Any:
    """A ByteArrayConverter value decoded as JSON (None stays None); ValueError if not JSON."""
    return json.loads(value) if isinstance(value, bytes | bytearray) else value


# -- the task ---------------------------------------------------------------------------------
@dataclass
class _Buffer:
    """What one topic-partition has buffered since its last flush."""

    batches: list[pa.RecordBatch] = field(default_factory=list)
    raw: list[SinkRecord] = field(default_factory=list)  # kept until the schema is fixed
    start: int | None = None  # first offset covered
    next: int | None = None  # next offset covered (bad records included)

    def rows(self, converted: bool) -> int:
        return sum(b.num_rows for b in self.batches) if converted else len(self.raw)

    def head(self, rows: int) -> _Buffer | None:
        """A buffer of the first ``rows`` rows (0 < rows < this buffer's rows), covering the
        offsets before the next row's; None if the batches have no offset column to split by."""
        taken: list[pa.RecordBatch] = []
        for batch in self.batches:
            if sch.OFFSET not in batch.schema.names:
                return None
            if batch.num_rows <= rows:
                taken.append(batch)
                rows -= batch.num_rows
                continue
            split_at = batch.column(sch.OFFSET)[rows].as_py()
            if rows:
                taken.append(batch.slice(0, rows))
            return _Buffer(taken, [], self.start, split_at)
        raise ValueError(f"a buffer of {sum(b.num_rows for b in self.batches)} rows has no "
                         f"row {rows}")  # pragma: no cover - callers pass rows < self.rows()

    def drop_below(self, offset: int) -> None:
        """Forget the rows below ``offset`` (a commit covers them)."""
        if self.start is None or offset <= self.start:
            return
        kept = []
        for batch in self.batches:
            if sch.OFFSET in batch.schema.names:
                batch = batch.filter(pc.greater_equal(batch.column(sch.OFFSET), offset))
            if batch.num_rows:
                kept.append(batch)
        self.batches = kept
        if self.next is not None and self.next <= offset:
            self.start = self.next = None
        else:
            self.start = offset


class SparkSinkTask(SinkTask):
    """See the module docstring; all methods are serialised by one lock (the worker may call
    ``open`` from its rebalance callback while ``put`` runs in a thread). The background flush
    owns the buffers it was handed and ``self.log`` while it runs; it publishes the committed
    offsets in ``self.committed`` (a dict replaced whole, so reading it needs no lock)."""

    def start(self, props: dict[str, str]) -> None:
        from streams.spark import get_spark_session

        cfg = parse_config(props)
        self.connector = props.get("name") or "spark-sink"
        self.task_id = int(props.get(TASK_ID, "0") or 0)
        self.flush_size: int = cfg[FLUSH_SIZE]
        self.interval = cfg[FLUSH_INTERVAL] / 1000
        self.partition_by: list[str] = cfg[PARTITION_BY]
        self.include_key: bool = cfg[INCLUDE_KEY]
        self.model = load_model(cfg[MODEL]) if cfg[MODEL] else None
        self.table_name: str | None = cfg[TABLE]
        # ByteArrayConverter values: JSON texts this task parses itself, in bulk (Arrow's JSON
        # reader) where it can; see _convert. Off for a table that stores them as binary 'value'.
        self.bytes_values = cfg[VALUE_FORMAT] == "json"
        self.raw_json = self.bytes_values
        self.lock = threading.RLock()
        self.buffers: dict[TP, _Buffer] = {}
        self.floor: dict[TP, int] = {}
        self.pending: list[Future[Any]] = []
        self.warned: set[str] = set()
        self.buffer_since: float | None = None
        self.timer: threading.Timer | None = None
        self.builder: sch.BatchBuilder | None = None
        self.schemas_seen: set[Any] = set()  # Connect schemas checked for new fields
        self.dropped = 0
        self.table_ready = False
        self.spark = get_spark_session(cfg[MASTER])
        path = local_path(cfg[PATH]) if cfg[PATH] else self._table_location()
        self.log = CommitLog(path.resolve())
        report = self.log.recover(self.connector, self.task_id)
        self.committed: dict[TP, int] = dict(self.log.offsets)
        self.flusher = FlushThread(f"spark-sink-{self.task_id}-flush")
        self.log_lock = threading.Lock()  # the flush threads share self.log
        if report.rolled_forward or report.orphans_deleted:
            log.warning("%s-%d: recovery rolled forward commits %s, deleted staged flushes %s",
                        self.connector, self.task_id, report.rolled_forward,
                        report.orphans_deleted)
        if self.log.schema is not None:
            self._set_struct(sch.StructType.fromJson(self.log.schema), from_log=True)
        elif self.model is not None:
            self._set_struct(sch.table_struct(sch.model_struct(self.model), self._key_type(),
                                              sch.DATE in self.partition_by))
        elif self._table_exists():
            self._set_struct(self.spark.table(self.table_name).schema)
        if self.builder is not None and self.log.sequence:
            self._ensure_table()

    # -- schema ----------------------------------------------------------------------------------
    def _key_type(self, records: list[SinkRecord] | None = None) -> Any:
        if not self.include_key:
            return None
        if any(isinstance(r.key, bytes | bytearray) for r in records or []):
            return sch.BinaryType()
        return sch.StringType()

    def _set_struct(self, struct: sch.StructType, from_log: bool = False) -> None:
        missing = [c for c in self.partition_by if c not in struct.names]
        if missing:
            raise ConnectException(f"partition.by columns {missing} are not columns of the table "
                                   f"(columns: {', '.join(struct.names)})")
        if from_log and list(self.log.partition_by) != self.partition_by:
            raise ConnectException(
                f"partition.by={','.join(self.partition_by)} differs from the table's "
                f"{','.join(self.log.partition_by) or '(none)'} fixed in {self.log.commits_dir}")
        self.builder = sch.BatchBuilder(struct)
        legacy = [(n, t) for n, t, _ in self.builder.value_fields] == [(sch.VALUE,
                                                                       sch.BinaryType())]
        self.raw_json = self.bytes_values and not legacy

    def _fix_schema(self) -> None:
        """First flush without a known schema: infer it from everything buffered."""
        self.log.refresh()
        if self.log.schema is not None:
            self._set_struct(sch.StructType.fromJson(self.log.schema), from_log=True)
        else:
            acc = sch.ValueTypeAccumulator()
            raw = [r for buf in self.buffers.values() for r in buf.raw]
            if self.raw_json:  # JSON texts: infer from the decoded values (bad ones reported
                for r in raw:  # when converted)
                    with contextlib.suppress(ValueError):
                        acc.add(_loads(r.value), None)
            else:
                for r in raw:
                    acc.add(r.value, r.value.schema if isinstance(r.value, sch.Struct)
                            else r.value_schema)
            self._set_struct(sch.table_struct(acc.struct(), self._key_type(raw),
                                              sch.DATE in self.partition_by))
            log.info("%s-%d: inferred table schema %s", self.connector, self.task_id,
                     self.builder.struct.simpleString() if self.builder else "")
            self._commit_schema()
        for tp, buf in self.buffers.items():  # the records as rows of the fixed schema
            batch = self._convert(tp, buf.raw) if buf.raw else None
            buf.batches = [batch] if batch is not None and batch.num_rows else []
            buf.raw = []
        self._ensure_table()

    def _maybe_widen(self, records: list[SinkRecord]) -> None:
        """Widen the table when records carry a Connect schema (a registry converter's) with
        fields the table lacks: a compatible schema evolution adds fields, and they become new
        nullable columns instead of being dropped. Existing columns keep their types."""
        if self.model is not None or self.raw_json:
            return
        builder = self.builder
        assert builder is not None
        added: dict[str, Any] = {}
        for r in records:
            schema = r.value.schema if isinstance(r.value, sch.Struct) else None
            if schema is None or schema in self.schemas_seen:
                continue
            self.schemas_seen.add(schema)
            for f in schema.fields:
                if f.name not in builder.value_names and f.name not in sch.RESERVED:
                    added.setdefault(f.name, sch.from_connect(f.schema))
        if added:
            self._widen(added)

    def _widen(self, added: dict[str, Any]) -> None:
        """Write what is buffered with the current columns, then commit the wider schema as an
        entry of its own (``widen``) and convert to it; for a metastore table also ADD COLUMNS.
        Another task may have widened first: its columns are kept and ours added to them."""
        self._flush(None)
        for _attempt in range(5):
            with self.log_lock:
                self.log.refresh()
                current = sch.StructType.fromJson(self.log.schema) if self.log.schema \
                    else self.builder.struct  # type: ignore[union-attr]
            values = [f for f in current.fields if f.name not in sch.RESERVED]
            names = {f.name for f in values}
            new = [sch.StructField(n, t, True) for n, t in added.items() if n not in names]
            if not new:
                self._set_struct(current)
                break
            key_type = current[sch.KEY].dataType if sch.KEY in current.names else None
            struct = sch.table_struct(sch.StructType(values + new), key_type,
                                      sch.DATE in self.partition_by)
            entry = CommitEntry(self.log.new_writer(self.connector, self.task_id),
                                self.connector, self.task_id, (), 0, {}, {}, struct.jsonValue(),
                                tuple(self.partition_by), widen=True)
            try:
                with self.log_lock:
                    self.log.commit(entry)
            except CommitConflict:
                continue  # the log moved: look again
            log.info("%s-%d: table widened with columns %s", self.connector, self.task_id,
                     ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in new))
            self._set_struct(struct)
            break
        else:
            raise ConnectException("SparkSink could not widen the table schema after 5 attempts")
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """ALTER TABLE ... ADD COLUMNS for columns of the schema a metastore table lacks
        (idempotent: also run when a restart finds a widening the table missed)."""
        if self.table_name is None or self.builder is None or not self._table_exists():
            return
        have = set(self.spark.table(self.table_name).columns)
        missing = [f for f in self.builder.struct.fields if f.name not in have]
        if missing:
            columns = ", ".join(f"{sch.quote(f.name)} {sch.ddl_type(f.dataType)}"
                                for f in missing)
            self.spark.sql(f"ALTER TABLE {self.table_name} ADD COLUMNS ({columns})")

    def _commit_schema(self) -> None:
        """Fix the inferred schema with an entry of its own (no rows, no offsets), before any
        data, so that every data flush can run in the background; if another task fixed one
        first, take it."""
        assert self.builder is not None
        entry = CommitEntry(self.log.new_writer(self.connector, self.task_id), self.connector,
                            self.task_id, (), 0, {}, {}, self.builder.struct.jsonValue(),
                            tuple(self.partition_by))
        try:
            self.log.commit(entry)
        except CommitConflict:
            log.warning("%s-%d: another task fixed the table schema first; converting to it",
                        self.connector, self.task_id)
            self._set_struct(sch.StructType.fromJson(self.log.schema), from_log=True)

    # -- records ---------------------------------------------------------------------------------
    def put(self, records: list[SinkRecord]) -> None:
        with self.lock:
            self.flusher.check()
            groups: dict[TP, list[SinkRecord]] = {}
            floor = self.floor
            for r in records:
                tp = (r.original_topic, r.original_kafka_partition)
                offset = r.original_kafka_offset
                if offset < floor.get(tp, -1):
                    self.dropped += 1  # already committed, or redelivered after a rewind
                    continue
                floor[tp] = offset + 1
                groups.setdefault(tp, []).append(r)
            if self.builder is not None and groups:
                self._maybe_widen(records)
            for tp, group in groups.items():
                batch = self._convert(tp, group) if self.builder is not None else None
                raw = group if self.builder is None else None  # for schema inference
                self._buffer(tp, batch, group[0].original_kafka_offset,
                             group[-1].original_kafka_offset + 1, raw)
            self._after_put(bool(groups))

    def put_batches(self, batches: list[SinkRecordBatch]) -> None:
        """``put`` for columns: JSON texts go to Arrow's reader with no record built per row,
        once the table schema is committed (until then, and for what Arrow cannot take
        exactly, records go the way of ``put``)."""
        with self.lock:
            builder = self.builder
            if builder is None or not self.raw_json \
                    or self.model is not None or builder.json_schema is None:
                self.put([record for batch in batches for record in batch.records()])
                return
            self.flusher.check()
            added = False
            for columns in batches:
                tp = (columns.topic, columns.partition)
                floor = self.floor.get(tp, -1)
                first = bisect.bisect_left(columns.offsets, floor) \
                    if columns.offsets[0] < floor else 0
                self.dropped += first  # already committed, or redelivered after a rewind
                if first == len(columns):
                    continue
                offsets = columns.offsets[first:] if first else columns.offsets
                values = columns.values[first:] if first else columns.values
                keys = (columns.keys[first:] if first else columns.keys) \
                    if builder.key_type is not None else []
                timestamps = columns.timestamps[first:] if first else columns.timestamps
                self.floor[tp] = offsets[-1] + 1
                built = self._bulk_json(tp, values, keys, offsets, timestamps)
                if built is None:  # record by record
                    batch = self._convert(tp, [columns.record(i)
                                               for i in range(first, len(columns))])
                else:
                    batch, bad = built
                    for i, message in bad.items():  # keys only
                        self._errant(columns.record(first + i), message)
                self._buffer(tp, batch, offsets[0], offsets[-1] + 1, None)
                added = True
            self._after_put(added)

    def _buffer(self, tp: TP, batch: pa.RecordBatch | None, start: int, end: int,
                raw: list[SinkRecord] | None) -> None:
        """Add what one put brought for ``tp``: its rows (if any), records and offsets."""
        buf = self.buffers.setdefault(tp, _Buffer())
        if batch is not None and batch.num_rows:
            buf.batches.append(batch)
        if raw is not None:
            buf.raw.extend(raw)
        if buf.start is None:
            buf.start = start
        buf.next = end

    def _after_put(self, added: bool) -> None:
        if added and self.buffer_since is None:
            self.buffer_since = time.monotonic()
            self._arm_timer()
        if self._due():
            self._flush_due()

    def _convert(self, tp: TP, records: list[SinkRecord]) -> pa.RecordBatch | None:
        """An Arrow batch of ``records`` (one topic-partition); bad ones go to the reporter."""
        builder = self.builder
        assert builder is not None
        raw_values: list[Any] = [r.value for r in records]
        if self.raw_json:
            built = self._bulk_json(
                tp, raw_values, [r.key for r in records] if builder.key_type is not None else [],
                [r.original_kafka_offset for r in records], [r.timestamp for r in records])
            if built is not None:
                batch, bad = built
                for i, message in bad.items():  # keys only
                    self._errant(records[i], message)
                return batch
            records, raw_values = self._decode(records)  # record by record
        good: list[SinkRecord] = []
        values: list[dict[str, Any]] = []
        if self.model is not None:
            for r, raw_value in zip(records, raw_values, strict=True):
                try:
                    row = self.model.model_validate(sch.value_columns(raw_value))
                except Exception as exc:
                    self._errant(r, f"does not match {self.model.__name__}: {exc}")
                    continue
                good.append(r)
                values.append(row.model_dump(by_alias=True))
        else:
            good = records
            values = [sch.value_columns(v) for v in raw_values]
            names = builder.value_names
            for v in values:
                if not v.keys() <= names:
                    self._warn_unknown(v.keys() - names)
        if not good:
            return None
        batch, bad = builder.build(
            values, [r.key for r in good] if builder.key_type is not None else [], tp[0], tp[1],
            [r.original_kafka_offset for r in good], [r.timestamp for r in good])
        for i, message in bad.items():
            self._errant(good[i], message)
        return batch

    def _bulk_json(self, tp: TP, values: list[Any], keys: list[Any], offsets: list[int],
                   timestamps: list[int | None]
                   ) -> tuple[pa.RecordBatch, dict[int, str]] | None:
        """The fast path for JSON texts: the whole batch parsed by Arrow, and the rows whose key
        could not be stored (index: message); None where Arrow cannot take the batch exactly
        (a model, a schema Arrow's reader does not produce, a value that is not bytes, a text
        that is not a JSON object of the table's types), so the caller goes record by record."""
        builder = self.builder
        assert builder is not None
        if self.model is not None or builder.json_schema is None \
                or set(map(type, values)) != {bytes}:
            return None
        parsed = sch.read_json_objects(values, builder.json_schema)
        if parsed is None:
            return None
        columns, unknown = parsed
        if unknown:
            self._warn_unknown(set(unknown))
        return builder.build([], keys, tp[0], tp[1], offsets, timestamps, value_columns=columns)

    def _decode(self, records: list[SinkRecord]) -> tuple[list[SinkRecord], list[Any]]:
        """The records whose (bytes) values are JSON, and their decoded values; the others go
        to the reporter."""
        good: list[SinkRecord] = []
        values: list[Any] = []
        for r in records:
            try:
                value = _loads(r.value)
            except ValueError as exc:
                self._errant(r, f"value is not JSON: {exc}")
                continue
            good.append(r)
            values.append(value)
        return good, values

    def _warn_unknown(self, fields: set[str]) -> None:
        new = fields - self.warned
        if new:
            self.warned |= new
            log.warning("%s-%d: fields %s are not columns of the table (schema fixed in %s); "
                        "they are dropped", self.connector, self.task_id, sorted(new),
                        self.log.commits_dir)

    def _errant(self, record: SinkRecord, message: str) -> None:
        error = DataException(f"SparkSink cannot write record {record.original_topic}-"
                              f"{record.original_kafka_partition}@{record.original_kafka_offset}: "
                              f"{message}")
        reporter = self.context.errant_record_reporter() if hasattr(self, "context") else None
        if reporter is None:
            raise ConnectException(f"{error}. Set errors.tolerance=all (and optionally "
                                   "errors.deadletterqueue.topic.name) to skip such records.")
        result = reporter.report(record, error)
        if isinstance(result, Future):
            self.pending.append(result)

    # -- flushing --------------------------------------------------------------------------------
    def _buffered_rows(self) -> int:
        converted = self.builder is not None
        return sum(b.rows(converted) for b in self.buffers.values())

    def _due(self) -> bool:
        if self.buffer_since is None:
            return False
        return self._buffered_rows() >= self.flush_size \
            or time.monotonic() - self.buffer_since >= self.interval

    def _arm_timer(self) -> None:
        if self.timer is None and self.interval > 0 and hasattr(self, "context"):
            self.timer = threading.Timer(self.interval, self.context.request_commit)
            self.timer.daemon = True
            self.timer.start()

    def _disarm_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _flush_due(self) -> None:
        """Flush while one is due: ``flush.size`` rows while that many are buffered, else all.

        Flushes run in the background; the first due one infers and commits the table schema
        in this thread before."""
        while self._due():
            if self.builder is None:
                self._fix_schema()
            limit = self.flush_size if self._buffered_rows() >= self.flush_size else None
            if not self._hand_over(limit):
                self._reset_timer_if_idle()
                return

    def _hand_over(self, limit: int | None) -> bool:
        """Give the flush threads ``limit`` buffered rows (all if None) to write; False if none.
        Waits while as many flushes as they take are in flight (backpressure)."""
        self.flusher.check()
        selected = self._select(None, limit)
        if not selected:
            return False
        self._forget(selected)
        pending, self.pending = self.pending, []
        self.flusher.submit(lambda turn: self._commit_buffers(selected, pending, turn))
        return True

    def _flush(self, only: list[TP] | None) -> None:
        """Write and commit the buffers of ``only`` (all if None) in this thread, after the
        flush in flight (so commits stay in order); raises if that one failed."""
        self.flusher.wait()
        self.flusher.check()
        if not any(self.buffers[tp].next is not None
                   for tp in (self.buffers if only is None else only) if tp in self.buffers):
            return
        if self.builder is None:
            self._fix_schema()
        selected = self._select(only, None)
        pending, self.pending = self.pending, []
        self._commit_buffers(selected, pending, None)
        # Committed (or all already covered by the log): these rows are the table's now,
        # whatever happens next (if a rename failed, the next start rolls the entry forward).
        self._forget(selected)

    def _select(self, only: list[TP] | None, limit: int | None) -> dict[TP, _Buffer]:
        """What the next flush writes: the buffers of ``only`` (all if None) in order, up to
        ``limit`` rows (all if None); the last one taken is split at a row (its head taken)
        when it holds more than the rows still wanted."""
        selected: dict[TP, _Buffer] = {}
        wanted = limit
        for tp in list(self.buffers if only is None else only):
            buf = self.buffers.get(tp)
            if buf is None or buf.next is None:
                continue
            if wanted is not None:
                if wanted <= 0:
                    break
                rows = buf.rows(True)
                head = buf.head(wanted) if rows > wanted else None
                if head is not None:
                    selected[tp] = head
                    break
                wanted -= rows
            selected[tp] = buf
        return selected

    def _forget(self, flushed: dict[TP, _Buffer]) -> None:
        """Remove what ``flushed`` holds from the buffers (whole buffers, or the head of a split
        one); what stays counts as buffered from now on."""
        for tp, taken in flushed.items():
            buf = self.buffers.get(tp)
            if buf is taken:
                del self.buffers[tp]
            elif buf is not None and taken.next is not None:
                buf.drop_below(taken.next)
        if any(b.next is not None for b in self.buffers.values()):
            self.buffer_since = time.monotonic()
            self._disarm_timer()
            self._arm_timer()
        else:
            self._reset_timer_if_idle()

    def _commit_buffers(self, buffers: dict[TP, _Buffer], pending: list[Future[Any]],
                        turn: Turn | None) -> CommitEntry | None:
        """Write, commit and apply ``buffers``; None if the log already covered all of them.

        Runs in a flush thread (with its ``turn`` to commit, see :mod:`connect.spark.flusher`:
        the Spark write may overlap another flush's, the commit waits for the earlier flushes)
        or under the task lock with no flush in flight (``turn`` None). ``self.log`` is used
        under ``self.log_lock``.
        """
        began = time.monotonic()
        for future in pending:  # bad records reach the DLQ before their offsets commit
            future.result(timeout=120)
        entry = None
        for _attempt in range(5):
            with self.log_lock:
                self.log.refresh()
                self.committed = dict(self.log.offsets)
                self._drop_committed(buffers, raise_floor=turn is None)
            assert self.builder is not None
            live = {tp: buf for tp, buf in buffers.items() if buf.next is not None}
            if not live:
                return None
            writer = self.log.new_writer(self.connector, self.task_id)
            with self.log.claim(writer):  # a restart of this task leaves our staging alone
                entry = self._write_and_commit(live, writer, turn)
            if entry is not None:
                break
        else:
            raise ConnectException("SparkSink could not commit after 5 attempts (conflicting "
                                   "writers on the same table and partitions?)")
        with self.log_lock:
            self._ensure_table()
            if self.table_name is not None and entry.files:
                self._refresh_table()
        log.info("%s-%d: committed %d rows in %d files as entry %d (%.2fs)", self.connector,
                 self.task_id, entry.rows, len(entry.files), entry.sequence,
                 time.monotonic() - began)
        return entry

    def _reset_timer_if_idle(self) -> None:
        if not any(b.next is not None for b in self.buffers.values()):
            self.buffer_since = None
            self._disarm_timer()

    def _drop_committed(self, buffers: dict[TP, _Buffer], raise_floor: bool) -> None:
        """Zombie guard: drop rows another writer has committed meanwhile for our partitions.

        ``raise_floor`` (not from the flush thread, which must not race ``put`` on the floor)
        also drops such records on arrival; without it the next flush drops them here.
        """
        for tp, buf in buffers.items():
            committed = self.log.offsets.get(tp)
            if committed is None or buf.start is None or committed <= buf.start:
                continue
            log.warning("%s-%d: %s-%d was committed up to %d by another writer (a zombie task?);"
                        " dropping our rows below it", self.connector, self.task_id, tp[0], tp[1],
                        committed)
            if raise_floor:
                self.floor[tp] = max(self.floor.get(tp, -1), committed)
            buf.drop_below(committed)

    def _write_and_commit(self, selected: dict[TP, _Buffer], writer: str,
                          turn: Turn | None) -> CommitEntry | None:
        """Stage ``selected`` as ``writer``, write it, wait for ``turn``, commit and apply it;
        None after a conflict (staging removed)."""
        assert self.builder is not None
        batches = [b for buf in selected.values() for b in buf.batches]
        rows = sum(b.num_rows for b in batches)
        files = self._write(pa.Table.from_batches(batches, self.builder.arrow_schema), writer) \
            if rows else []
        entry = CommitEntry(
            writer, self.connector, self.task_id, tuple(files), rows,
            {tp: buf.next for tp, buf in selected.items()},  # type: ignore[misc]
            {tp: buf.start for tp, buf in selected.items()},  # type: ignore[misc]
            self.builder.struct.jsonValue(), tuple(self.partition_by))
        if turn is not None:
            try:
                turn()  # every earlier flush has committed (raises if one failed)
            except BaseException:
                shutil.rmtree(self.log.staging_root / writer, ignore_errors=True)
                raise
        try:
            with self.log_lock:
                committed = self.log.commit(entry)
                self.committed = dict(self.log.offsets)
                if committed.files:
                    self.log.apply(committed)
            return committed
        except CommitConflict as exc:
            log.warning("%s-%d: commit conflict, retrying: %s", self.connector, self.task_id, exc)
            shutil.rmtree(self.log.staging_root / writer, ignore_errors=True)
            return None

    def _write(self, table: pa.Table, writer: str) -> list[DataFile]:
        assert self.builder is not None
        staging = self.log.staging_root / writer
        try:
            df = self.spark.createDataFrame(table.combine_chunks(), schema=self.builder.struct)
            if table.num_rows <= _ONE_FILE_ROWS:
                df = df.coalesce(1)  # one file per partition value and flush, as fast here
            out = df.write.mode("append")
            if self.partition_by:
                out = out.partitionBy(*self.partition_by)
            out.parquet(str(staging))
        except Exception as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ConnectException(f"Spark could not write {table.num_rows} rows to {staging}: "
                                   f"{exc}") from exc
        files: list[DataFile] = []
        paths: list[Path] = []
        tag = writer[-12:]
        for root, dirs, names in os.walk(staging):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_")) or "=" in d]
            rel = Path(root).relative_to(staging)
            for name in names:
                if not name.startswith("part-") or name.endswith(".crc"):
                    continue
                stem, dot, rest = name.partition(".")
                final = rel / f"{stem}-{tag}{dot}{rest}"
                files.append(DataFile(f"{STAGING_DIR}/{writer}/{(rel / name).as_posix()}",
                                      final.as_posix()))
                paths.append(Path(root) / name)
        fsync_tree(paths)
        return files

    # -- metastore table -------------------------------------------------------------------------
    def _table_exists(self) -> bool:
        return self.table_name is not None and bool(self.spark.catalog.tableExists(self.table_name))

    def _table_location(self) -> Path:
        assert self.table_name is not None
        if self._table_exists():
            rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {self.table_name}").collect()
            location = next((r[1] for r in rows if r[0] == "Location"), None)
            if location:
                return local_path(location)
        warehouse = local_path(self.spark.conf.get("spark.sql.warehouse.dir"))
        parts = self.table_name.split(".")
        if len(parts) > 1 and parts[-2].lower() != "default":
            return warehouse / f"{parts[-2]}.db" / parts[-1]
        return warehouse / parts[-1]

    def _ensure_table(self) -> None:
        if self.table_name is None or self.table_ready or self.builder is None:
            return
        if not self._table_exists():
            struct = self.builder.struct
            columns = ", ".join(f"{sch.quote(f.name)} {sch.ddl_type(f.dataType)}"
                                for f in struct.fields)
            partitioned = (" PARTITIONED BY (" + ", ".join(map(sch.quote, self.partition_by))
                           + ")") if self.partition_by else ""
            location = str(self.log.table_dir).replace("\\", "\\\\").replace("'", "\\'")
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.table_name} ({columns}) USING "
                           f"parquet{partitioned} LOCATION '{location}'")
        else:
            self._add_missing_columns()
        self.table_ready = True
        self._refresh_table()

    def _refresh_table(self) -> None:
        try:
            if self.partition_by:
                self.spark.sql(f"ALTER TABLE {self.table_name} RECOVER PARTITIONS")
            self.spark.sql(f"REFRESH TABLE {self.table_name}")
        except Exception as exc:  # the data is committed; readers just see it later
            log.error("%s-%d: could not refresh table %s: %s", self.connector, self.task_id,
                      self.table_name, exc)

    # -- offsets and lifecycle -------------------------------------------------------------------
    def open(self, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.flusher.wait()  # its offsets decide the rewind; a failure is raised by put
            self.log.refresh()
            self.committed = dict(self.log.offsets)
            for tp in partitions:
                key = (tp.topic, tp.partition)
                buffered = self.buffers.get(key)
                start = max(self.log.offsets.get(key, -1),
                            buffered.next if buffered and buffered.next is not None else -1)
                if start < 0:
                    self.floor.pop(key, None)
                    continue
                self.floor[key] = start  # records below it may still arrive: put drops them
                self.context.offset(TopicPartition(*key), start)

    def pre_commit(self, current_offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        with self.lock:
            self.flusher.check()
            if self._due():
                self._flush_due()
            wanted = {(tp[0], tp[1]) for tp in current_offsets}
            committed = self.committed  # committed entries only: never a flush in flight
            return {TopicPartition(*tp): offset for tp, offset in committed.items()
                    if tp in wanted}

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None:
        with self.lock:
            self._flush(None)

    def close(self, partitions: list[TopicPartition]) -> None:
        with self.lock:
            keys = [(tp.topic, tp.partition) for tp in partitions]
            self._flush(keys)
            for key in keys:
                self.buffers.pop(key, None)
                self.floor.pop(key, None)

    def stop(self) -> None:
        if not hasattr(self, "flusher"):
            return  # start failed before anything was buffered
        with self.lock:
            self._disarm_timer()
            try:
                self.flusher.shutdown()  # waits for the flushes in flight
                self._flush(None)  # raises instead if that one failed
            finally:
                with contextlib.suppress(Exception):
                    for future in self.pending:
                        future.cancel()
            if self.dropped:
                log.info("%s-%d: dropped %d already-committed records after rewinds",
                         self.connector, self.task_id, self.dropped)
