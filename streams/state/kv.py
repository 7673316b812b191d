"""The typed key-value store processors use: serdes, timestamps and change logging."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from .api import BytesKeyValueStore, ChangeLogger

_TS = struct.Struct(">q")
NO_TIMESTAMP = -1


class KeyValueStore:
    """Typed view over a bytes store, ordered by serialized key like Kafka's.

    With ``timestamped`` the stored value is ``[timestamp: 8 bytes][value]`` (Kafka's
    timestamped store layout) so table processors can emit the right output timestamps.
    Every write is sent to the changelog logger (plain value, record timestamp).
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
        self.name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.timestamped = timestamped
        self.logger = logger

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    # -- encoding -----------------------------------------------------------------------------

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise ValueError(f"state store {self.name}: keys cannot be None")
        return data

    def _decode(self, stored: bytes | None) -> tuple[Any, int] | None:
        if stored is None:
            return None
        if self.timestamped:
            return self.value_serde.deserialize(self.name, stored[8:]), _TS.unpack_from(stored)[0]
        return self.value_serde.deserialize(self.name, stored), NO_TIMESTAMP

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: Any) -> Any:
        found = self._decode(self.inner.get(self._key(key)))
        return None if found is None else found[0]

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        return self._decode(self.inner.get(self._key(key)))

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
        for key, stored in self.inner.range(lo, hi, reverse):
            decoded = self._decode(stored)
            assert decoded is not None
            yield self.key_serde.deserialize(self.name, key), decoded[0]

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: Any, value: Any, timestamp: int = NO_TIMESTAMP) -> None:
        key_bytes = self._key(key)
        value_bytes = self.value_serde.serialize(self.name, value)
        if value_bytes is None:
            self.inner.put(key_bytes, None)
        elif self.timestamped:
            self.inner.put(key_bytes, _TS.pack(timestamp) + value_bytes)
        else:
            self.inner.put(key_bytes, value_bytes)
        if self.logger is not None:
            self.logger(key_bytes, value_bytes, timestamp)

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

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Apply one changelog record (no logging: it came from the changelog)."""
        if value is None:
            self.inner.put(key, None)
        elif self.timestamped:
            self.inner.put(key, _TS.pack(timestamp) + value)
        else:
            self.inner.put(key, value)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    def wipe(self) -> None:
        self.inner.wipe()
