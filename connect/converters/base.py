"""The converter protocols: how Connect data becomes record bytes and back.

A worker configures one key converter (``is_key=True``), one value converter and one header
converter per connector, from ``key.converter``/``value.converter``/``header.converter`` and the
keys under those prefixes with the prefix stripped (``value.converter.schemas.enable=false`` ->
``{"schemas.enable": "false"}``). Config values may be strings (as read from .properties files)
or Python values.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def to_connect_batch(converter: Any, topic: str, values: Sequence[bytes | None]
                     ) -> tuple[list[Schema | None], list[Any]]:
    """``to_connect_data`` for each value, as parallel lists of schemas and values.

    Uses the converter's own ``to_connect_batch(topic, values)`` when it has one: an optional
    extension with this signature, because the sink worker converts whole fetches and a method call
    plus a SchemaAndValue per value are a real share of its cost. Raises what the first failing
    value raises.
    """
    batch = getattr(converter, "to_connect_batch", None)
    if batch is not None:
        return batch(topic, values)  # type: ignore[no-any-return]
    convert = converter.to_connect_data
    pairs = [convert(topic, v) for v in values]
    return [p[0] for p in pairs], [p[1] for p in pairs]


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


__all__ = ["Converter", "DataException", "HeaderConverter", "config_bool", "to_connect_batch"]
