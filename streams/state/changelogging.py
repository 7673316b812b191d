"""The ChangeLogging store layer (Kafka's ``ChangeLoggingKeyValueBytesStore`` and its
timestamped, window and session kin): every write that passes through it is also sent to the
store's changelog partition.

It sits between the typed store (serdes, record cache) and the bytes store (RocksDB or memory):
``put(key, stored, timestamp)`` writes ``stored`` below and logs the changelog value, which is
``stored`` itself, or ``stored`` without its 8-byte timestamp prefix for timestamped layouts
(the changelog record carries the timestamp instead, as in Kafka). Writes that must not be
logged (restoration from the changelog, retention) use ``put_unlogged``. Everything else
(reads, commit, close) is the bytes store's own, bound once so that no per-call indirection
is paid on the hot path.
"""

from __future__ import annotations

from typing import Any

from .api import BytesKeyValueStore, ChangeLogger

NO_TIMESTAMP = -1
_PASSED_THROUGH = ("get", "range", "read_get", "read_range", "read_num_entries",
                   "approximate_num_entries", "prepare_commit", "commit", "flush",
                   "stored_offsets", "uncommitted", "close", "wipe")


class ChangeLoggingBytesStore:
    def __init__(self, inner: BytesKeyValueStore, logger: ChangeLogger,
                 timestamped: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self.logger = logger
        self.timestamped = timestamped
        self.put_unlogged = inner.put
        for method in _PASSED_THROUGH:
            bound = getattr(inner, method, None)
            if bound is not None:
                setattr(self, method, bound)

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    def __getattr__(self, name: str) -> Any:  # anything a bytes store adds (e.g. ``db``)
        return getattr(self.inner, name)

    def put(self, key: bytes, value: bytes | None, timestamp: int = NO_TIMESTAMP) -> None:
        self.inner.put(key, value)
        if value is not None and self.timestamped:
            self.logger(key, value[8:], timestamp)
        else:
            self.logger(key, value, timestamp)


def with_change_logging(inner: BytesKeyValueStore, logger: ChangeLogger | None,
                        timestamped: bool) -> Any:
    """``inner`` under a ChangeLogging layer, or as it is for an unlogged store."""
    return inner if logger is None else ChangeLoggingBytesStore(inner, logger, timestamped)
