"""Kafka's FileStream connectors: a file (or stdin) to a topic, a topic to a file (or stdout)."""

from connect.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from connect.file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector", "FileStreamSinkTask", "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
