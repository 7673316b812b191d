"""The record cache of key-value stores (Kafka's ``statestore.cache.max.bytes``).

Why: an aggregation that updates a key many times between commits would otherwise serialize,
write, changelog and forward every intermediate value. With a cache, updates land in a dict of
typed values; the latest value per key is written to the store and its changelog, and forwarded
downstream as ``Change(new, old)``, only when the cache is flushed (before every commit) or when
the entry is evicted (least recently written first) because the stream thread's budget is used
up. That is Kafka's documented behaviour: fewer intermediate updates downstream, same final
results. ``old`` is the value the underlying store held before the flush, i.e. the last value
forwarded for that key, so table subtractors stay right.

One ``CacheBudget`` per stream thread is shared by the caches of all its tasks' stores. Sizes
are estimates (key bytes + shallow value size + entry overhead), not exact memory use.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable, Iterator
from typing import Any

ENTRY_OVERHEAD = 64
DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024

# (typed key, new value, old value, timestamp, context captured at put) -> None
FlushListener = Callable[[Any, Any, Any, int, Any], None]


class CacheBudget:
    """``statestore.cache.max.bytes`` of one stream thread, shared by its stores' caches."""

    __slots__ = ("max_bytes", "used")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0


class CacheEntry:
    __slots__ = ("key", "value", "timestamp", "dirty", "context", "size")

    def __init__(self, key: Any, value: Any, timestamp: int, dirty: bool, context: Any,
                 size: int) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.dirty = dirty
        self.context = context
        self.size = size


class StoreCache:
    """The cache of one store: serialized key -> entry, in least-recently-written order.

    ``write(key_bytes, value, timestamp)`` puts a value into the underlying store (and its
    changelog); ``read(key_bytes)`` returns the underlying ``(value, timestamp)`` or None;
    ``listener`` forwards a flushed change downstream.
    """

    def __init__(self, budget: CacheBudget, write: Callable[[bytes, Any, int], None],
                 read: Callable[[bytes], tuple[Any, int] | None], listener: FlushListener) -> None:
        self.budget = budget
        self.write = write
        self.read = read
        self.listener = listener
        self.entries: dict[bytes, CacheEntry] = {}
        self.dirty = 0
        # The keys in order, kept only once the owner scans a range (a session store does on
        # every record); a cache that is never scanned pays one attribute test per new key.
        self._sorted: list[bytes] | None = None

    def get(self, key_bytes: bytes) -> CacheEntry | None:
        return self.entries.get(key_bytes)

    def put(self, key_bytes: bytes, key: Any, value: Any, timestamp: int, context: Any) -> None:
        entries, budget = self.entries, self.budget
        previous = entries.pop(key_bytes, None)  # re-inserted last: most recently written
        if previous is not None:
            budget.used -= previous.size
            if previous.dirty:
                self.dirty -= 1
        elif self._sorted is not None:
            bisect.insort(self._sorted, key_bytes)
        size = len(key_bytes) + sys.getsizeof(value) + ENTRY_OVERHEAD
        entries[key_bytes] = CacheEntry(key, value, timestamp, True, context, size)
        budget.used += size
        self.dirty += 1
        if budget.used > budget.max_bytes:
            self.evict()

    def discard(self, key_bytes: bytes) -> None:
        entry = self.entries.pop(key_bytes, None)
        if entry is not None:
            self.budget.used -= entry.size
            if entry.dirty:
                self.dirty -= 1
            self._unsort(key_bytes)

    def _unsort(self, key_bytes: bytes) -> None:
        keys = self._sorted
        if keys is not None:
            index = bisect.bisect_left(keys, key_bytes)
            if index < len(keys) and keys[index] == key_bytes:
                del keys[index]

    def evict(self) -> None:
        """Drop least recently written entries until the budget holds; dirty ones are
        flushed first (written and forwarded), as Kafka's eviction does."""
        entries, budget = self.entries, self.budget
        while budget.used > budget.max_bytes and entries:
            key_bytes = next(iter(entries))
            entry = entries[key_bytes]
            if entry.dirty:
                self._emit(key_bytes, entry, evict=True)
            else:
                del entries[key_bytes]
                budget.used -= entry.size
                self._unsort(key_bytes)

    def flush(self) -> bool:
        """Write and forward every dirty entry (kept as clean entries); True if any."""
        if not self.dirty:
            return False
        for key_bytes, entry in list(self.entries.items()):
            if entry.dirty:
                self._emit(key_bytes, entry)
        return True

    def _emit(self, key_bytes: bytes, entry: CacheEntry, evict: bool = False) -> None:
        # Written to the store before it stops being dirty (or leaves the cache): a query on
        # another thread reads the cache first, the store second, and so never misses it.
        old = self.read(key_bytes)
        self.write(key_bytes, entry.value, entry.timestamp)
        entry.dirty = False
        self.dirty -= 1
        if evict:
            del self.entries[key_bytes]
            self.budget.used -= entry.size
            self._unsort(key_bytes)
        self.listener(entry.key, entry.value, None if old is None else old[0], entry.timestamp,
                      entry.context)

    def dirty_in_range(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                       clean: bool = False) -> list[tuple[bytes, CacheEntry]]:
        """The owner's read: dirty entries (and clean ones too with ``clean``) with
        lo <= key <= hi in key order (a list: the owner may write while it iterates), found
        through the sorted keys, so it costs the range, not the cache."""
        keys = self._sorted
        if keys is None:
            keys = self._sorted = sorted(self.entries)
        start = 0 if lo is None else bisect.bisect_left(keys, lo)
        stop = len(keys) if hi is None else bisect.bisect_right(keys, hi)
        entries = self.entries
        found = [(k, entries[k]) for k in keys[start:stop] if clean or entries[k].dirty]
        if reverse:
            found.reverse()
        return found

    def dirty_snapshot_in_range(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                                clean: bool = False) -> list[tuple[bytes, CacheEntry]]:
        """Dirty entries (clean ones too with ``clean``) with lo <= key <= hi in key order,
        for other threads (interactive
        queries): it touches nothing the owner maintains. ``dict.copy()`` is one C call
        that allocates no tracked objects, so no GC (and no thread switch) runs inside it;
        ``list(d.items())`` builds a tuple per entry and can be interrupted."""
        found = [(k, e) for k, e in self.entries.copy().items() if (clean or e.dirty)
                 and (lo is None or k >= lo) and (hi is None or k <= hi)]
        found.sort(key=lambda item: item[0], reverse=reverse)
        return found

    def clear(self) -> None:
        for entry in self.entries.values():
            self.budget.used -= entry.size
        self.entries.clear()
        self.dirty = 0
        self._sorted = None


class CachingStore:
    """What key-value and window stores share to take part in the record cache.

    The store provides ``_store_value(key_bytes, value, timestamp)`` (serialize, write,
    changelog) and ``_read_inner(key_bytes)`` (the stored ``(value, timestamp)`` or None); it
    calls ``_init_caching()`` in its constructor.
    """

    cache: StoreCache | None
    _budget: CacheBudget | None

    def _init_caching(self) -> None:
        self.cache = None  # active: a processor forwards what it flushes
        self._budget = None

    def _store_value(self, key_bytes: bytes, value: Any, timestamp: int) -> None:
        raise NotImplementedError

    def _read_inner(self, key_bytes: bytes) -> tuple[Any, int] | None:
        raise NotImplementedError

    def attach_cache(self, budget: CacheBudget) -> None:
        """Allow caching (the task does this for stores with a single processor)."""
        self._budget = budget

    def enable_caching(self, listener: FlushListener) -> bool:
        """Called by the processor that writes this store; True if writes are now cached and
        reach ``listener`` on flush instead of being forwarded by the processor."""
        if self._budget is None or self._budget.max_bytes <= 0:
            return False
        if self.cache is not None:  # a second writer: nobody caches
            self.cache = None
            self._budget = None
            return False
        self.cache = StoreCache(self._budget, self._flush_value, self._read_inner, listener)
        return True

    def _flush_value(self, key_bytes: bytes, value: Any, timestamp: int) -> None:
        """What a flush writes through (window and session stores also advance their
        retention there: the store behind Kafka's cache sees a put only when it flushes)."""
        self._store_value(key_bytes, value, timestamp)

    @property
    def cache_listener(self) -> FlushListener | None:
        return None if self.cache is None else self.cache.listener

    def flush_cache(self) -> bool:
        """Write and forward the cached changes; True if there were any."""
        return self.cache.flush() if self.cache is not None else False

    def _clear_cache(self) -> None:
        if self.cache is not None:
            self.cache.clear()


def overlay_sorted(stored: Iterator[tuple[bytes, Any]], overlay: list[tuple[bytes, CacheEntry]],
                   reverse: bool) -> Iterator[tuple[bytes, Any, CacheEntry | None]]:
    """Merge a store scan ``(sort key, raw)`` with dirty cache entries sorted the same way:
    yields ``(sort key, raw, None)`` for store items and ``(sort key, None, entry)`` where the
    cache has the newer value (it wins on equal keys); deletions waiting in the cache hide the
    stored item and yield nothing."""
    pending = iter(overlay)
    nxt = next(pending, None)
    for key, raw in stored:
        while nxt is not None and (nxt[0] > key if reverse else nxt[0] < key):
            if nxt[1].value is not None:
                yield nxt[0], None, nxt[1]
            nxt = next(pending, None)
        if nxt is not None and nxt[0] == key:
            if nxt[1].value is not None:
                yield key, None, nxt[1]
            nxt = next(pending, None)
            continue
        yield key, raw, None
    while nxt is not None:
        if nxt[1].value is not None:
            yield nxt[0], None, nxt[1]
        nxt = next(pending, None)
