"""Topic routing and dropping: RegexRouter, TimestampRouter and Filter."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from connect.data import DataException
from connect.records import ConnectRecord
from connect.transforms import dateformat
from connect.transforms._base import KAFKA_PACKAGE, SMT
from connect.transforms._config import REQUIRED, ConfigKey
from streams.config import ConfigError


def java_replacement(replacement: str) -> Any:
    """A ``re`` replacement function for a Java ``Matcher`` replacement string.

    Java writes groups as ``$1`` / ``${name}`` and escapes with a backslash (``\\$`` is a dollar).
    """
    parts: list[tuple[str, Any]] = []
    i, n = 0, len(replacement)
    literal: list[str] = []
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ConfigError("character to be escaped is missing in replacement "
                                  f"{replacement!r}")
            literal.append(replacement[i + 1])
            i += 2
        elif c == "$":
            if i + 1 >= n:
                raise ConfigError(f"illegal group reference: group index is missing in "
                                  f"replacement {replacement!r}")
            if replacement[i + 1] == "{":
                end = replacement.find("}", i + 2)
                if end < 0:
                    raise ConfigError(f"named capturing group is missing trailing '}}' in "
                                      f"replacement {replacement!r}")
                ref: Any = replacement[i + 2:end]
                i = end + 1
            else:
                j = i + 1
                while j < n and replacement[j].isdigit():
                    j += 1
                if j == i + 1:
                    raise ConfigError(f"illegal group reference in replacement {replacement!r}")
                ref = int(replacement[i + 1:j])
                i = j
            if literal:
                parts.append(("lit", "".join(literal)))
                literal = []
            parts.append(("grp", ref))
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append(("lit", "".join(literal)))

    def expand(match: re.Match[str]) -> str:
        out = []
        for kind, val in parts:
            if kind == "lit":
                out.append(val)
            else:
                try:
                    out.append(match.group(val) or "")
                except IndexError:
                    raise DataException(f"no group {val} in pattern {match.re.pattern!r}") from None
        return "".join(out)

    return expand


class RegexRouter(SMT):
    """Rename the topic with ``replacement`` when the whole topic name matches ``regex``."""

    KAFKA_NAME = KAFKA_PACKAGE + "RegexRouter"
    PURPOSE = "regex routing"
    CONFIG = {
        "regex": ConfigKey("string", REQUIRED, "high", "Regular expression to use for matching."),
        "replacement": ConfigKey("string", REQUIRED, "high", "Replacement string."),
    }

    def configured(self) -> None:
        try:
            self.regex = re.compile(self.config["regex"])
        except re.error as exc:
            raise ConfigError(f"{self.short_name()}: invalid regex "
                              f"{self.config['regex']!r}: {exc}") from None
        self.expand = java_replacement(self.config["replacement"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        topic = record.topic
        if topic is None:
            return record
        match = self.regex.fullmatch(topic)
        if match is None:
            return record
        new_topic = self.regex.sub(self.expand, topic, count=1)
        return record.new_record(new_topic, record.kafka_partition, record.key_schema,
                                 record.key, record.value_schema, record.value, record.timestamp)


class TimestampRouter(SMT):
    """Route to ``topic.format`` with ``${topic}`` and ``${timestamp}`` (``timestamp.format``,
    a SimpleDateFormat pattern in UTC) substituted from the record."""

    KAFKA_NAME = KAFKA_PACKAGE + "TimestampRouter"
    PURPOSE = "timestamp routing"
    CONFIG = {
        "topic.format": ConfigKey("string", "${topic}-${timestamp}", "high",
                                  "Format string which can contain ${topic} and ${timestamp} as "
                                  "placeholders for the topic and timestamp, respectively."),
        "timestamp.format": ConfigKey("string", "yyyyMMdd", "high",
                                      "Format string for the timestamp that is compatible with "
                                      "java.text.SimpleDateFormat."),
    }

    def configured(self) -> None:
        dateformat.validate(self.config["timestamp.format"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        ts = record.timestamp
        if ts is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        when = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=ts)
        formatted = dateformat.format_datetime(when, self.config["timestamp.format"])
        topic = (self.config["topic.format"].replace("${topic}", record.topic)
                 .replace("${timestamp}", formatted))
        return record.new_record(topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp)


class Filter(SMT):
    """Drop every record it is applied to; use it with a predicate (and ``negate``)."""

    KAFKA_NAME = KAFKA_PACKAGE + "Filter"
    PURPOSE = "filter"
    CONFIG: dict[str, ConfigKey] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        return None
