"""State store interfaces.

Two layers, as in Kafka Streams: a *bytes* store (RocksDB or memory) ordered by serialized key,
and a *typed* facade that applies serdes, keeps timestamps and logs every change to the
store's changelog. Processors and interactive queries see the typed facade.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

Bytes = bytes
ChangeLogger = Callable[[bytes, bytes | None, int], None]


class BytesKeyValueStore(Protocol):
    """Ordered bytes -> bytes map. Ranges are inclusive and in serialized-key order."""

    name: str
    persistent: bool

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes | None) -> None: ...

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...

    def approximate_num_entries(self) -> int: ...

    # Reads for other threads (interactive queries): never write, flush or reorganise the
    # store, so they are safe while the owning stream thread writes (see readonly.py).
    def read_range(self, from_key: bytes | None, to_key: bytes | None,
                   reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...

    def read_num_entries(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def wipe(self) -> None:
        """Delete all local data (EOS recovery after an unclean stop)."""
        ...
