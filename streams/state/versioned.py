"""Versioned key-value stores (KIP-889): every key keeps its history of values by timestamp.

``put(key, value, timestamp)`` adds a version that is valid from ``timestamp`` until the next
version's timestamp; ``get(key)`` returns the latest version, ``get(key, as_of_timestamp)`` the
version that was valid at that time, each as a ``VersionedRecord(value, timestamp, valid_to)``.
A ``None`` value is a tombstone: it ends the previous version, and reads that land on it return
``None``. Semantics follow Kafka's ``RocksDBVersionedStore``:

- The store tracks ``observed_stream_time`` (the largest timestamp put). A put older than
  ``observed_stream_time - history_retention_ms`` (the grace period, which equals the history
  retention) is not applied and returns ``PUT_RETURN_CODE_NOT_PUT``.
- ``put`` returns the new version's ``valid_to``, or ``PUT_RETURN_CODE_VALID_TO_UNDEFINED``
  when it became the latest version (out-of-order puts land in the middle of the history).
- A read older than ``observed_stream_time - history_retention_ms`` returns ``None`` unless the
  latest version already covers it: the latest version of a key never expires.
- Versions nobody can read any more (``valid_to`` at or before the retention bound) are dropped
  when their key is next written.

Layout: one bytes-store entry per key, ``[count: 4]`` then per version, oldest first,
``[timestamp: 8][length: 4, -1 = tombstone][value bytes]``. The changelog gets every put as Kafka's
``ChangeLoggingVersionedKeyValueBytesStore`` writes it: the plain key and value (``None`` for a
tombstone) with the version's timestamp as the record timestamp; restoring replays those puts
through the same logic. The changelog topic is compacted with ``min.compaction.lag.ms`` = the
history retention + 24 h, as Kafka's ``VersionedChangelogTopicConfig`` sets it, so compaction
never removes a version that can still be read.

Not cached (Kafka's versioned stores have no caching layer). Kafka offers only the RocksDB
store; ``Stores.in_memory_versioned_key_value_store`` is ours (same semantics, nothing on disk).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..serde import Serde
from .api import BytesKeyValueStore, ChangeLogger
from .kv import TypedBytesStore

PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
PUT_RETURN_CODE_NOT_PUT = -(2**63)
NO_TIMESTAMP = -1
# Kafka's VersionedChangelogTopicConfig: compaction lag = history retention + this
CHANGELOG_ADDITIONAL_COMPACTION_LAG_MS = 24 * 60 * 60 * 1000

_COUNT = struct.Struct(">i")
_VERSION = struct.Struct(">qi")

Version = tuple[int, bytes | None]  # (timestamp, value bytes or None for a tombstone)


@dataclass(frozen=True, slots=True)
class VersionedRecord:
    """One version of a key: its value, the timestamp it is valid from, and ``valid_to`` (the
    next version's timestamp; ``None`` while it is the latest), as Kafka's ``VersionedRecord``."""

    value: Any
    timestamp: int
    valid_to: int | None = None


def encode_versions(versions: list[Version]) -> bytes:
    parts = [_COUNT.pack(len(versions))]
    for timestamp, value in versions:
        parts.append(_VERSION.pack(timestamp, -1 if value is None else len(value)))
        if value is not None:
            parts.append(value)
    return b"".join(parts)


def decode_versions(data: bytes | None) -> list[Version]:
    if not data:
        return []
    (count,) = _COUNT.unpack_from(data)
    offset = _COUNT.size
    versions: list[Version] = []
    for _ in range(count):
        timestamp, length = _VERSION.unpack_from(data, offset)
        offset += _VERSION.size
        if length < 0:
            versions.append((timestamp, None))
        else:
            versions.append((timestamp, bytes(data[offset:offset + length])))
            offset += length
    return versions


class VersionedKeyValueStore(TypedBytesStore):
    """Typed versioned store over a bytes store (RocksDB or memory); see the module docstring.
    Its commits are those of every typed store (TypedBytesStore): a commit interval's writes
    reach RocksDB with the changelog offsets they correspond to, so a restart restores only
    the changelog's tail."""

    versioned = True
    kind = "versioned store"

    def __init__(self, name: str, inner: BytesKeyValueStore, key_serde: Serde[Any],
                 value_serde: Serde[Any], history_retention_ms: int, *,
                 logger: ChangeLogger | None = None) -> None:
        if history_retention_ms < 0:
            raise ValueError(f"versioned store {name!r}: history retention must be >= 0, got "
                             f"{history_retention_ms}")
        super().__init__(name, inner, key_serde, value_serde)
        self.history_retention_ms = history_retention_ms
        self.logger = logger
        # As in Kafka, not persisted: after a restart with local state it starts over, and
        # a restore from the changelog advances it again.
        self.observed_stream_time = NO_TIMESTAMP

    # -- encoding -----------------------------------------------------------------------------

    def _record(self, versions: list[Version], index: int) -> VersionedRecord | None:
        timestamp, raw = versions[index]
        if raw is None:
            return None
        valid_to = versions[index + 1][0] if index + 1 < len(versions) else None
        return VersionedRecord(self.value_serde.deserialize(self.name, raw), timestamp, valid_to)

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord | None:
        """The latest version, or the one valid at ``as_of_timestamp`` (None: none, a
        tombstone, or older than the history retention)."""
        versions = decode_versions(self.inner.get(self._key(key)))
        if not versions:
            return None
        if as_of_timestamp is None:
            return self._record(versions, len(versions) - 1)
        if as_of_timestamp < self.observed_stream_time - self.history_retention_ms:
            # expired for history reads; the latest version never expires (Kafka's rule)
            latest = versions[-1]
            if latest[0] <= as_of_timestamp:
                return self._record(versions, len(versions) - 1)
            return None
        for index in range(len(versions) - 1, -1, -1):
            if versions[index][0] <= as_of_timestamp:
                return self._record(versions, index)
        return None

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        """The latest ``(value, timestamp)``: how table processors read any table's store."""
        record = self.get(key)
        return None if record is None else (record.value, record.timestamp)

    def versions(self, key: Any) -> Iterator[VersionedRecord]:
        """Every stored version of ``key`` that is not a tombstone, oldest first."""
        versions = decode_versions(self.inner.get(self._key(key)))
        for index in range(len(versions)):
            record = self._record(versions, index)
            if record is not None:
                yield record

    def keys(self) -> Iterator[Any]:
        """Every key with a stored history (for tests and tools; Kafka offers no scans)."""
        for key_bytes, _ in self.inner.range(None, None):
            yield self.key_serde.deserialize(self.name, key_bytes)

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        """Add a version; returns its ``valid_to``, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` when
        it is the latest, or ``PUT_RETURN_CODE_NOT_PUT`` when it is older than the grace."""
        key_bytes = self._key(key)
        value_bytes = None if value is None else self.value_serde.serialize(self.name, value)
        result = self._apply(key_bytes, value_bytes, timestamp)
        if self.logger is not None:  # Kafka logs every put, applied or not
            self.logger(key_bytes, value_bytes, timestamp)
        return result

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        """Put a tombstone at ``timestamp``; returns the version it replaced as of then."""
        if timestamp < self.observed_stream_time - self.history_retention_ms:
            return None
        existing = self.get(key, timestamp)
        self.put(key, None, timestamp)
        return existing

    def _apply(self, key_bytes: bytes, value_bytes: bytes | None, timestamp: int) -> int:
        if timestamp < self.observed_stream_time - self.history_retention_ms:
            return PUT_RETURN_CODE_NOT_PUT
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        versions = decode_versions(self.inner.get(key_bytes))
        index = len(versions)
        while index > 0 and versions[index - 1][0] > timestamp:
            index -= 1
        if (index == len(versions) == 1 and versions[0][0] == timestamp and value_bytes is None
                and versions[0][1] is not None):
            # A tombstone replacing a key's only version leaves nothing, not a tombstone: as
            # Kafka's store, which deletes its latest value and keeps no record of the delete
            # (a later out-of-order put of the key then becomes its latest version).
            self.inner.put(key_bytes, None)
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        if index > 0 and versions[index - 1][0] == timestamp:
            versions[index - 1] = (timestamp, value_bytes)  # same timestamp: replaced
            position = index - 1
        else:
            versions.insert(index, (timestamp, value_bytes))
            position = index
        valid_to = (versions[position + 1][0] if position + 1 < len(versions)
                    else PUT_RETURN_CODE_VALID_TO_UNDEFINED)
        versions = self._expire(versions)
        self.inner.put(key_bytes, encode_versions(versions) if versions else None)
        return valid_to

    def _expire(self, versions: list[Version]) -> list[Version]:
        """Drop versions no read can reach: ``valid_to`` at or before the retention bound
        (a latest tombstone past the bound goes too: it answers nothing a missing key does not)."""
        bound = self.observed_stream_time - self.history_retention_ms
        first = 0
        while first < len(versions) - 1 and versions[first + 1][0] <= bound:
            first += 1
        kept = versions[first:]
        if len(kept) == 1 and kept[0][1] is None and kept[0][0] < bound:
            return []
        return kept

    # -- lifecycle ----------------------------------------------------------------------------

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Replay one changelog record (a put) without logging it again."""
        self._apply(key, value, timestamp)

    def wipe(self) -> None:
        self.observed_stream_time = NO_TIMESTAMP
        super().wipe()


def build_versioned_store(builder: Any, ctx: Any) -> VersionedKeyValueStore:
    """The ``STORE_FACTORIES["versioned"]`` factory."""
    key_serde, value_serde = builder.serdes(ctx)
    if builder.retention_ms is None:
        raise ValueError(f"versioned store {builder.name!r} needs a history retention")
    return VersionedKeyValueStore(
        builder.name, builder.bytes_store(ctx), key_serde, value_serde, builder.retention_ms,
        logger=ctx.logger_for(builder.name) if builder.logging else None)


def changelog_config(history_retention_ms: int) -> dict[str, str]:
    """Kafka's ``VersionedChangelogTopicConfig``: compacted, with a compaction lag that keeps
    every readable version."""
    lag = min(history_retention_ms + CHANGELOG_ADDITIONAL_COMPACTION_LAG_MS, 2**63 - 1)
    return {"cleanup.policy": "compact", "min.compaction.lag.ms": str(lag)}
