"""The converter protocols: how Connect data becomes record bytes and back.

A worker configures one key converter (``is_key=True``), one value converter and one header
converter per connector, from ``key.converter``/``value.converter``/``header.converter`` and the
keys under those prefixes with the prefix stripped (``value.converter.schemas.enable=false`` ->
``{"schemas.enable": "false"}``). Config values may be strings (as read from .properties files)
or Python values.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from connect.data import DataException, Schema, SchemaAndValue


@runtime_checkable
class Converter(Protocol):
    """Kafka's ``org.apache.kafka.connect.storage.Converter``."""

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        """Read converter settings; ``is_key`` says whether it converts keys or values."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize a Connect value (with optional schema) to bytes; None means a null record."""

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize bytes (None for a tombstone) to a schema and value; raise DataException."""


@runtime_checkable
class HeaderConverter(Protocol):
    """Kafka's ``org.apache.kafka.connect.storage.HeaderConverter``."""

    def configure(self, configs: dict[str, Any]) -> None:
        """Read header converter settings."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialize one header value."""

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize one header value."""


def config_bool(configs: dict[str, Any], key: str, default: bool) -> bool:
    """A boolean setting given as bool or as Kafka's ``true``/``false`` text."""
    raw = configs.get(key, default)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    from streams.config import ConfigError

    raise ConfigError(f"invalid value {raw!r} for configuration {key}: expected true or false")


__all__ = ["Converter", "DataException", "HeaderConverter", "config_bool"]
