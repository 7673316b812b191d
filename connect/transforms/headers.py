"""Header SMTs: InsertHeader, DropHeaders and HeaderFrom$Key/$Value."""

from __future__ import annotations

from typing import Any

from connect.converters.header import parse_string
from connect.data import DataException, Schema, Struct, builder_from
from connect.records import ConnectRecord
from connect.transforms._base import (
    KAFKA_PACKAGE,
    SMT,
    KeySide,
    ValueSide,
    replace_null_key,
    require_map,
    require_struct,
)
from connect.transforms._config import REQUIRED, ConfigKey, non_empty, one_of
from streams.config import ConfigError


class InsertHeader(SMT):
    """Add header ``header`` with ``value.literal`` parsed like a header string (so ``42`` is a
    number and ``true`` a boolean). Existing headers with that name are kept."""

    KAFKA_NAME = KAFKA_PACKAGE + "InsertHeader"
    PURPOSE = "insert header"
    CONFIG = {
        "header": ConfigKey("string", REQUIRED, "high", "The name of the header.", non_empty),
        "value.literal": ConfigKey("string", REQUIRED, "high",
                                   "The literal value that is to be set as the header value on "
                                   "all records."),
    }

    def configured(self) -> None:
        self.literal = parse_string(self.config["value.literal"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        headers = record.headers.duplicate()
        headers.add(self.config["header"], self.literal.value, self.literal.schema)
        return record.new_record(record.topic, record.kafka_partition, record.key_schema,
                                 record.key, record.value_schema, record.value, record.timestamp,
                                 headers)


class DropHeaders(SMT):
    """Remove every header whose name is in ``headers``."""

    KAFKA_NAME = KAFKA_PACKAGE + "DropHeaders"
    PURPOSE = "drop headers"
    CONFIG = {
        "headers": ConfigKey("list", REQUIRED, "high", "The name of the headers to be removed.",
                             non_empty),
    }

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        names = set(self.config["headers"])
        kept = [h for h in record.headers if h.key not in names]
        return record.new_record(record.topic, record.kafka_partition, record.key_schema,
                                 record.key, record.value_schema, record.value, record.timestamp,
                                 kept)


class HeaderFrom(SMT):
    """Copy (or move) fields of the key/value into headers: ``fields[i]`` -> ``headers[i]``."""

    PURPOSE = "header from"
    CONFIG = {
        "fields": ConfigKey("list", REQUIRED, "high",
                            "Field names in the record whose values are to be copied or moved "
                            "to headers.", non_empty),
        "headers": ConfigKey("list", REQUIRED, "high",
                             "Header names, in the same order as the field names listed in the "
                             "fields configuration property.", non_empty),
        "operation": ConfigKey("string", REQUIRED, "high",
                               "Either move if the fields are to be moved to the headers "
                               "(removed from the key/value), or copy if the fields are to be "
                               "copied to the headers (retained in the key/value).",
                               one_of("move", "copy")),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        if len(self.config["fields"]) != len(self.config["headers"]):
            raise ConfigError(f"{self.short_name()}: 'fields' config must have the same number "
                              f"of elements as 'headers' config.")
        self.move = self.config["operation"] == "move"

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        headers = record.headers.duplicate()
        pairs = list(zip(self.config["fields"], self.config["headers"], strict=True))
        moved = {f for f, _ in pairs} if self.move else set()
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            for field, header in pairs:
                headers.add(header, original.get(field))
            new_value: Any = {k: v for k, v in original.items() if k not in moved}
            new_schema = None
        else:
            struct = require_struct(value, self.PURPOSE)
            get = (struct.get if self.config["replace.null.with.default"]
                   else struct.get_without_default)
            for field, header in pairs:
                f = struct.schema.field(field)
                if f is None:
                    raise DataException(f"Field {field} not found in schema {struct.schema}")
                headers.add(header, get(f), f.schema)
            if self.move:
                def build() -> Schema:
                    builder = builder_from(struct.schema)
                    for f in struct.schema.fields:
                        if f.name not in moved:
                            builder.field(f.name, f.schema)
                    return builder.build()

                new_schema = self.cached_schema(struct.schema, build)
                new_value = Struct(new_schema)
                for f in new_schema.fields:
                    new_value.put(f, get(f.name))
            else:
                new_schema, new_value = struct.schema, struct
        updated = self.updated(record, new_schema, new_value)  # type: ignore[attr-defined]
        return updated.new_record(updated.topic, updated.kafka_partition, updated.key_schema,
                                  updated.key, updated.value_schema, updated.value,
                                  updated.timestamp, headers)


class HeaderFromKey(KeySide, HeaderFrom):
    KAFKA_NAME = KAFKA_PACKAGE + "HeaderFrom$Key"


class HeaderFromValue(ValueSide, HeaderFrom):
    KAFKA_NAME = KAFKA_PACKAGE + "HeaderFrom$Value"
