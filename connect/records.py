"""Connect records and headers, like Kafka's ``ConnectRecord``, ``SourceRecord`` and ``SinkRecord``.

Transforms never mutate a record: they call :meth:`ConnectRecord.new_record`, which returns a new
record of the same subclass carrying the subclass-specific fields (source partition/offset for
source records; Kafka offset, timestamp type and the *original* topic/partition/offset for sink
records, which the worker needs to commit offsets and to fill dead-letter headers after an SMT has
renamed the topic).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Self

from connect.data import Schema, SchemaAndValue, infer_schema, validate_value


@dataclass(frozen=True)
class Header:
    """One record header: a key, an optional schema and a value (Kafka's ``ConnectHeader``)."""

    key: str
    schema: Schema | None
    value: Any

    def with_(self, schema: Schema | None, value: Any) -> Header:
        """A header with the same key and a new schema/value."""
        return Header(self.key, schema, value)

    def rename(self, key: str) -> Header:
        return Header(key, self.schema, self.value)


HeaderLike = Header | tuple[str, Any] | tuple[str, Any, Schema | None]


class ConnectHeaders:
    """An ordered, mutable list of headers; several headers may share a key (Kafka semantics).

    ``add(key, value, schema=None)`` infers a schema for a schemaless non-null value when it can.
    """

    __slots__ = ("_headers",)

    def __init__(self, headers: Iterable[HeaderLike] | ConnectHeaders | None = None) -> None:
        self._headers: list[Header] = []
        if headers is not None:
            for h in headers:
                self.add_header(h)

    # -- adding ----------------------------------------------------------------------------------
    def add_header(self, header: HeaderLike) -> ConnectHeaders:
        """Append a Header or a ``(key, value)`` / ``(key, value, schema)`` tuple."""
        if isinstance(header, Header):
            self._headers.append(header)
        elif len(header) == 2:
            self.add(header[0], header[1])
        else:
            self.add(header[0], header[1], header[2])  # type: ignore[misc]
        return self

    def add(self, key: str, value: Any = None, schema: Schema | None = None) -> ConnectHeaders:
        """Append a header; a SchemaAndValue may be passed as ``value``. Returns self."""
        if isinstance(value, SchemaAndValue) and schema is None:
            schema, value = value.schema, value.value
        if not isinstance(key, str):
            raise TypeError(f"header key must be a str, not {type(key).__name__}")
        if schema is None:
            schema = infer_schema(value)
        elif value is not None:
            validate_value(schema, value)
        self._headers.append(Header(key, schema, value))
        return self

    def add_string(self, key: str, value: str | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_STRING_SCHEMA)

    def add_bytes(self, key: str, value: bytes | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_BYTES_SCHEMA)

    def add_all(self, headers: Iterable[HeaderLike]) -> ConnectHeaders:
        for h in headers:
            self.add_header(h)
        return self

    # -- lookup ----------------------------------------------------------------------------------
    def last_with_name(self, key: str) -> Header | None:
        """The last header with ``key`` (the one that wins when a key repeats), or None."""
        for h in reversed(self._headers):
            if h.key == key:
                return h
        return None

    def all_with_name(self, key: str) -> list[Header]:
        return [h for h in self._headers if h.key == key]

    def keys(self) -> list[str]:
        return [h.key for h in self._headers]

    def __contains__(self, key: object) -> bool:
        return any(h.key == key for h in self._headers)

    # -- removal and rewriting -------------------------------------------------------------------
    def remove(self, key: str) -> ConnectHeaders:
        """Remove every header with ``key``. Returns self."""
        self._headers = [h for h in self._headers if h.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> ConnectHeaders:
        """Keep only the last header of ``key`` (or of every key when None)."""
        seen: set[str] = set()
        kept: list[Header] = []
        for h in reversed(self._headers):
            if (key is None or h.key == key) and h.key in seen:
                continue
            seen.add(h.key)
            kept.append(h)
        self._headers = kept[::-1]
        return self

    def rename(self, key: str, new_key: str) -> ConnectHeaders:
        self._headers = [h.rename(new_key) if h.key == key else h for h in self._headers]
        return self

    def clear(self) -> ConnectHeaders:
        self._headers.clear()
        return self

    def duplicate(self) -> ConnectHeaders:
        """A shallow copy: new list, same (immutable) Header objects."""
        return ConnectHeaders(self._headers)

    def is_empty(self) -> bool:
        return not self._headers

    def size(self) -> int:
        return len(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __iter__(self) -> Iterator[Header]:
        return iter(list(self._headers))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConnectHeaders):
            return self._headers == other._headers
        return NotImplemented

    def __repr__(self) -> str:
        return f"ConnectHeaders({self._headers!r})"


def _as_headers(headers: Iterable[HeaderLike] | ConnectHeaders | None) -> ConnectHeaders:
    if isinstance(headers, ConnectHeaders):
        return headers
    return ConnectHeaders(headers)


_new_object = object.__new__


class TimestampType(str, Enum):
    """Kafka's record timestamp types (the value is Kafka's display name)."""

    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


class ConnectRecord:
    """Fields shared by source and sink records. ``kafka_partition`` and ``timestamp`` may be None.

    ``timestamp`` is epoch milliseconds. ``headers`` is always a :class:`ConnectHeaders`.
    """

    __slots__ = ("topic", "kafka_partition", "key_schema", "key", "value_schema", "value",
                 "timestamp", "_headers")

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None = None,
        headers: Iterable[HeaderLike] | ConnectHeaders | None = None,
    ) -> None:
        if timestamp is not None and timestamp < 0:
            raise ValueError(f"invalid negative timestamp {timestamp}")
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        # None until first asked for (the ``headers`` property): most records carry none.
        self._headers: ConnectHeaders | None = None if headers is None else _as_headers(headers)

    @property
    def headers(self) -> ConnectHeaders:
        """The record's headers. Made on first use for records the worker consumed without any:
        two fewer objects per record for sinks that never look (garbage collection counts them)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = ConnectHeaders()
        return headers

    @headers.setter
    def headers(self, headers: ConnectHeaders) -> None:
        self._headers = headers

    def new_record(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        timestamp: int | None,
        headers: Iterable[HeaderLike] | ConnectHeaders | None = None,
    ) -> Self:
        """A record of the same class with these fields; headers default to a copy of ours."""
        raise NotImplementedError

    def with_(self, **changes: Any) -> Self:
        """Convenience over :meth:`new_record`: ``record.with_(value=..., value_schema=...)``."""
        fields = {
            "topic": self.topic, "kafka_partition": self.kafka_partition,
            "key_schema": self.key_schema, "key": self.key,
            "value_schema": self.value_schema, "value": self.value,
            "timestamp": self.timestamp, "headers": None,
        }
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"unknown record fields: {sorted(unknown)}")
        fields.update(changes)
        return self.new_record(**fields)

    def _base_key(self) -> tuple[Any, ...]:
        return (self.topic, self.kafka_partition, self.key_schema, self.key, self.value_schema,
                self.value, self.timestamp, self.headers)

    def _key(self) -> tuple[Any, ...]:
        return self._base_key()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable headers

    def __repr__(self) -> str:
        extra = self._repr_extra()
        return (f"{type(self).__name__}(topic={self.topic!r}, kafka_partition={self.kafka_partition}"
                f"{extra}, key={self.key!r}, value={self.value!r}, timestamp={self.timestamp}, "
                f"headers={list(self.headers)!r})")

    def _repr_extra(self) -> str:
        return ""


class SourceRecord(ConnectRecord):
    """A record produced by a source task, with the source partition/offset it came from.

    The worker stores ``source_offset`` under ``source_partition`` once Kafka has acked the record,
    and hands it back through the offset storage reader after a restart. Both must be JSON-able.
    """

    __slots__ = ("source_partition", "source_offset")

    def __init__(
        self,
        source_partition: dict[str, Any] | None,
        source_offset: dict[str, Any] | None,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: Any = None,
        value_schema: Schema | None = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Iterable[HeaderLike] | ConnectHeaders | None = None,
    ) -> None:
        super().__init__(topic, kafka_partition, key_schema, key, value_schema, value,
                         timestamp, headers)
        self.source_partition = source_partition
        self.source_offset = source_offset

    def new_record(self, topic, kafka_partition, key_schema, key, value_schema, value,  # noqa: D102
                   timestamp, headers=None) -> SourceRecord:
        return type(self)(
            self.source_partition, self.source_offset, topic, kafka_partition, key_schema, key,
            value_schema, value, timestamp,
            self.headers.duplicate() if headers is None else headers,
        )

    def _key(self) -> tuple[Any, ...]:
        return (*self._base_key(), self.source_partition, self.source_offset)

    def _repr_extra(self) -> str:
        return f", source_partition={self.source_partition!r}, source_offset={self.source_offset!r}"


class SinkRecord(ConnectRecord):
    """A record consumed from Kafka for a sink task.

    ``original_topic``/``original_kafka_partition``/``original_kafka_offset`` keep where it was
    read from even after transforms change topic or partition (KIP-793): offsets are committed and
    dead-letter context headers are written with these.
    """

    __slots__ = ("kafka_offset", "timestamp_type", "original_topic", "original_kafka_partition",
                 "original_kafka_offset")

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        kafka_offset: int,
        timestamp: int | None = None,
        timestamp_type: TimestampType | str = TimestampType.NO_TIMESTAMP_TYPE,
        headers: Iterable[HeaderLike] | ConnectHeaders | None = None,
        original_topic: str | None = None,
        original_kafka_partition: int | None = None,
        original_kafka_offset: int | None = None,
    ) -> None:
        super().__init__(topic, kafka_partition, key_schema, key, value_schema, value,
                         timestamp, headers)
        self.kafka_offset = kafka_offset
        self.timestamp_type = TimestampType(timestamp_type)
        self.original_topic = topic if original_topic is None else original_topic
        self.original_kafka_partition = (
            kafka_partition if original_kafka_partition is None else original_kafka_partition)
        self.original_kafka_offset = (
            kafka_offset if original_kafka_offset is None else original_kafka_offset)

    @classmethod
    def _consumed(cls, topic: str, kafka_partition: int, key_schema: Schema | None, key: Any,
                  value_schema: Schema | None, value: Any, kafka_offset: int,
                  timestamp: int | None, timestamp_type: TimestampType) -> SinkRecord:
        """The worker's constructor for a record it just consumed: no headers (made on first
        use), a TimestampType already, original position = position. Same fields and checks as
        ``__init__`` at a fraction of the cost (it runs once per consumed record)."""
        if timestamp is not None and timestamp < 0:
            raise ValueError(f"invalid negative timestamp {timestamp}")
        self = _new_object(cls)
        self.topic = self.original_topic = topic
        self.kafka_partition = self.original_kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = None
        self.kafka_offset = self.original_kafka_offset = kafka_offset
        self.timestamp_type = timestamp_type
        return self

    def new_record(self, topic, kafka_partition, key_schema, key, value_schema, value,  # noqa: D102
                   timestamp, headers=None) -> SinkRecord:
        return type(self)(
            topic, kafka_partition, key_schema, key, value_schema, value, self.kafka_offset,
            timestamp, self.timestamp_type,
            self.headers.duplicate() if headers is None else headers,
            self.original_topic, self.original_kafka_partition, self.original_kafka_offset,
        )

    def _key(self) -> tuple[Any, ...]:
        return (*self._base_key(), self.kafka_offset, self.timestamp_type, self.original_topic,
                self.original_kafka_partition, self.original_kafka_offset)

    def _repr_extra(self) -> str:
        return f", kafka_offset={self.kafka_offset}"


@dataclass(slots=True)
class SinkRecordBatch:
    """What one topic-partition delivered to a sink task at once, as parallel columns.

    The worker hands these to :meth:`connect.api.SinkTask.put_batches` instead of one
    :class:`SinkRecord` per record when nothing needs the records one by one (no transforms, no
    headers, every key and value converted): a task that writes columns (SparkSink) then skips
    building a record per row and taking it apart again. Offsets ascend; keys and values are
    what the converters made of them.
    """

    topic: str
    partition: int
    offsets: list[int]
    timestamps: list[int | None]
    timestamp_types: list[TimestampType]
    key_schemas: list[Schema | None]
    keys: list[Any]
    value_schemas: list[Schema | None]
    values: list[Any]

    def __len__(self) -> int:
        return len(self.offsets)

    def record(self, i: int) -> SinkRecord:
        """The ``i``-th record as a SinkRecord (for an error report, say)."""
        return SinkRecord._consumed(
            self.topic, self.partition, self.key_schemas[i], self.keys[i], self.value_schemas[i],
            self.values[i], self.offsets[i], self.timestamps[i], self.timestamp_types[i])

    def records(self) -> list[SinkRecord]:
        return [self.record(i) for i in range(len(self.offsets))]


__all__ = [
    "ConnectHeaders", "ConnectRecord", "Header", "SinkRecord", "SinkRecordBatch", "SourceRecord",
    "TimestampType",
]
