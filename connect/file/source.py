"""FileStreamSource: each line of a file becomes a record; the offset is the byte position after
the line, so a restarted task continues exactly where the last committed record ended."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, BinaryIO

from connect.api import ExactlyOnceSupport, SourceConnector, SourceTask
from connect.config_def import ConfigDef, ConfigException, ConfigType, Importance, Range
from connect.data import Schema
from connect.records import SourceRecord

log = logging.getLogger("connect.file")

FILE = "file"
TOPIC = "topic"
BATCH_SIZE = "batch.size"


def _topic_ok(name: str, value: Any) -> None:
    if value is None or not str(value).strip() or "," in str(value):
        raise ConfigException(f"Invalid value {value} for configuration {name}: "
                              "'topic' must be a single, non-empty topic name")


CONFIG_DEF = (
    ConfigDef()
    .define(FILE, ConfigType.STRING, None, None, Importance.HIGH,
            "Source filename. If not specified, the standard input will be used")
    .define(TOPIC, ConfigType.STRING, validator=_topic_ok, importance=Importance.HIGH,
            documentation="The topic to publish data to")
    .define(BATCH_SIZE, ConfigType.INT, 2000, Range.at_least(1), Importance.LOW,
            "The maximum number of records the source task can read from the file each time it "
            "is polled")
)


class FileStreamSourceConnector(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = CONFIG_DEF.parse(props)

    def task_class(self) -> type:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        cfg = {TOPIC: self.props[TOPIC], BATCH_SIZE: str(self.props[BATCH_SIZE])}
        if self.props[FILE]:
            cfg[FILE] = self.props[FILE]
        return [cfg]  # one file, one reader: always exactly one task

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def exactly_once_support(self, props: dict[str, str]) -> ExactlyOnceSupport:
        """A file can be re-read from a byte position; standard input cannot (Kafka's rule)."""
        return ExactlyOnceSupport.SUPPORTED if props.get(FILE) else \
            ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(self, props: dict[str, str], offsets: list) -> bool:
        for partition, offset in offsets:
            if offset is None:
                continue
            if "filename" not in partition:
                raise ConfigException("Partition objects must contain the key 'filename'")
            position = offset.get("position")
            if not isinstance(position, int) or isinstance(position, bool) or position < 0:
                raise ConfigException("The value for the 'position' key in the offset must be a "
                                      f"non-negative integer, got {position!r}")
        return True


class FileStreamSourceTask(SourceTask):
    """Reads complete lines (``\\n``, ``\\r`` or ``\\r\\n``); a last line without a terminator
    waits until the writer finishes it."""

    def start(self, props: dict[str, str]) -> None:
        self.filename = props.get(FILE) or None
        self.topic = props[TOPIC]
        self.batch_size = int(props.get(BATCH_SIZE, 2000))
        self.stream: BinaryIO | None = None
        self.position = 0
        self.buffer = b""
        self.stopped = threading.Event()

    def _partition(self) -> dict[str, str]:
        return {"filename": self.filename or ""}

    def _open(self) -> bool:
        if self.filename is None:
            self.stream = sys.stdin.buffer
            return True
        try:
            stream = open(self.filename, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            log.warning("Couldn't find file %s for FileStreamSourceTask, sleeping to wait for "
                        "it to be created", self.filename)
            self.stopped.wait(1.0)
            return False
        last = self.context.offset_storage_reader().offset(self._partition())
        position = (last or {}).get("position")
        if position is not None:
            if not isinstance(position, int) or position < 0:
                stream.close()
                raise ConfigException(f"Offset position is the incorrect type: {position!r}")
            stream.seek(position)
            self.position = position
        self.stream = stream
        return True

    def poll(self) -> list[SourceRecord] | None:
        if self.stopped.is_set():
            return None
        if self.stream is None and not self._open():
            return None
        assert self.stream is not None
        records: list[SourceRecord] = []
        while len(records) < self.batch_size:
            line_end = self._line_end()
            if line_end is None:
                chunk = self.stream.read1(65536) if self.filename is None else \
                    self.stream.read(65536)
                if not chunk:
                    break
                self.buffer += chunk
                continue
            end, skip = line_end
            line = self.buffer[:end]
            self.buffer = self.buffer[end + skip:]
            self.position += end + skip
            records.append(self._record(line))
        if records:
            return records
        self.stopped.wait(0.25)  # nothing new: wait a little (stop() wakes us)
        return None

    def _line_end(self) -> tuple[int, int] | None:
        buf = self.buffer
        nl, cr = buf.find(b"\n"), buf.find(b"\r")
        if nl < 0 and cr < 0:
            return None
        if cr < 0 or (0 <= nl < cr):
            return nl, 1
        if cr + 1 < len(buf):
            return cr, 2 if buf[cr + 1:cr + 2] == b"\n" else 1
        return None  # a trailing \r: wait to see whether \n follows

    def _record(self, line: bytes) -> SourceRecord:
        offset = {"position": self.position} if self.filename is not None else None
        return SourceRecord(self._partition() if self.filename is not None else None, offset,
                            self.topic, None, None, None, Schema.STRING_SCHEMA,
                            line.decode("utf-8", errors="replace"), int(time.time() * 1000))

    def stop(self) -> None:
        self.stopped.set()
