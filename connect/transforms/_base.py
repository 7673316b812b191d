"""Shared plumbing for the built-in SMTs: config parsing, $Key/$Value access, type checks.

A concrete SMT subclasses :class:`SMT` and one of :class:`KeySide` / :class:`ValueSide`; the side
decides whether ``operating_schema``/``operating_value``/``updated`` touch the key or the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connect.data import DataException, Schema, SchemaType, Struct
from connect.records import ConnectRecord, SinkRecord
from connect.transforms._config import ConfigKey, parse_config

KAFKA_PACKAGE = "org.apache.kafka.connect.transforms."


class SMT:
    """Base of every built-in transformation and predicate."""

    CONFIG: ClassVar[dict[str, ConfigKey]] = {}
    #: Kafka's fully-qualified class name, e.g. ``org.apache.kafka.connect.transforms.Cast$Value``.
    KAFKA_NAME: ClassVar[str] = ""
    #: Used in error messages, like Kafka's PURPOSE strings.
    PURPOSE: ClassVar[str] = "transformation"

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        self._schema_cache: dict[Any, Schema] = {}

    def configure(self, configs: Mapping[str, Any] | None) -> None:
        self.config = parse_config(self.short_name(), self.CONFIG, configs)
        self._schema_cache.clear()
        self.configured()

    def configured(self) -> None:
        """Hook: validate and precompute from ``self.config``."""

    def close(self) -> None:
        self._schema_cache.clear()

    @classmethod
    def config_def(cls) -> dict[str, dict[str, Any]]:
        return {key: spec.as_dict() for key, spec in cls.CONFIG.items()}

    @classmethod
    def short_name(cls) -> str:
        return cls.KAFKA_NAME.rpartition(".")[2] or cls.__name__

    def cached_schema(self, key: Any, build: Any) -> Schema:
        """Updated schemas are rebuilt only once per input schema (Kafka keeps an LRU cache)."""
        schema = self._schema_cache.get(key)
        if schema is None:
            schema = build()
            if len(self._schema_cache) > 1000:
                self._schema_cache.clear()
            self._schema_cache[key] = schema
        return schema


class KeySide:
    """Operate on the record key ($Key variants)."""

    IS_KEY: ClassVar[bool] = True

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.key

    @staticmethod
    def updated(record: ConnectRecord, schema: Schema | None, value: Any) -> ConnectRecord:
        return record.new_record(record.topic, record.kafka_partition, schema, value,
                                 record.value_schema, record.value, record.timestamp)


class ValueSide:
    """Operate on the record value ($Value variants)."""

    IS_KEY: ClassVar[bool] = False

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.value

    @staticmethod
    def updated(record: ConnectRecord, schema: Schema | None, value: Any) -> ConnectRecord:
        return record.new_record(record.topic, record.kafka_partition, record.key_schema,
                                 record.key, schema, value, record.timestamp)


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataException(f"Only Map objects supported in absence of schema for [{purpose}], "
                            f"found: {_type_name(value)}")
    return value


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: "
                            f"{_type_name(value)}")
    return value


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataException(f"Schema required for [{purpose}]")
    return schema


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], found: "
                            f"{_type_name(record)}")
    return record


def require_struct_schema(schema: Schema, purpose: str) -> Schema:
    if schema.type is not SchemaType.STRUCT:
        raise DataException(f"Only Struct objects supported for [{purpose}], found schema type: "
                            f"{schema.type.name}")
    return schema


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def split_field_spec(raw: str) -> tuple[str, bool | None]:
    """``name!`` -> (name, required), ``name?`` -> (name, optional), ``name`` -> (name, None)."""
    if raw.endswith("!"):
        return raw[:-1], True
    if raw.endswith("?"):
        return raw[:-1], False
    return raw, None


def field_syntax_key() -> ConfigKey:
    from connect.transforms._config import one_of

    return ConfigKey("string", "V1", "medium",
                     "Field path syntax: V1 (top-level names only). V2 nested paths are not "
                     "supported yet.", one_of("V1"))


def replace_null_key() -> ConfigKey:
    return ConfigKey("boolean", True, "medium",
                     "Whether to replace fields that have a default value and that are null to "
                     "the default value.")
