"""The stream-side buffer of a stream-table join with a grace period (KIP-923).

Kind ``"join-buffer"``, named ``<join name>-Buffer`` as Kafka names its
``RocksDBTimeOrderedKeyValueBuffer``. It holds stream records, duplicates included, in time
order until stream time passes their timestamp plus the grace; then the join evicts them oldest
first and joins each against the versioned table as of its own timestamp.

Semantics of Kafka's buffer: the buffer's stream time is the largest timestamp put into it;
``put`` refuses (returns False) a record older than that stream time minus the grace, which the
join then joins at once; ``evict`` hands back every record with ``timestamp <= stream time -
grace`` in store-key order and deletes it.

Layout (Kafka's time-first key schema): the store key is ``[timestamp: 8][key bytes][seqnum:
4]``, so evictions run by timestamp, then key bytes, then arrival. The value is
``[header count: 4]`` then per header ``[name length: 4][name][value length: 4, -1 = null]
[value]``, then the serialized record value. Every put is logged to the changelog under the same
key, every eviction as a tombstone; restoring replays them and recovers the stream time from
the keys (tombstones included).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from .api import BytesKeyValueStore, ChangeLogger

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
NO_TIMESTAMP = -1

Headers = tuple[tuple[str, bytes | None], ...]


def _encode(value: bytes, headers: Headers) -> bytes:
    parts = [_INT.pack(len(headers))]
    for name, data in headers:
        encoded = name.encode()
        parts += [_INT.pack(len(encoded)), encoded]
        parts += [_INT.pack(-1)] if data is None else [_INT.pack(len(data)), data]
    parts.append(value)
    return b"".join(parts)


def _decode(data: bytes) -> tuple[bytes, Headers]:
    (count,) = _INT.unpack_from(data)
    offset = _INT.size
    headers = []
    for _ in range(count):
        (length,) = _INT.unpack_from(data, offset)
        offset += _INT.size
        name = data[offset:offset + length].decode()
        offset += length
        (length,) = _INT.unpack_from(data, offset)
        offset += _INT.size
        if length < 0:
            headers.append((name, None))
        else:
            headers.append((name, bytes(data[offset:offset + length])))
            offset += length
    return bytes(data[offset:]), tuple(headers)


class JoinBuffer:
    """Time-ordered buffer of stream records; see the module docstring."""

    def __init__(self, name: str, inner: BytesKeyValueStore, key_serde: Serde[Any],
                 value_serde: Serde[Any], grace_ms: int, *,
                 logger: ChangeLogger | None = None) -> None:
        self.name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.grace_ms = grace_ms
        self.logger = logger
        self.stream_time = NO_TIMESTAMP
        self._seqnum = 0
        for key_bytes, _ in inner.range(None, None):  # local state kept over a restart
            self._observe(key_bytes)

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    def _observe(self, store_key: bytes) -> None:
        self.stream_time = max(self.stream_time, _LONG.unpack_from(store_key)[0])
        self._seqnum = max(self._seqnum, _INT.unpack_from(store_key, len(store_key) - 4)[0])

    def put(self, key: Any, value: Any, timestamp: int, headers: Headers = ()) -> bool:
        """Buffer a record; False when it is already older than stream time minus the grace."""
        if self.stream_time - self.grace_ms > timestamp:
            return False
        self._seqnum = (self._seqnum + 1) & 0x7FFFFFFF
        key_bytes = self.key_serde.serialize(self.name, key)
        value_bytes = self.value_serde.serialize(self.name, value)
        if key_bytes is None or value_bytes is None:
            raise ValueError(f"join buffer {self.name}: keys and values cannot be None")
        store_key = _LONG.pack(timestamp) + key_bytes + _INT.pack(self._seqnum)
        stored = _encode(value_bytes, headers)
        self.inner.put(store_key, stored)
        if self.logger is not None:
            self.logger(store_key, stored, timestamp)
        self.stream_time = max(self.stream_time, timestamp)
        return True

    def evict(self) -> Iterator[tuple[Any, Any, int, Headers]]:
        """Remove and yield ``(key, value, timestamp, headers)`` of every record due."""
        bound = self.stream_time - self.grace_ms
        if bound < 0:
            return
        due = list(self.inner.range(None, _LONG.pack(bound + 1)))
        for store_key, stored in due:
            timestamp = _LONG.unpack_from(store_key)[0]
            if timestamp > bound:
                break
            value_bytes, headers = _decode(stored)
            key = self.key_serde.deserialize(self.name, store_key[8:-4])
            value = self.value_serde.deserialize(self.name, value_bytes)
            self.inner.put(store_key, None)
            if self.logger is not None:
                self.logger(store_key, None, timestamp)
            yield key, value, timestamp, headers

    def num_records(self) -> int:
        return sum(1 for _ in self.inner.range(None, None))

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.inner.put(key, value)
        self._observe(key)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    def wipe(self) -> None:
        self.stream_time = NO_TIMESTAMP
        self._seqnum = 0
        self.inner.wipe()


def build_join_buffer(builder: Any, ctx: Any) -> JoinBuffer:
    """The ``STORE_FACTORIES["join-buffer"]`` factory (``retention_ms`` is the grace)."""
    key_serde, value_serde = builder.serdes(ctx)
    return JoinBuffer(builder.name, builder.bytes_store(ctx), key_serde, value_serde,
                      builder.retention_ms or 0,
                      logger=ctx.logger_for(builder.name) if builder.logging else None)
