"""The typed key-value store processors use: serdes, timestamps and change logging; and
``TypedBytesStore``, what every typed store over one bytes store shares (versioned.py too)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from .api import BytesKeyValueStore, ChangeLogger
from .cache import CachingStore, overlay_sorted
from .changelogging import with_change_logging

_TS = struct.Struct(">q")
NO_TIMESTAMP = -1


class TypedBytesStore:
    """A typed store over one bytes store: its name and serdes, key encoding, and the commit
    lifecycle of the bytes store below (transactional: see rocksdb.py): ``flush`` starts a
    commit, ``commit(offsets)`` writes its batch with the changelog offsets atomically."""

    kind = "state store"  # how errors name it

    def __init__(self, name: str, inner: BytesKeyValueStore, key_serde: Serde[Any],
                 value_serde: Serde[Any]) -> None:
        self.name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise ValueError(f"{self.kind} {self.name}: keys cannot be None")
        return data

    def flush(self) -> None:
        """The commit starts: hand what this interval wrote to the bytes store's commit."""
        self.inner.prepare_commit()

    def commit(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        """The commit succeeded: the flushed writes and the changelog ``offsets`` reach the
        database together."""
        self.inner.commit(offsets)

    def stored_offsets(self) -> dict[tuple[str, int], int]:
        """The changelog offsets the database reflects (empty: none recorded)."""
        return self.inner.stored_offsets()

    def close(self) -> None:
        self.inner.close()

    def wipe(self) -> None:
        self.inner.wipe()


class KeyValueStore(CachingStore, TypedBytesStore):
    """Typed view over a bytes store, ordered by serialized key like Kafka's.

    With ``timestamped`` the stored value is ``[timestamp: 8 bytes][value]`` (Kafka's
    timestamped store layout) so table processors can emit the right output timestamps.
    With a ``logger`` the bytes store is put under a ChangeLogging layer (changelogging.py):
    every write goes to the changelog too (plain value, record timestamp).

    A task may attach a ``CacheBudget``; the store then caches once its one writing processor
    calls ``enable_caching`` (see cache.py): writes wait in the cache until ``flush_cache``
    or eviction, reads see them at once.
    """

    def __init__(
        self,
        name: str,
        inner: BytesKeyValueStore,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        timestamped: bool = True,
        logger: ChangeLogger | None = None,
    ) -> None:
        super().__init__(name, with_change_logging(inner, logger, timestamped), key_serde,
                         value_serde)
        self.timestamped = timestamped
        self._init_caching()

    # -- encoding -----------------------------------------------------------------------------

    def _decode(self, stored: bytes | None) -> tuple[Any, int] | None:
        if stored is None:
            return None
        if self.timestamped:
            return self.value_serde.deserialize(self.name, stored[8:]), _TS.unpack_from(stored)[0]
        return self.value_serde.deserialize(self.name, stored), NO_TIMESTAMP

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found[0]

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        key_bytes = self._key(key)
        if self.cache is not None:
            entry = self.cache.entries.get(key_bytes)
            if entry is not None:
                return None if entry.value is None else (entry.value, entry.timestamp)
        return self._decode(self.inner.get(key_bytes))

    def _read_inner(self, key_bytes: bytes) -> tuple[Any, int] | None:
        return self._decode(self.inner.get(key_bytes))

    def range(self, from_key: Any = None, to_key: Any = None) -> Iterator[tuple[Any, Any]]:
        """Entries with from_key <= key <= to_key in serialized-key order (None = open)."""
        return self._iterate(from_key, to_key, reverse=False)

    def reverse_range(self, from_key: Any = None, to_key: Any = None) -> Iterator[tuple[Any, Any]]:
        return self._iterate(from_key, to_key, reverse=True)

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._iterate(None, None, reverse=False)

    def reverse_all(self) -> Iterator[tuple[Any, Any]]:
        return self._iterate(None, None, reverse=True)

    def _iterate(self, from_key: Any, to_key: Any, reverse: bool) -> Iterator[tuple[Any, Any]]:
        lo = None if from_key is None else self._key(from_key)
        hi = None if to_key is None else self._key(to_key)
        overlay = self.cache.dirty_in_range(lo, hi, reverse) if self.cache is not None else []
        if overlay:
            yield from self._merged(self.inner.range(lo, hi, reverse), overlay, reverse)
            return
        for key, stored in self.inner.range(lo, hi, reverse):
            decoded = self._decode(stored)
            assert decoded is not None
            yield self.key_serde.deserialize(self.name, key), decoded[0]

    def _merged(self, stored: Iterator[tuple[bytes, bytes]], overlay: list[tuple[bytes, Any]],
                reverse: bool) -> Iterator[tuple[Any, Any]]:
        """The store's entries with the cache's dirty entries laid over them, in key order."""
        for key, raw, entry in overlay_sorted(stored, overlay, reverse):
            if entry is not None:
                yield entry.key, entry.value
                continue
            decoded = self._decode(raw)
            assert decoded is not None
            yield self.key_serde.deserialize(self.name, key), decoded[0]

    def approximate_num_entries(self) -> int:
        count = self.inner.approximate_num_entries()
        if self.cache is not None:
            for key_bytes, entry in self.cache.dirty_in_range(None, None, False):
                present = self.inner.get(key_bytes) is not None
                count += (entry.value is not None) - present
        return count

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: Any, value: Any, timestamp: int = NO_TIMESTAMP,
            context: Any = None) -> None:
        """Write (into the cache when caching is on; ``context`` is handed back to the flush
        listener with the change, e.g. the record's headers)."""
        key_bytes = self._key(key)
        if self.cache is not None:
            self.cache.put(key_bytes, key, value, timestamp, context)
            return
        self._store_value(key_bytes, value, timestamp)

    def _store_value(self, key_bytes: bytes, value: Any, timestamp: int) -> None:
        value_bytes = self.value_serde.serialize(self.name, value)
        if value_bytes is None:
            self.inner.put(key_bytes, None, timestamp)
        elif self.timestamped:
            self.inner.put(key_bytes, _TS.pack(timestamp) + value_bytes, timestamp)
        else:
            self.inner.put(key_bytes, value_bytes, timestamp)

    def put_if_absent(self, key: Any, value: Any, timestamp: int = NO_TIMESTAMP) -> Any:
        existing = self.get(key)
        if existing is None:
            self.put(key, value, timestamp)
        return existing

    def put_all(self, entries: list[tuple[Any, Any]], timestamp: int = NO_TIMESTAMP) -> None:
        for key, value in entries:
            self.put(key, value, timestamp)

    def delete(self, key: Any) -> Any:
        old = self.get(key)
        self.put(key, None)
        return old

    # -- lifecycle ----------------------------------------------------------------------------

    # -- caching ------------------------------------------------------------------------------

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Apply one changelog record (no logging: it came from the changelog)."""
        if self.cache is not None:
            self.cache.discard(key)
        if value is None:
            self.inner.put_unlogged(key, None)
        elif self.timestamped:
            self.inner.put_unlogged(key, _TS.pack(timestamp) + value)
        else:
            self.inner.put_unlogged(key, value)

    def flush(self) -> None:
        """The commit starts: write the cached changes (and forward them), then hand what
        this interval wrote to the bytes store's commit (see rocksdb.py)."""
        self.flush_cache()
        super().flush()

    def close(self) -> None:
        self._clear_cache()
        super().close()

    def wipe(self) -> None:
        self._clear_cache()
        super().wipe()
