"""Field-level SMTs: InsertField, ReplaceField, MaskField, ValueToKey, ExtractField, HoistField,
Flatten and SetSchemaMetadata, with Kafka's config keys and behaviour.

Records with a schema must carry a Struct (their schema is rewritten and cached); schemaless
records must carry a dict. A null key/value (e.g. a tombstone) passes through unchanged where
Kafka lets it.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Mapping
from typing import Any

from connect.data import (
    DataException,
    Schema,
    SchemaBuilder,
    SchemaType,
    Struct,
    Timestamp,
    builder_from,
    schema_update,
)
from connect.records import ConnectRecord
from connect.transforms._base import (
    KAFKA_PACKAGE,
    SMT,
    KeySide,
    ValueSide,
    field_syntax_key,
    replace_null_key,
    require_map,
    require_schema,
    require_sink_record,
    require_struct,
    split_field_spec,
)
from connect.transforms._config import REQUIRED, ConfigKey, non_empty
from streams.config import ConfigError


def _getter(struct: Struct, replace_null_with_default: bool):
    return struct.get if replace_null_with_default else struct.get_without_default


# -- InsertField -------------------------------------------------------------------------------
class InsertField(SMT):
    """Insert the record's topic, partition, offset (sinks), timestamp and/or a static value.

    A field name ending in ``!`` is required in the updated schema, ``?`` (or nothing) optional.
    """

    PURPOSE = "field insertion"
    CONFIG = {
        "topic.field": ConfigKey("string", None, "medium",
                                 "Field name for Kafka topic. Suffix with ! to make this a "
                                 "required field, or ? to keep it optional (the default)."),
        "partition.field": ConfigKey("string", None, "medium", "Field name for Kafka partition."),
        "offset.field": ConfigKey("string", None, "medium",
                                  "Field name for Kafka offset - only applicable to sink "
                                  "connectors."),
        "timestamp.field": ConfigKey("string", None, "medium", "Field name for record timestamp."),
        "static.field": ConfigKey("string", None, "medium", "Field name for static data field."),
        "static.value": ConfigKey("string", None, "medium",
                                  "Static field value, if field name configured."),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        self.fields: dict[str, tuple[str, bool]] = {}
        for kind in ("topic", "partition", "offset", "timestamp", "static"):
            raw = self.config[f"{kind}.field"]
            if raw:
                name, required = split_field_spec(raw)
                if not name:
                    raise ConfigError(f"{self.short_name()}: {kind}.field must name a field")
                self.fields[kind] = (name, bool(required))

    def _insert_values(self, record: ConnectRecord, schemaless: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, (name, _) in self.fields.items():
            if kind == "topic":
                out[name] = record.topic
            elif kind == "partition":
                out[name] = record.kafka_partition
            elif kind == "offset":
                out[name] = require_sink_record(record, self.PURPOSE).kafka_offset
            elif kind == "timestamp":
                ts = record.timestamp
                out[name] = ts if schemaless or ts is None else Timestamp.to_logical(
                    Timestamp.SCHEMA, ts)
            else:
                out[name] = self.config["static.value"]
        return out

    def _field_schema(self, kind: str, required: bool) -> Schema:
        if kind == "timestamp":
            builder = Timestamp.builder()
            return builder.build() if required else builder.optional().build()
        t = {"topic": SchemaType.STRING, "partition": SchemaType.INT32,
             "offset": SchemaType.INT64, "static": SchemaType.STRING}[kind]
        return Schema(t, optional=not required)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = builder_from(schema)
        for f in schema.fields:
            builder.field(f.name, f.schema)
        for kind, (name, required) in self.fields.items():
            builder.field(name, self._field_schema(kind, required))
        return builder.build()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = dict(original)
            updated.update(self._insert_values(record, schemaless=True))
            return self.updated(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)
        new_schema = self.cached_schema(struct.schema, lambda: self._updated_schema(struct.schema))
        out = Struct(new_schema)
        get = _getter(struct, self.config["replace.null.with.default"])
        for f in struct.schema.fields:
            out.put(f.name, get(f))
        for name, v in self._insert_values(record, schemaless=False).items():
            out.put(name, v)
        return self.updated(record, new_schema, out)  # type: ignore[attr-defined]


class InsertFieldKey(KeySide, InsertField):
    KAFKA_NAME = KAFKA_PACKAGE + "InsertField$Key"


class InsertFieldValue(ValueSide, InsertField):
    KAFKA_NAME = KAFKA_PACKAGE + "InsertField$Value"


# -- ReplaceField ------------------------------------------------------------------------------
class ReplaceField(SMT):
    """Keep (``include``), drop (``exclude``) and rename (``renames=old:new``) fields."""

    PURPOSE = "field replacement"
    CONFIG = {
        "exclude": ConfigKey("list", [], "medium",
                             "Fields to exclude. This takes precedence over the fields to "
                             "include."),
        "include": ConfigKey("list", [], "medium",
                             "Fields to include. If specified, only these fields will be used."),
        "renames": ConfigKey("list", [], "medium", "Field rename mappings (old:new)."),
        "blacklist": ConfigKey("list", None, "low", "Deprecated alias of exclude."),
        "whitelist": ConfigKey("list", None, "low", "Deprecated alias of include."),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        self.exclude = set(self.config["exclude"] or self.config["blacklist"] or [])
        self.include = set(self.config["include"] or self.config["whitelist"] or [])
        self.renames: dict[str, str] = {}
        for pair in self.config["renames"]:
            old, sep, new = pair.partition(":")
            if not sep or not old or not new:
                raise ConfigError(f"{self.short_name()}: invalid rename mapping {pair!r} in "
                                  f"renames; expected old:new")
            self.renames[old] = new
        self.reverse = {new: old for old, new in self.renames.items()}

    def filter(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def renamed(self, name: str) -> str:
        return self.renames.get(name, name)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = {self.renamed(k): v for k, v in original.items() if self.filter(k)}
            return self.updated(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)

        def build() -> Schema:
            builder = builder_from(struct.schema)
            for f in struct.schema.fields:
                if self.filter(f.name):
                    builder.field(self.renamed(f.name), f.schema)
            return builder.build()

        new_schema = self.cached_schema(struct.schema, build)
        out = Struct(new_schema)
        get = _getter(struct, self.config["replace.null.with.default"])
        for f in new_schema.fields:
            out.put(f, get(self.reverse.get(f.name, f.name)))
        return self.updated(record, new_schema, out)  # type: ignore[attr-defined]


class ReplaceFieldKey(KeySide, ReplaceField):
    KAFKA_NAME = KAFKA_PACKAGE + "ReplaceField$Key"


class ReplaceFieldValue(ValueSide, ReplaceField):
    KAFKA_NAME = KAFKA_PACKAGE + "ReplaceField$Value"


# -- MaskField ---------------------------------------------------------------------------------
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _empty_like(value: Any) -> Any:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, _decimal.Decimal):
        return _decimal.Decimal(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, bytes | bytearray):
        return b""
    if isinstance(value, _dt.datetime):
        return _EPOCH
    if isinstance(value, _dt.date):
        return _dt.date(1970, 1, 1)
    if isinstance(value, _dt.time):
        return _dt.time(0)
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataException(f"Cannot mask value of type: {type(value).__name__}")


class MaskField(SMT):
    """Replace the named fields with a type-appropriate empty value, or with ``replacement``."""

    PURPOSE = "mask fields"
    CONFIG = {
        "fields": ConfigKey("list", REQUIRED, "high", "Names of fields to mask.", non_empty),
        "replacement": ConfigKey("string", None, "low",
                                 "Custom value replacement, that will be applied to all 'fields' "
                                 "values (numeric or non-empty string values only)."),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        self.fields = set(self.config["fields"])
        repl = self.config["replacement"]
        if repl is not None and repl == "":
            raise ConfigError(f"{self.short_name()}: replacement must not be empty")

    def _masked(self, value: Any) -> Any:
        if value is None:
            return None
        repl = self.config["replacement"]
        if repl is None:
            return _empty_like(value)
        try:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, int):
                return int(repl)
            if isinstance(value, float):
                return float(repl)
            if isinstance(value, _decimal.Decimal):
                return _decimal.Decimal(repl)
        except (ValueError, _decimal.InvalidOperation):
            raise DataException(f"Unable to convert {repl} ({type(value).__name__})") from None
        if isinstance(value, str):
            return repl
        raise DataException(f"Cannot mask value of type {type(value).__name__} with custom "
                            f"replacement.")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        if schema is None:
            original = require_map(value, self.PURPOSE)
            updated = {k: self._masked(v) if k in self.fields else v for k, v in original.items()}
            return self.updated(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)
        out = Struct(struct.schema)
        get = _getter(struct, self.config["replace.null.with.default"])
        for f in struct.schema.fields:
            v = get(f)
            out.put(f, self._masked(v) if f.name in self.fields else v)
        return self.updated(record, struct.schema, out)  # type: ignore[attr-defined]


class MaskFieldKey(KeySide, MaskField):
    KAFKA_NAME = KAFKA_PACKAGE + "MaskField$Key"


class MaskFieldValue(ValueSide, MaskField):
    KAFKA_NAME = KAFKA_PACKAGE + "MaskField$Value"


# -- ValueToKey --------------------------------------------------------------------------------
class ValueToKey(SMT):
    """Replace the key with a Struct (or dict) of the named value fields."""

    KAFKA_NAME = KAFKA_PACKAGE + "ValueToKey"
    PURPOSE = "copying fields from value to key"
    CONFIG = {
        "fields": ConfigKey("list", REQUIRED, "high",
                            "Field names on the record value to extract as the record key.",
                            non_empty),
        "replace.null.with.default": replace_null_key(),
    }

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        names = self.config["fields"]
        if record.value_schema is None:
            value = require_map(record.value, self.PURPOSE)
            key = {name: value.get(name) for name in names}
            return record.new_record(record.topic, record.kafka_partition, None, key,
                                     record.value_schema, record.value, record.timestamp)
        struct = require_struct(record.value, self.PURPOSE)

        def build() -> Schema:
            builder = SchemaBuilder.struct()
            for name in names:
                f = struct.schema.field(name)
                if f is None:
                    raise DataException(f"Field does not exist: {name}")
                builder.field(name, f.schema)
            return builder.build()

        key_schema = self.cached_schema(struct.schema, build)
        key = Struct(key_schema)
        get = _getter(struct, self.config["replace.null.with.default"])
        for name in names:
            key.put(name, get(name))
        return record.new_record(record.topic, record.kafka_partition, key_schema, key,
                                 record.value_schema, record.value, record.timestamp)


# -- ExtractField ------------------------------------------------------------------------------
class ExtractField(SMT):
    """Replace the key/value with one of its fields (Struct or dict); null passes through."""

    PURPOSE = "field extraction"
    CONFIG = {
        "field": ConfigKey("string", REQUIRED, "medium",
                           "Field name to extract.", non_empty),
        "field.syntax.version": field_syntax_key(),
        "replace.null.with.default": replace_null_key(),
    }

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        name = self.config["field"]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            if value is None:
                return self.updated(record, None, None)  # type: ignore[attr-defined]
            return self.updated(record, None,  # type: ignore[attr-defined]
                                require_map(value, self.PURPOSE).get(name))
        if value is not None:
            require_struct(value, self.PURPOSE)
        if schema.type is not SchemaType.STRUCT:
            raise DataException(f"Only Struct objects supported for [{self.PURPOSE}], found "
                                f"schema type: {schema.type.name}")
        f = schema.field(name)
        if f is None:
            raise DataException(f"Unknown field: {name}")
        if value is None:
            return self.updated(record, f.schema, None)  # type: ignore[attr-defined]
        get = _getter(value, self.config["replace.null.with.default"])
        return self.updated(record, f.schema, get(f))  # type: ignore[attr-defined]


class ExtractFieldKey(KeySide, ExtractField):
    KAFKA_NAME = KAFKA_PACKAGE + "ExtractField$Key"


class ExtractFieldValue(ValueSide, ExtractField):
    KAFKA_NAME = KAFKA_PACKAGE + "ExtractField$Value"


# -- HoistField --------------------------------------------------------------------------------
class HoistField(SMT):
    """Wrap the key/value in a Struct (with a schema) or a dict (schemaless) under ``field``."""

    PURPOSE = "field hoisting"
    CONFIG = {
        "field": ConfigKey("string", REQUIRED, "medium",
                           "Field name for the single field that will be created in the "
                           "resulting Struct or Map.", non_empty),
    }

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        name = self.config["field"]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            return self.updated(record, None, {name: value})  # type: ignore[attr-defined]
        new_schema = self.cached_schema(
            schema, lambda: SchemaBuilder.struct().field(name, schema).build())
        return self.updated(record, new_schema,  # type: ignore[attr-defined]
                            Struct(new_schema).put(name, value))


class HoistFieldKey(KeySide, HoistField):
    KAFKA_NAME = KAFKA_PACKAGE + "HoistField$Key"


class HoistFieldValue(ValueSide, HoistField):
    KAFKA_NAME = KAFKA_PACKAGE + "HoistField$Value"


# -- Flatten -----------------------------------------------------------------------------------
_PRIMITIVE_PY = (bool, int, float, str, bytes, bytearray, _decimal.Decimal, _dt.date, _dt.time,
                 list, tuple)


class Flatten(SMT):
    """Flatten nested Structs (with a schema) or dicts (schemaless) into one level, joining
    names with ``delimiter``; arrays (and, with a schema, maps) are left as they are."""

    PURPOSE = "flattening"
    CONFIG = {
        "delimiter": ConfigKey("string", ".", "medium",
                               "Delimiter to insert between field names from the input record "
                               "when generating field names for the output record"),
    }

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self.config["delimiter"] + name

    def _flatten_map(self, prefix: str, value: Mapping[str, Any], out: dict[str, Any]) -> None:
        for k, v in value.items():
            name = self._name(prefix, str(k))
            if v is None or isinstance(v, _PRIMITIVE_PY):
                out[name] = v
            elif isinstance(v, Mapping):
                self._flatten_map(name, v, out)
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{type(v).__name__} for record without schemas (for field "
                                    f"{name}).")

    def _flatten_schema(self, prefix: str, schema: Schema, optional: bool,
                        builder: SchemaBuilder) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            child_optional = optional or f.schema.optional
            if f.schema.type is SchemaType.STRUCT:
                self._flatten_schema(name, f.schema, child_optional, builder)
            else:
                field_schema = f.schema
                if child_optional and not field_schema.optional:
                    field_schema = schema_update(field_schema, optional=True)
                if builder.get_field(name) is not None:
                    raise DataException(f"Flatten: duplicate field name {name!r} after "
                                        f"flattening")
                builder.field(name, field_schema)

    def _flatten_struct(self, prefix: str, struct: Struct | None, schema: Schema,
                        out: Struct) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            v = None if struct is None else struct.get(f)
            if f.schema.type is SchemaType.STRUCT:
                self._flatten_struct(name, v, f.schema, out)
            else:
                out.put(name, v)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            if value is None:
                return record
            out: dict[str, Any] = {}
            self._flatten_map("", require_map(value, self.PURPOSE), out)
            return self.updated(record, None, out)  # type: ignore[attr-defined]
        if schema.type is not SchemaType.STRUCT:
            return record

        def build() -> Schema:
            builder = builder_from(schema, copy_optional=True)
            self._flatten_schema("", schema, False, builder)
            return builder.build()

        new_schema = self.cached_schema(schema, build)
        if value is None:
            return self.updated(record, new_schema, None)  # type: ignore[attr-defined]
        struct = require_struct(value, self.PURPOSE)
        flat = Struct(new_schema)
        self._flatten_struct("", struct, schema, flat)
        return self.updated(record, new_schema, flat)  # type: ignore[attr-defined]


class FlattenKey(KeySide, Flatten):
    KAFKA_NAME = KAFKA_PACKAGE + "Flatten$Key"


class FlattenValue(ValueSide, Flatten):
    KAFKA_NAME = KAFKA_PACKAGE + "Flatten$Value"


# -- SetSchemaMetadata -------------------------------------------------------------------------
class SetSchemaMetadata(SMT):
    """Set the key/value schema's name and/or version; a Struct is re-bound to the new schema."""

    PURPOSE = "updating schema metadata"
    CONFIG = {
        "schema.name": ConfigKey("string", None, "high", "Schema name to set."),
        "schema.version": ConfigKey("int", None, "high", "Schema version to set."),
        "replace.null.with.default": replace_null_key(),
    }

    def configured(self) -> None:
        if not self.config["schema.name"] and self.config["schema.version"] is None:
            raise ConfigError(f"{self.short_name()}: neither schema name nor version configured")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = require_schema(self.operating_schema(record), self.PURPOSE)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]

        def build() -> Schema:
            changes: dict[str, Any] = {}
            if self.config["schema.name"]:
                changes["name"] = self.config["schema.name"]
            if self.config["schema.version"] is not None:
                changes["version"] = self.config["schema.version"]
            return schema_update(schema, **changes)

        new_schema = self.cached_schema(schema, build)
        if isinstance(value, Struct):
            rebound = Struct(new_schema)
            get = _getter(value, self.config["replace.null.with.default"])
            for f in new_schema.fields:
                rebound.put(f, get(f.name))
            value = rebound
        return self.updated(record, new_schema, value)  # type: ignore[attr-defined]


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata):
    KAFKA_NAME = KAFKA_PACKAGE + "SetSchemaMetadata$Key"


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata):
    KAFKA_NAME = KAFKA_PACKAGE + "SetSchemaMetadata$Value"

