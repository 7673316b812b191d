"""State store interfaces.

A stack of layers, one concern each, as in Kafka Streams: Metered (metered.py, operation
latencies at metrics.recording.level=DEBUG) -> the typed store with its record cache (kv.py,
window.py, session.py; cache.py) -> ChangeLogging (changelogging.py: every write also goes to
the changelog) -> a *bytes* store ordered by serialized key: RocksDB (rocksdb.py, transactional:
a commit's writes and changelog offsets reach the database in one atomic write) or memory.
Processors and interactive queries see the top of the stack.
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

    def read_get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes | None, timestamp: int = -1) -> None:
        """``timestamp`` (the record's) is for a ChangeLogging layer; bytes stores ignore it."""
        ...

    def put_unlogged(self, key: bytes, value: bytes | None) -> None:
        """A write that is never logged (restoration, retention)."""
        ...

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...

    def approximate_num_entries(self) -> int: ...

    # Reads for other threads (interactive queries): never write, flush or reorganise the
    # store, so they are safe while the owning stream thread writes (see readonly.py).
    def read_range(self, from_key: bytes | None, to_key: bytes | None,
                   reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...

    def read_num_entries(self) -> int: ...

    def flush(self) -> None:
        """Write every uncommitted change now, without changelog offsets."""
        ...

    def prepare_commit(self) -> None:
        """A commit starts: what was written so far is what ``commit`` will write."""
        ...

    def commit(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        """The commit succeeded: write the prepared changes and the changelog ``offsets``
        atomically."""
        ...

    def stored_offsets(self) -> dict[tuple[str, int], int]:
        """The changelog offsets of the last commit in the database."""
        ...

    def close(self) -> None:
        """Close; changes not committed are dropped."""
        ...

    def wipe(self) -> None:
        """Delete all local data (EOS recovery after an unclean stop)."""
        ...
