"""RocksDB bytes key-value store (rocksdict), with writes batched until flush.

Writes go to a pending map and reach RocksDB in one WriteBatch at flush (commit time), so the
hot path does no RocksDB call per record. Reads consult the pending map first.

Only the stream thread that owns the store writes or flushes it. Other threads (interactive
queries) use ``get``, ``read_range`` and ``read_num_entries``, which never write: they lay a
copy of the pending map (one C-level ``dict`` copy, atomic under the GIL) over a RocksDB
iterator (itself a consistent snapshot). A flush writes the batch before it clears the pending
map, so a reader that copies the pending map first and opens the iterator second misses nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import rocksdict

_MISSING = object()


class RocksDBBytesStore:
    persistent = True

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._db: rocksdict.Rdict | None = None
        self._pending: dict[bytes, bytes | None] = {}
        self._open()

    def _open(self) -> None:
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        self._db = rocksdict.Rdict(str(self.directory), options=options)

    @property
    def db(self) -> rocksdict.Rdict:
        if self._db is None:
            raise RuntimeError(f"state store {self.name} is closed")
        return self._db

    def get(self, key: bytes) -> bytes | None:
        value = self._pending.get(key, _MISSING)  # one lookup: a flush may clear it meanwhile
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        return self.db.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self._pending[key] = value

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """The owner's scan: flushes first, so that RocksDB is the one ordered source."""
        self.flush()
        return self._scan(self.db, from_key, to_key, reverse)

    def read_range(self, from_key: bytes | None, to_key: bytes | None,
                   reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """A scan for other threads: never flushes; pending writes are laid over RocksDB."""
        pending = dict(self._pending)  # before the iterator: see the module docstring
        db = self.db
        stored = self._scan(db, from_key, to_key, reverse)
        if not pending:
            return stored
        overlay = sorted(((k, v) for k, v in pending.items()
                          if (from_key is None or k >= from_key)
                          and (to_key is None or k <= to_key)), reverse=reverse)
        return overlay_pending(stored, overlay, reverse)

    def read_num_entries(self) -> int:
        """``approximate_num_entries`` without flushing (for other threads)."""
        estimate = int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)
        if estimate < 100_000:
            return sum(1 for _ in self.read_range(None, None))
        return estimate + sum(1 for v in dict(self._pending).values() if v is not None)

    @staticmethod
    def _scan(db: rocksdict.Rdict, from_key: bytes | None, to_key: bytes | None,
              reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        it = db.iter()
        if reverse:
            if to_key is None:
                it.seek_to_last()
            else:
                it.seek_for_prev(to_key)
            while it.valid():
                key = it.key()
                if from_key is not None and key < from_key:
                    return
                yield key, it.value()
                it.prev()
        else:
            if from_key is None:
                it.seek_to_first()
            else:
                it.seek(from_key)
            while it.valid():
                key = it.key()
                if to_key is not None and key > to_key:
                    return
                yield key, it.value()
                it.next()

    def approximate_num_entries(self) -> int:
        """RocksDB's estimate, made exact for small stores (where the estimate is worst)."""
        self.flush()
        estimate = int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)
        if estimate < 100_000:
            return sum(1 for _ in self.range(None, None))
        return estimate

    def flush(self) -> None:
        if not self._pending:
            return
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key, value in self._pending.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        self.db.write(batch)
        self._pending.clear()

    def close(self) -> None:
        if self._db is not None:
            self.flush()
            self._db.close()
            self._db = None

    def wipe(self) -> None:
        self._pending.clear()
        if self._db is not None:
            self._db.close()
            self._db = None
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._open()


def overlay_pending(stored: Iterator[tuple[bytes, bytes]],
                    overlay: list[tuple[bytes, bytes | None]],
                    reverse: bool) -> Iterator[tuple[bytes, bytes]]:
    """Merge a RocksDB scan with pending writes sorted the same way: a pending value wins on
    equal keys, a pending delete (None) hides the stored item."""
    pending = iter(overlay)
    nxt = next(pending, None)
    for key, raw in stored:
        while nxt is not None and (nxt[0] > key if reverse else nxt[0] < key):
            if nxt[1] is not None:
                yield nxt  # type: ignore[misc]
            nxt = next(pending, None)
        if nxt is not None and nxt[0] == key:
            if nxt[1] is not None:
                yield nxt  # type: ignore[misc]
            nxt = next(pending, None)
            continue
        yield key, raw
    while nxt is not None:
        if nxt[1] is not None:
            yield nxt  # type: ignore[misc]
        nxt = next(pending, None)
