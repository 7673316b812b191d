"""Read-only views of typed stores, for threads other than the store's stream thread.

Why: interactive queries (``KafkaStreams.store(name)``) run on the caller's thread while the
stream thread writes. A query that flushed the RocksDB write batch or re-sorted an in-memory
key list from that thread raced the stream thread's writes (lost updates, "dictionary changed
size during iteration"). As Kafka's ``ReadOnlyKeyValueStore`` promises, a query only reads.

``read_only_view(store)`` is a shallow copy of a key-value, window or session store whose bytes
stores are wrapped so that every read goes to their non-writing ``read_range`` /
``read_num_entries`` and every write raises. The typed read code is shared with the stream
thread. The record cache is wrapped the same way: readers only take C-level snapshots of it
(``dict.get``, ``dict.copy()``), and a flush writes a change to the store before it marks the
entry clean, so a reader that looks at the cache first and the store second misses no change
(cache.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any


class ReadOnlyStoreError(RuntimeError):
    """A write through a read-only view (interactive queries never write)."""


class ReadOnlyBytesStore:
    """Reads of a bytes store that never write or flush it; writes raise."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.persistent = inner.persistent

    def get(self, key: bytes) -> bytes | None:
        return self.inner.read_get(key)

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        return self.inner.read_range(from_key, to_key, reverse)

    def approximate_num_entries(self) -> int:
        return int(self.inner.read_num_entries())

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyStoreError(f"state store {self.name} is read-only here")

    put = flush = close = wipe = prepare_commit = commit = _refuse


class ReadOnlyCache:
    """The reads of a record cache (its live entries map, snapshots of dirty entries);
    everything that would change it raises."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.entries = cache.entries  # readers only call .get(): one C-level lookup

    def get(self, key_bytes: bytes) -> Any:
        return self.entries.get(key_bytes)

    def dirty_in_range(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                       clean: bool = False) -> list[Any]:
        return self.cache.dirty_snapshot_in_range(lo, hi, reverse, clean)

    @property
    def dirty(self) -> int:
        return int(self.cache.dirty)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyStoreError("a record cache is read-only here")

    put = discard = evict = flush = clear = _refuse


_BYTES_ATTRS = ("inner", "index")


def read_only_view(store: Any) -> Any:
    """A view of ``store`` that reads like it and cannot write it (see the module docstring).

    Stores without bytes stores of their own (e.g. a suppression buffer) are returned as they
    are."""
    if not any(hasattr(store, attr) for attr in _BYTES_ATTRS):
        return store
    view = copy.copy(store)
    for attr in _BYTES_ATTRS:
        inner = getattr(store, attr, None)
        if inner is not None and hasattr(inner, "read_range"):
            setattr(view, attr, ReadOnlyBytesStore(inner))
    if getattr(store, "cache", None) is not None:
        view.cache = ReadOnlyCache(store.cache)
    if hasattr(view, "_budget"):
        view._budget = None  # so enable_caching on a view does nothing
    if hasattr(view, "logger"):
        view.logger = None
    return view
