"""Kafka's SimpleHeaderConverter: header values as text, types inferred when read back.

Writing renders the value as Kafka's ``Values.convertToString`` does (``true``, ``42``, base64
bytes, JSON-like maps and arrays). Reading parses the text: ``true``/``false`` become BOOLEAN,
integers the smallest of INT8/16/32/64, decimals FLOAT32 when exact as float32 else FLOAT64,
``[...]``/``{...}`` arrays and maps when they parse, anything else STRING.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

from connect.data import (
    DataException,
    Schema,
    SchemaAndValue,
    infer_schema,
    smallest_int_schema,
    value_to_string,
)

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


def parse_string(text: str | None) -> SchemaAndValue:
    """Infer a schema and value from header text (a subset of Kafka's ``Values.parseString``)."""
    if text is None:
        return SchemaAndValue(None, None)
    if text == "":
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered in ("true", "false"):
        return SchemaAndValue(Schema.BOOLEAN_SCHEMA, lowered == "true")
    if _INT_RE.fullmatch(stripped):
        n = int(stripped)
        schema = smallest_int_schema(n)
        if schema is not None:
            return SchemaAndValue(schema, n)
    if _FLOAT_RE.fullmatch(stripped):
        f = float(stripped)
        as32 = struct.unpack(">f", struct.pack(">f", f))[0] if abs(f) < 3.4e38 else None
        if as32 is not None and repr(as32) == repr(f):
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, f)
        return SchemaAndValue(Schema.FLOAT64_SCHEMA, f)
    if stripped[:1] in ("[", "{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, list | dict):
            schema = infer_schema(parsed)
            if schema is not None:
                return SchemaAndValue(schema, parsed)
    return SchemaAndValue(Schema.STRING_SCHEMA, text)


class SimpleHeaderConverter:
    """The default ``header.converter``; see the module docstring."""

    def configure(self, configs: dict[str, Any]) -> None:
        """No settings."""

    def close(self) -> None:
        """Nothing to release."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        if value is None:
            return None
        text = value_to_string(schema, value)
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataException(f"header {header_key!r} is not UTF-8 text: {exc}") from exc
        return parse_string(text)
