"""RocksDB bytes key-value store (rocksdict): the bottom layer, transactional per commit.

Why: after a crash a task should restore only the changelog records its store had not yet
taken in, under at_least_once and exactly_once_v2 alike (the idea of KIP-892). So nothing a
task writes reaches RocksDB until its commit succeeds, and then it arrives together with the
changelog offsets that commit reached, in one atomic ``WriteBatch``:

- ``put`` goes to ``_pending``, the write batch of the running commit interval (a dict, so the
  hot path does no RocksDB call per record);
- ``prepare_commit`` (the task's commit starts) moves ``_pending`` to ``_committing``: what is
  written afterwards belongs to the next interval, while the commit (an exactly-once
  transaction in the background) is under way;
- ``commit(offsets)`` (the commit succeeded) writes ``_committing`` plus ``offsets`` (changelog
  topic-partition -> next offset) into the ``changelog-offsets`` column family in one batch;
- ``close`` drops whatever was not committed: an aborted transaction's writes never reach the
  database, so nothing has to be wiped after it.

``stored_offsets()`` reads the offsets back: restoration starts there. Reads (``get``,
``range``) see the database with ``_committing`` and ``_pending`` laid over it and never write.

Threads: only the stream thread that owns the store writes, commits or closes it. Other threads
(interactive queries) use ``read_get``, ``read_range`` and ``read_num_entries``: they copy the
overlays (one C-level ``dict`` copy each, atomic under the GIL) before they open a RocksDB
iterator (a consistent view), and the owner writes a batch to RocksDB before it drops the
overlay, so a reader misses nothing. rocksdict's ``close`` holds the database mutably (PyO3)
with the GIL released, so a reader's call at that moment would fail with "Already mutably
borrowed": readers and ``close`` take ``_db_lock`` around their calls on the database.
"""

from __future__ import annotations

import bisect
import shutil
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import rocksdict

_MISSING = object()
_OFFSET = struct.Struct(">q")
OFFSETS_CF = "changelog-offsets"

Offsets = dict[tuple[str, int], int]


def _offset_key(topic: str, partition: int) -> bytes:
    return f"{topic}:{partition}".encode()


class RocksDBBytesStore:
    persistent = True

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._db: rocksdict.Rdict | None = None
        self._offsets_cf: object | None = None
        self._pending: dict[bytes, bytes | None] = {}
        self._committing: dict[bytes, bytes | None] | None = None
        # The overlays' keys in order, kept only once the owner scans this store (so a store
        # that is never scanned pays one attribute test per put).
        self._pending_sorted: list[bytes] | None = None
        self._committing_sorted: list[bytes] | None = None
        self._db_lock = threading.Lock()
        self._written: Offsets = {}  # offsets this handle last wrote
        self._open()

    def _open(self) -> None:
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        db = rocksdict.Rdict(str(self.directory), options=options)
        if OFFSETS_CF not in rocksdict.Rdict.list_cf(str(self.directory), options):
            db.create_column_family(OFFSETS_CF, rocksdict.Options(raw_mode=True))
        self._offsets_cf = db.get_column_family_handle(OFFSETS_CF)
        self._db = db

    @property
    def db(self) -> rocksdict.Rdict:
        if self._db is None:
            raise RuntimeError(f"state store {self.name} is closed")
        return self._db

    # -- the owner's reads and writes ---------------------------------------------------------

    def _batched(self, key: bytes) -> object:
        """The key's value in the uncommitted batches (the pending one first), else _MISSING."""
        value = self._pending.get(key, _MISSING)
        committing = self._committing
        if value is _MISSING and committing is not None:
            value = committing.get(key, _MISSING)
        return value

    def get(self, key: bytes) -> bytes | None:
        value = self._batched(key)
        return self.db.get(key) if value is _MISSING else value  # type: ignore[return-value]

    def put(self, key: bytes, value: bytes | None, timestamp: int = -1) -> None:
        """``timestamp`` is for the ChangeLogging layer above; a bytes store keeps
        none."""
        if self._pending_sorted is not None and key not in self._pending:
            bisect.insort(self._pending_sorted, key)
        self._pending[key] = value

    put_unlogged = put  # nothing logs at this layer

    def range(self, from_key: bytes | None, to_key: bytes | None,
              reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """The committed database with this task's uncommitted writes laid over it (the
        overlay's entries in range are taken when the scan starts; later writes do not show).
        Costs the range's overlay entries, not the whole overlay: the keys are kept sorted."""
        stored = self._scan(self.db.iter(), from_key, to_key, reverse)
        if self._committing:
            if self._committing_sorted is None:
                self._committing_sorted = sorted(self._committing)
            stored = overlay_pending(stored, _slice(self._committing, self._committing_sorted,
                                                    from_key, to_key, reverse), reverse)
        if self._pending:
            if self._pending_sorted is None:
                self._pending_sorted = sorted(self._pending)
            stored = overlay_pending(stored, _slice(self._pending, self._pending_sorted,
                                                    from_key, to_key, reverse), reverse)
        return stored

    def _overlay(self) -> dict[bytes, bytes | None]:
        """The uncommitted writes, newest winning: copies, taken before any iterator opens."""
        pending = self._pending.copy()
        committing = self._committing
        if committing is None:
            return pending
        merged = committing.copy()
        merged.update(pending)
        return merged

    def _overlaid(self, db: rocksdict.Rdict, from_key: bytes | None, to_key: bytes | None,
                  reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        overlay = self._overlay()  # before the iterator: see the module docstring
        stored = self._scan(db.iter(), from_key, to_key, reverse)
        if not overlay:
            return stored
        in_range = sorted(((k, v) for k, v in overlay.items()
                           if (from_key is None or k >= from_key)
                           and (to_key is None or k <= to_key)), reverse=reverse)
        return overlay_pending(stored, in_range, reverse)

    def approximate_num_entries(self) -> int:
        """RocksDB's estimate, made exact for small stores (where the estimate is worst)."""
        estimate = int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)
        if estimate < 100_000:
            return sum(1 for _ in self.range(None, None))
        return estimate + sum(1 for v in self._overlay().values() if v is not None)

    # -- reads for other threads --------------------------------------------------------------

    def read_get(self, key: bytes) -> bytes | None:
        value = self._batched(key)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        with self._db_lock:
            return self.db.get(key)

    def read_range(self, from_key: bytes | None, to_key: bytes | None,
                   reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """A scan for other threads: the iterator keeps the database open even if the owner
        closes the store meanwhile."""
        with self._db_lock:
            return self._overlaid(self.db, from_key, to_key, reverse)

    def read_num_entries(self) -> int:
        with self._db_lock:
            estimate = int(self.db.property_int_value("rocksdb.estimate-num-keys")
                           or 0)
        if estimate < 100_000:
            return sum(1 for _ in self.read_range(None, None))
        return estimate + sum(1 for v in self._overlay().values() if v is not None)

    @staticmethod
    def _scan(it: rocksdict.RdictIter, from_key: bytes | None, to_key: bytes | None,
              reverse: bool) -> Iterator[tuple[bytes, bytes]]:
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

    # -- commit -------------------------------------------------------------------------------

    def uncommitted(self) -> int:
        """Writes not in the database yet (both overlays)."""
        return len(self._pending) + len(self._committing or ())

    def prepare_commit(self) -> None:
        """The commit starts: what was written so far is what it commits."""
        if not self._pending:
            return
        if self._committing is None:
            self._committing_sorted = self._pending_sorted
            self._committing = self._pending
        else:  # an earlier prepared batch never committed (e.g. no transaction was open)
            merged = self._committing.copy()
            merged.update(self._pending)
            self._committing_sorted = None
            self._committing = merged
        self._pending = {}
        self._pending_sorted = None if self._pending_sorted is None else []

    def commit(self, offsets: Offsets | None = None) -> None:
        """The commit succeeded: write the prepared batch and ``offsets`` atomically."""
        committing = self._committing
        if not committing and (not offsets or all(
                self._written.get(tp) == offset for tp, offset in offsets.items())):
            return  # nothing new: an idle commit costs no RocksDB write
        batch = rocksdict.WriteBatch(raw_mode=True)
        if committing:
            for key, value in committing.items():
                if value is None:
                    batch.delete(key)
                else:
                    batch.put(key, value)
        for (topic, partition), offset in (offsets or {}).items():
            batch.put(_offset_key(topic, partition), _OFFSET.pack(offset), self._offsets_cf)
        self.db.write(batch)
        self._committing = None  # after the write: see the module docstring
        self._committing_sorted = None
        if offsets:
            self._written.update(offsets)

    def flush(self) -> None:
        """Write every uncommitted change now, without offsets (restoration, global stores,
        the test driver: writers with no commit of their own)."""
        self.prepare_commit()
        self.commit()

    def stored_offsets(self) -> Offsets:
        """The changelog offsets of the last commit that reached the database."""
        result: Offsets = {}
        cf = self.db.get_column_family(OFFSETS_CF)
        try:
            for key, value in cf.items():
                topic, _, partition = key.decode().rpartition(":")
                result[(topic, int(partition))] = _OFFSET.unpack(value)[0]
        finally:
            del cf
        return result

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close; uncommitted writes are dropped (commit first to keep them)."""
        self._pending = {}
        self._committing = None
        self._pending_sorted = self._committing_sorted = None
        with self._db_lock:
            db, self._db = self._db, None
            self._offsets_cf = None
            if db is not None:
                db.close()

    def wipe(self) -> None:
        self.close()
        self._written = {}
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._open()


def _slice(overlay: dict[bytes, bytes | None], keys: list[bytes], from_key: bytes | None,
           to_key: bytes | None, reverse: bool) -> list[tuple[bytes, bytes | None]]:
    """The overlay's entries with from_key <= key <= to_key, in scan order (a snapshot)."""
    lo = 0 if from_key is None else bisect.bisect_left(keys, from_key)
    hi = len(keys) if to_key is None else bisect.bisect_right(keys, to_key)
    entries = [(key, overlay[key]) for key in keys[lo:hi]]
    if reverse:
        entries.reverse()
    return entries


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
