"""Windows as values: ``Window``, ``Windowed`` keys and their Kafka-compatible serdes.

Kafka's time-windowed serde writes ``[key bytes][window start: 8-byte big-endian]``; the end is
start + window size, which the reader must know. The session-windowed serde writes
``[key bytes][end: 8][start: 8]``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .serde import Serde, SerializationError

K = TypeVar("K")
_LONG = struct.Struct(">q")


@dataclass(frozen=True, slots=True, order=True)
class Window:
    """A time window in ms. For time windows ``end`` is exclusive; sessions include both ends."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Windowed(Generic[K]):
    """A key together with the window it was aggregated in."""

    key: K
    window: Window

    def __repr__(self) -> str:
        return f"Windowed({self.key!r}, [{self.window.start},{self.window.end}))"


class TimeWindowedSerde(Serde[Windowed[Any]]):
    def __init__(self, inner: Serde[Any], window_size: int | None = None) -> None:
        self.inner = inner
        self.window_size = window_size
        self.name = f"windowed({inner.name})"

    def to_bytes(self, value: Windowed[Any]) -> bytes:
        key = self.inner.serialize(None, value.key) or b""
        return key + _LONG.pack(value.window.start)

    def from_bytes(self, data: bytes) -> Windowed[Any]:
        if len(data) < 8:
            raise SerializationError("windowed key shorter than its 8-byte window start")
        start = _LONG.unpack_from(data, len(data) - 8)[0]
        size = self.window_size if self.window_size is not None else 2**63 - 1 - start
        end = min(start + size, 2**63 - 1)
        return Windowed(self.inner.deserialize(None, bytes(data[:-8])), Window(start, end))


class SessionWindowedSerde(Serde[Windowed[Any]]):
    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner
        self.name = f"session_windowed({inner.name})"

    def to_bytes(self, value: Windowed[Any]) -> bytes:
        key = self.inner.serialize(None, value.key) or b""
        return key + _LONG.pack(value.window.end) + _LONG.pack(value.window.start)

    def from_bytes(self, data: bytes) -> Windowed[Any]:
        if len(data) < 16:
            raise SerializationError("session-windowed key shorter than its 16-byte window")
        end = _LONG.unpack_from(data, len(data) - 16)[0]
        start = _LONG.unpack_from(data, len(data) - 8)[0]
        return Windowed(self.inner.deserialize(None, bytes(data[:-16])), Window(start, end))
