"""Kafka Connect-style data integration: connectors, workers, converters and transforms."""

from __future__ import annotations

# Plugin API (connect.api), data model (connect.data) and records (connect.records).
from connect.api import (
    ConfigDef,
    ConnectException,
    Connector,
    RetriableException,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
)
from connect.data import (
    DataException,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
)
from connect.records import (
    ConnectHeaders,
    ConnectRecord,
    Header,
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
)

__all__ = [
    "ConfigDef", "ConnectException", "Connector", "RetriableException", "SinkConnector",
    "SinkTask", "SourceConnector", "SourceTask",
    "ConnectHeaders", "ConnectRecord", "DataException", "Field", "Header", "Schema",
    "SchemaAndValue", "SchemaBuilder", "SinkRecord", "SinkRecordBatch", "SourceRecord", "Struct",
]
