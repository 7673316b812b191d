"""In-memory bytes key-value store: a dict plus a lazily sorted key list for ranges.

Only the owning stream thread writes, and only it maintains the sorted key list; other threads
(interactive queries) read through ``get``, ``read_range`` and ``read_num_entries``, which
never assign anything (a sort done by a reader could otherwise overwrite a newer list).
"""

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

    def put(self, key: bytes, value: bytes | None, timestamp: int = -1) -> None:
        """``timestamp`` is for the ChangeLogging layer above; a bytes store keeps
        none."""
        if value is None:
            if self._data.pop(key, None) is not None and self._sorted is not None:
                index = bisect.bisect_left(self._sorted, key)
                del self._sorted[index]
            return
        if key not in self._data:
            self._sorted = None  # re-sorted on the next range query
        self._data[key] = value

    def put_unlogged(self, key: bytes, value: bytes | None) -> None:
        self.put(key, value)  # nothing logs at this layer

    def _keys(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self._data)
        return self._sorted

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        return self._scan(self._keys(), from_key, to_key, reverse)

    def _scan(self, keys: list[bytes], from_key: bytes | None, to_key: bytes | None,
              reverse: bool) -> Iterator[tuple[bytes, bytes]]:
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

    def read_range(self, from_key: bytes | None, to_key: bytes | None,
                   reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """A scan for other threads: uses the sorted list if there is one, else sorts a copy."""
        keys = self._sorted  # the owner may delete from it: bisect a private copy
        keys = sorted(self._data) if keys is None else list(keys)  # C-level: atomic
        return self._scan(keys, from_key, to_key, reverse)

    def read_num_entries(self) -> int:
        return len(self._data)

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        return None

    # Not transactional: a memory store is rebuilt from its changelog whenever its task
    # starts, so nothing uncommitted can outlive an aborted transaction.
    def read_get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def prepare_commit(self) -> None:
        return None

    def commit(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        return None

    def stored_offsets(self) -> dict[tuple[str, int], int]:
        return {}

    def uncommitted(self) -> int:
        return 0

    def close(self) -> None:
        return None

    def wipe(self) -> None:
        self._data.clear()
        self._sorted = []
