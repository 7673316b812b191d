"""Reading the classic group protocols' byte layouts: big-endian integers, int16-sized strings
and int32-sized bytes (-1: null), as Kafka's GroupMetadata records and the embedded
ConsumerProtocol use them. Bytes that end early raise the caller's error type."""

from __future__ import annotations

import struct


class ByteReader:
    """A cursor over ``data``; anything read past its end raises ``error``."""

    def __init__(self, data: bytes, error: type[ValueError], text_errors: str = "strict") -> None:
        self.data, self.pos = data, 0
        self.error = error
        self.text_errors = text_errors  # how string() decodes bytes that are not UTF-8

    def take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error as exc:
            raise self.error(str(exc)) from None
        self.pos += struct.calcsize(fmt)
        return int(value)

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        return self._next(size, "string").decode("utf-8", self.text_errors)

    def blob(self) -> bytes:
        """Nullable bytes; null reads as empty."""
        return self._next(max(self.take(">i"), 0), "bytes")

    def count(self) -> int:
        """An array's length (null: 0); one longer than the data left is refused."""
        n = self.take(">i")
        if n > len(self.data):
            raise self.error("bad array length")
        return max(n, 0)

    def _next(self, size: int, what: str) -> bytes:
        if self.pos + size > len(self.data):
            raise self.error(f"{what} past the end")
        value = bytes(self.data[self.pos:self.pos + size])
        self.pos += size
        return value
