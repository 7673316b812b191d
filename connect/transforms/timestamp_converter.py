"""TimestampConverter: convert a timestamp between unix numbers, formatted strings and the
Date/Time/Timestamp logical types, for the whole key/value or one field (``field``).

``target.type``: string | unix | Date | Time | Timestamp. ``format`` is a SimpleDateFormat
pattern (required for string input or output), always in UTC. ``unix.precision``
(milliseconds | seconds | microseconds | nanoseconds) applies to unix input and output.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from connect.data import (
    DataException,
    Date,
    Schema,
    SchemaType,
    Struct,
    Time,
    Timestamp,
    builder_from,
)
from connect.records import ConnectRecord
from connect.transforms import dateformat
from connect.transforms._base import (
    KAFKA_PACKAGE,
    SMT,
    KeySide,
    ValueSide,
    replace_null_key,
    require_map,
    require_struct,
)
from connect.transforms._config import REQUIRED, ConfigKey, one_of
from streams.config import ConfigError

MILLIS_PER_DAY = 86_400_000
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_PRECISION_FACTOR = {"seconds": (1000, 1), "milliseconds": (1, 1), "microseconds": (1, 1000),
                     "nanoseconds": (1, 1_000_000)}


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def _ms_to_datetime(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=ms)


class TimestampConverter(SMT):
    """See the module docstring."""

    PURPOSE = "converting timestamp formats"
    CONFIG = {
        "field": ConfigKey("string", "", "high",
                           "The field containing the timestamp, or empty if the entire value is "
                           "a timestamp"),
        "target.type": ConfigKey("string", REQUIRED, "high",
                                 "The desired timestamp representation: string, unix, Date, "
                                 "Time, or Timestamp",
                                 one_of("string", "unix", "Date", "Time", "Timestamp")),
        "format": ConfigKey("string", "", "medium",
                            "A SimpleDateFormat-compatible format for the timestamp. Used to "
                            "generate the output when type=string or used to parse the input if "
                            "the input is a string."),
        "unix.precision": ConfigKey("string", "milliseconds", "low",
                                    "The desired Unix precision for the timestamp: seconds, "
                                    "milliseconds, microseconds, or nanoseconds.",
                                    one_of("seconds", "milliseconds", "microseconds",
                                           "nanoseconds")),
        "field.syntax.version": ConfigKey("string", "V1", "medium", "Only V1 is supported.",
                                          one_of("V1")),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        self.target = self.config["target.type"]
        self.format = self.config["format"]
        if self.format:
            dateformat.validate(self.format)
        elif self.target == "string":
            raise ConfigError("TimestampConverter requires format option to be specified when "
                              "using string timestamps")
        self.precision = self.config["unix.precision"]

    # -- raw conversions -------------------------------------------------------------------------
    def _input_type(self, schema: Schema | None, value: Any) -> str:
        if schema is not None:
            if schema.name == Timestamp.LOGICAL_NAME:
                return "Timestamp"
            if schema.name == Date.LOGICAL_NAME:
                return "Date"
            if schema.name == Time.LOGICAL_NAME:
                return "Time"
            if schema.type is SchemaType.STRING:
                return "string"
            if schema.type is SchemaType.INT64:
                return "unix"
            raise DataException(f"Schema {schema!r} does not correspond to a known timestamp "
                                f"type format")
        if isinstance(value, _dt.datetime):
            return "Timestamp"
        if isinstance(value, _dt.date):
            return "Date"
        if isinstance(value, _dt.time):
            return "Time"
        if isinstance(value, str):
            return "string"
        if isinstance(value, int) and not isinstance(value, bool):
            return "unix"
        raise DataException(f"TimestampConverter does not support {type(value).__name__} "
                            f"objects as timestamps")

    def _to_millis(self, kind: str, value: Any) -> int:
        try:
            if kind == "string":
                if not self.format:
                    raise DataException("TimestampConverter requires format option to be "
                                        "specified when using string timestamps")
                try:
                    parsed = dateformat.parse_datetime(value, self.format)
                except ValueError as exc:
                    raise DataException(f"Could not parse timestamp: value ({value}) does not "
                                        f"match pattern ({self.format})") from exc
                return Timestamp.from_logical(Timestamp.SCHEMA, parsed)
            if kind == "unix":
                mul, div = _PRECISION_FACTOR[self.precision]
                return _trunc_div(int(value) * mul, div)
            if kind == "Date":
                return Date.from_logical(Date.SCHEMA, value) * MILLIS_PER_DAY
            if kind == "Time":
                return Time.from_logical(Time.SCHEMA, value)
            return Timestamp.from_logical(Timestamp.SCHEMA, value)
        except (TypeError, AttributeError) as exc:
            raise DataException(f"Expected {kind} timestamp but found {type(value).__name__}") \
                from exc

    def _from_millis(self, ms: int) -> Any:
        target = self.target
        if target == "string":
            return dateformat.format_datetime(_ms_to_datetime(ms), self.format)
        if target == "unix":
            mul, div = _PRECISION_FACTOR[self.precision]
            return _trunc_div(ms * div, mul)
        if target == "Date":
            return _ms_to_datetime(ms).date()
        if target == "Time":
            return Time.to_logical(Time.SCHEMA, ms % MILLIS_PER_DAY)
        return _ms_to_datetime(ms)

    def convert(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            return None
        return self._from_millis(self._to_millis(self._input_type(schema, value), value))

    def target_schema(self, optional: bool) -> Schema:
        if self.target == "string":
            return Schema(SchemaType.STRING, optional=optional)
        if self.target == "unix":
            return Schema(SchemaType.INT64, optional=optional)
        builder = {"Date": Date, "Time": Time, "Timestamp": Timestamp}[self.target].builder()
        if optional:
            builder.optional()
        return builder.build()

    # -- apply -----------------------------------------------------------------------------------
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        field = self.config["field"]
        if not field:
            if schema is None:
                return self.updated(record, None, self.convert(None, value))  # type: ignore[attr-defined]
            self._input_type(schema, value)  # validates the schema is a timestamp
            new_schema = self.cached_schema(schema, lambda: self.target_schema(schema.optional))
            return self.updated(record, new_schema, self.convert(schema, value))  # type: ignore[attr-defined]
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = dict(original)
            if field in updated:
                updated[field] = self.convert(None, updated[field])
            return self.updated(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)
        f = struct.schema.field(field)
        if f is None:
            raise DataException(f"Field {field} does not exist in schema {struct.schema!r}")

        def build() -> Schema:
            builder = builder_from(struct.schema, copy_optional=True)
            for sf in struct.schema.fields:
                builder.field(sf.name, self.target_schema(sf.schema.optional)
                              if sf.name == field else sf.schema)
            return builder.build()

        new_schema = self.cached_schema(struct.schema, build)
        get = struct.get if self.config["replace.null.with.default"] else struct.get_without_default
        out = Struct(new_schema)
        for sf in struct.schema.fields:
            v = get(sf)
            out.put(sf.name, self.convert(sf.schema, v) if sf.name == field else v)
        return self.updated(record, new_schema, out)  # type: ignore[attr-defined]


class TimestampConverterKey(KeySide, TimestampConverter):
    KAFKA_NAME = KAFKA_PACKAGE + "TimestampConverter$Key"


class TimestampConverterValue(ValueSide, TimestampConverter):
    KAFKA_NAME = KAFKA_PACKAGE + "TimestampConverter$Value"
