"""Timestamp extractors: which time a consumed record carries into the topology (reference §3.5).

An extractor is called as ``extractor(record, partition_time) -> int`` after the record was
deserialized (``record`` is a ``ConsumerRecord`` with the deserialized key and value, as in
Kafka), where ``partition_time`` is the highest timestamp seen so far on that partition (-1
before the first). A negative result drops the record (logged). Kafka-style objects with an
``extract(record, partition_time)`` method and classes are accepted too, as are Kafka's class
names in ``default.timestamp.extractor``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .api import Headers
from .errors import StreamsError, import_object, instantiate

log = logging.getLogger(__name__)

TimestampExtractorFn = Callable[[Any, int], int]


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """What an extractor sees: the consumed record with its key and value deserialized."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int
    headers: Headers = ()


def _where(record: Any) -> str:
    return f"{record.topic}-{record.partition}@{record.offset}"


class FailOnInvalidTimestamp:
    """The default: the record's own (producer or broker) timestamp; negative ones fail."""

    def __call__(self, record: Any, partition_time: int) -> int:
        timestamp = record.timestamp
        if timestamp < 0:
            return self.on_invalid_timestamp(record, timestamp, partition_time)
        return timestamp

    extract = __call__

    def on_invalid_timestamp(self, record: Any, timestamp: int, partition_time: int) -> int:
        raise StreamsError(
            f"input record {_where(record)} has an invalid (negative) timestamp {timestamp}, "
            "possibly written by a producer that did not set one; use a different "
            "timestamp extractor (default.timestamp.extractor or timestamp_extractor=) to "
            "process this data")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogAndSkipOnInvalidTimestamp(FailOnInvalidTimestamp):
    """The record's timestamp; a negative one is logged and the record dropped."""

    def on_invalid_timestamp(self, record: Any, timestamp: int, partition_time: int) -> int:
        log.warning("input record %s will be dropped because it has an invalid (negative) "
                    "timestamp %d", _where(record), timestamp)
        return timestamp


class UsePartitionTimeOnInvalidTimestamp(FailOnInvalidTimestamp):
    """The record's timestamp; a negative one is replaced by the partition's current time."""

    def on_invalid_timestamp(self, record: Any, timestamp: int, partition_time: int) -> int:
        if partition_time < 0:
            raise StreamsError(
                f"could not infer a new timestamp for input record {_where(record)} (invalid "
                f"timestamp {timestamp}) because its partition time is still unknown")
        return partition_time


class WallclockTimestampExtractor:
    """Processing-time semantics: the system clock when the record is processed."""

    def __call__(self, record: Any, partition_time: int) -> int:
        return int(time.time() * 1000)

    extract = __call__

    def __repr__(self) -> str:
        return "WallclockTimestampExtractor()"


_BUILTIN: dict[str, type] = {
    "FailOnInvalidTimestamp": FailOnInvalidTimestamp,
    "LogAndSkipOnInvalidTimestamp": LogAndSkipOnInvalidTimestamp,
    "UsePartitionTimeOnInvalidTimestamp": UsePartitionTimeOnInvalidTimestamp,
    "WallclockTimestampExtractor": WallclockTimestampExtractor,
}
_OURS = (FailOnInvalidTimestamp, WallclockTimestampExtractor)
_SHORT = {
    "fail_on_invalid_timestamp": FailOnInvalidTimestamp,
    "log_and_skip_on_invalid_timestamp": LogAndSkipOnInvalidTimestamp,
    "use_partition_time_on_invalid_timestamp": UsePartitionTimeOnInvalidTimestamp,
    "wallclock": WallclockTimestampExtractor,
    "wallclock_timestamp_extractor": WallclockTimestampExtractor,
}


def resolve_timestamp_extractor(value: Any) -> TimestampExtractorFn:
    """A config value (None, name, Kafka class name, dotted path, class, object, callable)
    -> the extractor callable; ConfigError (a ValueError) if it names nothing usable."""
    from ..config import ConfigError

    if value is None or value == "":
        return FailOnInvalidTimestamp()
    if isinstance(value, str):
        text = value.strip()
        simple = text.rsplit(".", 1)[-1]
        if text.lower() in _SHORT:
            return _SHORT[text.lower()]()
        if simple in _BUILTIN and ("." not in text or text.startswith("org.apache.kafka.")):
            return _BUILTIN[simple]()
        try:
            value = import_object(text)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"unknown timestamp extractor {text!r}: use one of {', '.join(_BUILTIN)} or a "
                f"dotted path to a callable (record, partition_time) -> int ({exc})") from None
    if isinstance(value, type) and issubclass(value, _OURS):
        return value()
    if isinstance(value, _OURS):
        return value  # keeps its type: the task special-cases the default
    try:
        return instantiate(value, "extract", None)
    except TypeError as exc:
        raise ConfigError(f"invalid timestamp extractor: {exc}") from None
