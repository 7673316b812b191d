"""Encoded responses that carry ranges of segment files instead of their bytes.

Kafka answers a fetch with FileRecords written through ``FileChannel.transferTo`` (sendfile(2)):
the records go from the page cache to the socket and never through the JVM heap. A ``Frame`` is
the same here: bytes the broker encoded (sizes, headers, offsets) interleaved with
``FileSlice``s that the connection writer sends with sendfile. Each slice holds a pinned
descriptor (files.py), so retention or the cleaner can unlink or replace its segment while the
response is still being written; the frame gives its pins back once sent, or when dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from .files import FILES


@dataclass(slots=True)
class FileSlice:
    """``size`` bytes of the pinned descriptor ``fd`` from ``position``."""

    fd: int
    position: int
    size: int


class Frame:
    """A complete response (size prefix included) as bytes and file slices, in order."""

    __slots__ = ("parts", "_pinned")

    def __init__(self, parts: list[bytes | bytearray | FileSlice]) -> None:
        self.parts = parts
        self._pinned = any(type(p) is FileSlice for p in parts)

    def __len__(self) -> int:
        return sum(p.size if type(p) is FileSlice else len(p) for p in self.parts)  # type: ignore[union-attr,arg-type]

    def release(self) -> None:
        """Unpin every slice (idempotent)."""
        if self._pinned:
            self._pinned = False
            for part in self.parts:
                if type(part) is FileSlice:
                    FILES.release(part.fd)

    def __del__(self) -> None:
        # A response that was never sent (connection closed first) still gives its pins back.
        self.release()
