"""String, byte-array and fixed-width number converters, byte-compatible with Kafka's.

Numbers are big-endian like Kafka's ``ShortSerializer``/``IntegerSerializer``/... so Java
consumers read what these write. Each of these also works as a header converter.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, ClassVar

from connect.converters.base import config_bool  # noqa: F401  (re-exported for subclasses)
from connect.data import DataException, Schema, SchemaAndValue, SchemaType, value_to_string

_ENCODING_ALIASES = {"utf8": "utf-8", "utf-8": "utf-8"}


def _java_text(value: Any) -> str:
    """``value.toString()`` as Java would print common Connect values."""
    if isinstance(value, str):
        return value
    return value_to_string(None, value) or ""


class _HeaderMixin:
    """Header conversion delegates to the value methods (as Kafka's converters do)."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)  # type: ignore[attr-defined]

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Nothing to release."""


class StringConverter(_HeaderMixin):
    """UTF-8 text (``converter.encoding``); any value is written with its string form.

    Reads always yield an ``OPTIONAL_STRING_SCHEMA`` value; null bytes map to a null value.
    """

    def __init__(self) -> None:
        self.encoding = "utf-8"
        self.is_key = False

    def configure(self, configs: dict[str, Any], is_key: bool = False) -> None:
        self.is_key = is_key
        enc = configs.get("converter.encoding")
        enc = configs.get("serializer.encoding", enc) or "UTF8"
        try:
            "".encode(_ENCODING_ALIASES.get(str(enc).lower(), str(enc)))
        except LookupError:
            from streams.config import ConfigError

            raise ConfigError(f"invalid value {enc!r} for configuration converter.encoding: "
                              f"unknown encoding") from None
        self.encoding = _ENCODING_ALIASES.get(str(enc).lower(), str(enc))

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        return _java_text(value).encode(self.encoding)

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, bytes(value).decode(self.encoding))
        except UnicodeDecodeError as exc:
            raise DataException(f"failed to deserialize string from topic {topic!r}: {exc}") from exc

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]
                         ) -> tuple[list[Schema | None], list[Any]]:
        """``to_connect_data`` over many values, as parallel schema and value lists (see
        :func:`connect.converters.base.to_connect_batch`); same results and errors."""
        enc = self.encoding
        try:
            out = [None if v is None else v.decode(enc) for v in values]
        except Exception:  # noqa: BLE001 - redone per value for the exact error
            out = [self.to_connect_data(topic, v).value for v in values]
        return [Schema.OPTIONAL_STRING_SCHEMA] * len(out), out


_BYTES_LIKE = (bytes, bytearray, memoryview)


class ByteArrayConverter(_HeaderMixin):
    """Pass-through bytes; only a BYTES schema (or none) is accepted."""

    def configure(self, configs: dict[str, Any], is_key: bool = False) -> None:
        """No settings."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type is not SchemaType.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None or type(value) is bytes:  # per record: the common case first
            return value
        if not isinstance(value, _BYTES_LIKE):
            raise DataException(f"ByteArrayConverter is not compatible with objects of type "
                                f"{type(value).__name__}")
        return bytes(value)

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None if value is None else bytes(value))

    def to_connect_batch(self, topic: str, values: Sequence[bytes | None]
                         ) -> tuple[list[Schema | None], list[Any]]:
        """``to_connect_data`` over many values, as parallel schema and value lists."""
        out = [None if v is None else bytes(v) for v in values]
        return [Schema.OPTIONAL_BYTES_SCHEMA] * len(out), out


class NumberConverter(_HeaderMixin):
    """Base for the fixed-width converters: a struct format and the schema type it reads as."""

    FORMAT: ClassVar[str]
    TYPE: ClassVar[SchemaType]
    JAVA_NAME: ClassVar[str]

    def configure(self, configs: dict[str, Any], is_key: bool = False) -> None:
        """No settings."""

    @property
    def schema(self) -> Schema:
        return Schema(self.TYPE, optional=True)

    def _check(self, value: Any) -> Any:
        if self.TYPE in (SchemaType.FLOAT32, SchemaType.FLOAT64):
            ok = isinstance(value, float | int) and not isinstance(value, bool)
        elif self.TYPE is SchemaType.BOOLEAN:
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise DataException(f"Failed to serialize to a {self.JAVA_NAME} (was "
                                f"{type(value).__name__})")
        return value

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return struct.pack(self.FORMAT, self._check(value))
        except struct.error as exc:
            raise DataException(f"Failed to serialize to a {self.JAVA_NAME}: {exc}") from exc

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(self.schema, None)
        size = struct.calcsize(self.FORMAT)
        if len(value) != size:
            raise DataException(f"Size of data received by {self.JAVA_NAME}Deserializer is not "
                                f"{size}")
        result = struct.unpack(self.FORMAT, bytes(value))[0]
        return SchemaAndValue(self.schema, result)


class ShortConverter(NumberConverter):
    FORMAT, TYPE, JAVA_NAME = ">h", SchemaType.INT16, "Short"


class IntegerConverter(NumberConverter):
    FORMAT, TYPE, JAVA_NAME = ">i", SchemaType.INT32, "Integer"


class LongConverter(NumberConverter):
    FORMAT, TYPE, JAVA_NAME = ">q", SchemaType.INT64, "Long"


class FloatConverter(NumberConverter):
    FORMAT, TYPE, JAVA_NAME = ">f", SchemaType.FLOAT32, "Float"


class DoubleConverter(NumberConverter):
    FORMAT, TYPE, JAVA_NAME = ">d", SchemaType.FLOAT64, "Double"


class BooleanConverter(NumberConverter):
    """One byte, 1 or 0 (Kafka's BooleanSerializer)."""

    FORMAT, TYPE, JAVA_NAME = ">?", SchemaType.BOOLEAN, "Boolean"

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is not None and len(value) == 1 and value[0] not in (0, 1):
            raise DataException("Unexpected byte received by BooleanDeserializer: " + str(value[0]))
        return super().to_connect_data(topic, value)
