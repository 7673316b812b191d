"""FileStreamSink: append each record's value as one line; ``flush`` makes the lines durable
(flush + fsync) so the offsets the worker commits never run ahead of the file."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from connect.api import SinkConnector, SinkTask
from connect.config_def import ConfigDef, ConfigType, Importance

FILE = "file"

CONFIG_DEF = ConfigDef().define(
    FILE, ConfigType.STRING, None, None, Importance.HIGH,
    "Destination filename. If not specified, the standard output will be used")


class FileStreamSinkConnector(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = CONFIG_DEF.parse(props)

    def task_class(self) -> type:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        cfg = {FILE: self.props[FILE]} if self.props[FILE] else {}
        return [dict(cfg) for _ in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def alter_offsets(self, props: dict[str, str], offsets: dict) -> bool:
        return True  # offsets live only in Kafka: nothing of ours to change


# One encoder for all lines: json.dumps with options builds a new JSONEncoder per call.
_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _json_line(value: dict | list) -> str:
    try:
        return _ENCODE(value)
    except (TypeError, ValueError):
        return str(value)


def render(value: Any) -> str:
    """The line written for a value (Java's ``println(value)`` for the common types)."""
    t = type(value)  # exact types first: the common cases, one check each
    if t is dict:
        return _json_line(value)
    if t is str:
        return value  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict | list):
        return _json_line(value)
    return str(value)


class FileStreamSinkTask(SinkTask):
    def start(self, props: dict[str, str]) -> None:
        self.filename = props.get(FILE) or None
        self.out: TextIO = open(self.filename, "a", encoding="utf-8") if self.filename \
            else sys.stdout  # noqa: SIM115 - open for the task's lifetime

    def put(self, records: list) -> None:
        if records:
            self.out.write("\n".join([render(r.value) for r in records]) + "\n")

    def flush(self, current_offsets: dict) -> None:
        self.out.flush()
        if self.filename:
            os.fsync(self.out.fileno())

    def stop(self) -> None:
        if self.filename and not self.out.closed:
            self.out.flush()
            os.fsync(self.out.fileno())
            self.out.close()
