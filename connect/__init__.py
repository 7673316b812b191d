"""Kafka Connect-style data integration: connectors, workers, converters and transforms."""

from __future__ import annotations

# Data model and records (engineer B). Plugin API exports live below.
from connect.data import (
    DataException,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
)
from connect.records import ConnectHeaders, ConnectRecord, Header, SinkRecord, SourceRecord

__all__ = [
    "ConnectHeaders", "ConnectRecord", "DataException", "Field", "Header", "Schema",
    "SchemaAndValue", "SchemaBuilder", "SinkRecord", "SourceRecord", "Struct",
]
