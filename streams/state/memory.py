"""In-memory bytes key-value store: a dict plus a lazily sorted key list for ranges."""

from __future__ import annotations

import bisect
from collections.abc import Iterator


class InMemoryBytesStore:
    persistent = False

    def __init__(self, name: str) -> None:
        self.name = name
        self._data: dict[bytes, bytes] = {}
        self._sorted: list[bytes] | None = []

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            if self._data.pop(key, None) is not None and self._sorted is not None:
                index = bisect.bisect_left(self._sorted, key)
                del self._sorted[index]
            return
        if key not in self._data:
            self._sorted = None  # re-sorted on the next range query
        self._data[key] = value

    def _keys(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self._data)
        return self._sorted

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        keys = self._keys()
        lo = 0 if from_key is None else bisect.bisect_left(keys, from_key)
        hi = len(keys) if to_key is None else bisect.bisect_right(keys, to_key)
        selected = keys[lo:hi]  # a snapshot: callers may write while iterating
        if reverse:
            selected.reverse()
        data = self._data
        for key in selected:
            value = data.get(key)
            if value is not None:
                yield key, value

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def wipe(self) -> None:
        self._data.clear()
        self._sorted = []
