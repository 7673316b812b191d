"""Window stores (kind ``"window"``): values per (key, window start), with retention.

Used by windowed aggregations (``streams/processor/windowed.py``) and as stream-stream join
buffers (``retain_duplicates=True``). Get one in a processor with
``context.get_state_store(name)``; declare it with
``StoreBuilder(name, "window", key_serde, value_serde, store_type, retention_ms=...,
window_size_ms=..., retain_duplicates=...)``.

Layout (Kafka's ``WindowKeySchema``): the store key is
``[key bytes][window start: 8-byte big-endian][seqnum: 4-byte big-endian]``, so a scan runs
key-then-time. The seqnum is 0 unless ``retain_duplicates``, when each put gets a fresh one and
several values may live under one (key, start). The changelog key is this same store key; the
changelog value is the plain serialized value and the record timestamp is the value's timestamp.
With ``timestamped`` (the default, Kafka's TimestampedWindowStore) values are stored as
``[timestamp: 8][value]``. A second bytes store (suffix ``.time-index``) holds
``[start][key][seqnum]`` so time-range scans over all keys and retention are cheap.

Retention (Kafka's bounds): the store tracks ``observed`` = the largest window start ever put
(or restored). A window with ``start <= observed - retention_ms`` is expired for puts and
key-first reads (``fetch``, ``fetch_range``); time-ordered scans (``fetch_all``, ``all``) still
see ``start == observed - retention_ms``, as Kafka's time-ordered store does, so emit-on-close
never misses a window that closes at the boundary. Expired windows are deleted at ``flush``
(not logged: the changelog topic expires them by its own retention). Starts must be >= 0.
The record cache is not cut off (Kafka's caching layer is not): with the cache on, an expired
window put lives in the cache, is seen by key-first reads and forwarded at the flush, whose
write to the store skips it. Only input replayed after a crash meets this (the aggregation's
own stream time starts from nothing, as Kafka's does, while the store's was restored).

API (``key`` is the typed key; iterators are in ascending order unless ``backward``)::

    put(key, value, window_start, timestamp=-1)      # value None deletes (ignored when
                                                      # retain_duplicates, as in Kafka)
    fetch(key, window_start) -> value | None
    fetch(key, time_from, time_to) -> Iterator[(window_start, value)]   # by start
    fetch_with_timestamp(key, window_start) -> (value, timestamp) | None
    fetch_timestamped(key, time_from, time_to) -> Iterator[(window_start, value, timestamp)]
    backward_fetch_timestamped(key, time_from, time_to)
    backward_fetch(key, time_from, time_to) -> Iterator[(window_start, value)]
    fetch_range(key_from, key_to, time_from, time_to) -> Iterator[(Windowed, value)]
                                                      # key bytes, then start; None = open
    fetch_all(time_from, time_to) -> Iterator[(Windowed, value)]   # start, then key bytes
    fetch_all_timestamped(time_from, time_to) -> Iterator[(Windowed, value, timestamp)]
    all() / backward_all() -> Iterator[(Windowed, value)]          # start, then key bytes
    restore(key_bytes, value_bytes, timestamp); flush(); close(); wipe()

``Windowed.window`` is ``Window(start, start + window_size_ms)``.

Caching (Kafka's CachingWindowStore): a store without ``retain_duplicates`` written by one
processor may cache, as key-value stores do (cache.py): ``put`` lands in the record cache under
the store key, every read lays the cache's dirty entries over the store, and a flush (commit,
eviction) writes, changelogs and hands each change to the processor's listener with the typed
key ``(key, window_start)``.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from ..windowing import Window, Windowed
from .api import BytesKeyValueStore, ChangeLogger
from .cache import CacheBudget, CacheEntry, CachingStore, overlay_sorted
from .changelogging import with_change_logging

log = logging.getLogger(__name__)

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_SUFFIX = 12  # start (8) + seqnum (4)
_MAX_TS = 2**63 - 1
NO_TIMESTAMP = -1


class _TimeIndexed:
    """A primary bytes store plus a time index; the retention bookkeeping both store kinds share.

    Subclasses define how a primary key maps to its index key and its time (``_time_of``).
    """

    name: str

    def __init__(self, name: str, inner: BytesKeyValueStore, index: BytesKeyValueStore,
                 retention_ms: int) -> None:
        self.name = name
        self.inner = inner
        self.index = index
        self.retention_ms = retention_ms
        self.observed = -1
        self._cleaned_to: int | None = None
        for index_key, _ in index.range(None, None, reverse=True):
            self.observed = _LONG.unpack_from(index_key)[0]
            break

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    def _cutoff(self) -> int:
        """Kafka's bounds: key-first reads and puts skip times <= cutoff; time-ordered scans
        (which emit-on-close uses) still see time == cutoff; flush deletes times < cutoff."""
        return self.observed - self.retention_ms

    def _advance(self, time: int) -> None:
        if time > self.observed:
            self.observed = time

    def _index_key(self, primary: bytes) -> bytes:
        raise NotImplementedError

    def _write(self, primary: bytes, stored: bytes | None, timestamp: int | None = None) -> None:
        """Write the primary and index entries; with a ``timestamp`` the primary write is
        logged (when a ChangeLogging layer is there), without one it is not (restoration)."""
        if timestamp is None:
            self.inner.put_unlogged(primary, stored)
        else:
            self.inner.put(primary, stored, timestamp)
        self.index.put(self._index_key(primary), None if stored is None else b"")

    def _expire(self) -> None:
        cutoff = self._cutoff()
        if cutoff <= 0 or (self._cleaned_to is not None and cutoff <= self._cleaned_to):
            return
        # index keys are [time 8][...]: every key with time < cutoff sorts below pack(cutoff)
        for index_key, _ in self.index.range(None, _LONG.pack(cutoff)):
            if _LONG.unpack_from(index_key)[0] >= cutoff:
                break
            self.index.put(index_key, None)
            self.inner.put_unlogged(self._primary_from_index(index_key), None)
        self._cleaned_to = cutoff

    def _primary_from_index(self, index_key: bytes) -> bytes:
        raise NotImplementedError

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    def flush(self) -> None:
        """The commit starts: expire old windows, then hand this interval's writes to the
        bytes stores' commit (see rocksdb.py)."""
        self._expire()
        self.inner.prepare_commit()
        self.index.prepare_commit()

    def commit(self, offsets: dict[tuple[str, int], int] | None = None) -> None:
        """The commit succeeded. Two databases, two atomic writes: a crash between them
        leaves the index's offsets behind, and ``stored_offsets`` (the lower of the two)
        makes restoration replay from there, which leaves both as the changelog says."""
        self.inner.commit(offsets)
        self.index.commit(offsets)

    def stored_offsets(self) -> dict[tuple[str, int], int]:
        primary, index = self.inner.stored_offsets(), self.index.stored_offsets()
        return {tp: min(offset, index[tp]) for tp, offset in primary.items() if tp in index}

    def close(self) -> None:
        self.inner.close()
        self.index.close()

    def wipe(self) -> None:
        self.inner.wipe()
        self.index.wipe()
        self.observed = -1
        self._cleaned_to = None


class _CachedTimeIndexed(CachingStore, _TimeIndexed):
    """What window and session stores share over ``_TimeIndexed``: the record cache's
    lifecycle, a flush moving the store's stream time, and the two scans that lay the cache
    over the store (by primary key, and by time through the index)."""

    _time_suffix: int  # bytes after the time (window start, session end) in a primary key

    def _time_of(self, primary: bytes) -> int:
        return _LONG.unpack_from(primary, len(primary) - self._time_suffix)[0]

    def _flush_value(self, primary: bytes, value: Any, timestamp: int) -> None:
        # The store's stream time (its retention) moves when the flush writes it: the store
        # behind Kafka's caching store sees a put only then.
        self._advance(self._time_of(primary))
        self._store_value(primary, value, timestamp)

    def _store_value(self, primary: bytes, value: Any, timestamp: int) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        self.flush_cache()
        super().flush()

    def close(self) -> None:
        self._clear_cache()
        super().close()

    def wipe(self) -> None:
        self._clear_cache()
        super().wipe()

    def _merged(self, lo: bytes | None, hi: bytes | None, backward: bool,
                store_lo: bytes | None = None,
                clean: bool = False) -> Iterator[tuple[bytes, Any, CacheEntry | None]]:
        """A primary-key scan with the cache's dirty entries (clean ones too with ``clean``)
        laid over it: (primary, stored bytes, cache entry or None).

        The store is read from ``store_lo`` (its retention bound) when given, the cache from
        ``lo``: as Kafka's caching stores merge their cache (clean entries too) with the store
        and filter cached entries by the query's bounds only, a window or session the cache
        still holds is found after the store has expired it."""
        if store_lo is not None and hi is not None and store_lo > hi:
            stored: Iterator[tuple[bytes, Any]] = iter(())
        else:
            stored = self.inner.range(lo if store_lo is None else store_lo, hi, backward)
        overlay = (self.cache.dirty_in_range(lo, hi, backward, clean=clean)
                   if self.cache is not None else [])
        if not overlay:
            return ((primary, raw, None) for primary, raw in stored)
        return overlay_sorted(stored, overlay, backward)

    def _index_scan(self, low: int, high: int, backward: bool
                    ) -> Iterator[tuple[int, bytes, CacheEntry | None, bytes | None]]:
        """Entries with time in [low, high] by (time, key) through the time index, the
        cache's dirty entries laid over it: (time, primary, cache entry, None) or (time,
        primary, None, stored bytes); what the store no longer holds is skipped."""
        if high < low:
            return
        hi = _LONG.pack(high + 1) if high < _MAX_TS else None
        scan = self.index.range(_LONG.pack(low), hi, backward)
        overlay = [] if self.cache is None else [
            (self._index_key(primary), entry)
            for primary, entry in self.cache.dirty_in_range(None, None, backward)
            if low <= self._time_of(primary) <= high]
        if overlay:
            overlay.sort(key=lambda item: item[0], reverse=backward)
            merged = overlay_sorted(scan, overlay, backward)
        else:
            merged = ((index_key, raw, None) for index_key, raw in scan)
        for index_key, _, entry in merged:
            time = _LONG.unpack_from(index_key)[0]
            if time > high:
                continue
            primary = self._primary_from_index(index_key)
            if entry is not None:
                yield time, primary, entry, None
                continue
            stored = self.inner.get(primary)
            if stored is not None:
                yield time, primary, None, stored


class WindowStore(_CachedTimeIndexed):
    """Typed window store over bytes stores; see the module docstring for the API."""

    _time_suffix = _SUFFIX

    def __init__(
        self,
        name: str,
        inner: BytesKeyValueStore,
        index: BytesKeyValueStore,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        window_size_ms: int,
        retention_ms: int,
        retain_duplicates: bool = False,
        timestamped: bool = True,
        logger: ChangeLogger | None = None,
    ) -> None:
        super().__init__(name, with_change_logging(inner, logger, timestamped), index,
                         retention_ms)
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.window_size_ms = window_size_ms
        self.retain_duplicates = retain_duplicates
        self.timestamped = timestamped
        self._seqnum = 0
        self._init_caching()

    # -- encoding -----------------------------------------------------------------------------

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise ValueError(f"window store {self.name}: keys cannot be None")
        return data

    def _index_key(self, primary: bytes) -> bytes:
        return primary[-_SUFFIX:-4] + primary[:-_SUFFIX] + primary[-4:]

    def _primary_from_index(self, index_key: bytes) -> bytes:
        return index_key[8:-4] + index_key[:8] + index_key[-4:]

    def _decode(self, stored: bytes) -> tuple[Any, int]:
        if self.timestamped:
            return self.value_serde.deserialize(self.name, stored[8:]), _LONG.unpack_from(stored)[0]
        return self.value_serde.deserialize(self.name, stored), NO_TIMESTAMP

    def _windowed(self, key_bytes: bytes, start: int) -> Windowed[Any]:
        end = min(start + self.window_size_ms, _MAX_TS)
        return Windowed(self.key_serde.deserialize(self.name, key_bytes), Window(start, end))

    def _low(self, time_from: int) -> int:
        """The first live start at or after ``time_from``."""
        return max(time_from, self._cutoff() + 1, 0)

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: Any, value: Any, window_start: int,
            timestamp: int = NO_TIMESTAMP, context: Any = None) -> None:
        """Write (into the cache when caching is on; ``context`` is handed back to the flush
        listener with the change)."""
        if window_start < 0:
            raise ValueError(f"window store {self.name}: window start must be >= 0, "
                             f"got {window_start}")
        key_bytes = self._key(key)
        if value is None and self.retain_duplicates:
            return
        if self.cache is not None:
            # Kafka's CachingWindowStore takes every put (its cache knows no retention): a
            # window rebuilt from input replayed after a crash is forwarded at the flush,
            # whose write to the store skips it (_store_value). The store's stream time (its
            # retention) moves when the flush writes it (_flush_value), as the store behind
            # Kafka's cache sees a put only then.
            primary = key_bytes + _LONG.pack(window_start) + _INT.pack(0)
            self.cache.put(primary, (key, window_start), value, timestamp, context)
            return
        self._advance(window_start)
        if window_start <= self._cutoff():
            log.debug("window store %s: skipping a put to expired window %d", self.name,
                      window_start)
            return
        if self.retain_duplicates:
            self._seqnum = (self._seqnum + 1) & 0x7FFFFFFF
        primary = key_bytes + _LONG.pack(window_start) + _INT.pack(self._seqnum)
        self._store_value(primary, value, timestamp)

    def _store_value(self, primary: bytes, value: Any, timestamp: int) -> None:
        if value is not None and self._time_of(primary) <= self._cutoff():
            return  # expired (a cached window flushed after the store moved past it)
        value_bytes = self.value_serde.serialize(self.name, value)
        if value_bytes is None:
            stored = None
        elif self.timestamped:
            stored = _LONG.pack(timestamp) + value_bytes
        else:
            stored = value_bytes
        self._write(primary, stored, timestamp)

    def _read_inner(self, primary: bytes) -> tuple[Any, int] | None:
        """The stored value a flush replaces: None once the window has expired (Kafka's
        caching store reads the old value through the store's retention)."""
        if self._time_of(primary) <= self._cutoff():
            return None
        stored = self.inner.get(primary)
        return None if stored is None else self._decode(stored)

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Apply one changelog record (not logged again)."""
        if self.cache is not None:
            self.cache.discard(key)
        start = _LONG.unpack_from(key, len(key) - _SUFFIX)[0]
        self._advance(start)
        if start <= self._cutoff():
            return
        if value is not None and self.timestamped:
            value = _LONG.pack(timestamp) + value
        self._write(key, value)

    # -- caching ------------------------------------------------------------------------------

    def attach_cache(self, budget: CacheBudget) -> None:
        if not self.retain_duplicates:  # join buffers keep every value: nothing to dedupe
            super().attach_cache(budget)

    # -- single-key reads ---------------------------------------------------------------------

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        """``fetch(key, start)`` -> value; ``fetch(key, from, to)`` -> (start, value) pairs."""
        if time_to is None:
            found = self.fetch_with_timestamp(key, time_from)
            return None if found is None else found[0]
        return ((start, value) for start, value, _ in
                self._scan_key(self._key(key), time_from, time_to, False))

    def fetch_with_timestamp(self, key: Any, window_start: int) -> tuple[Any, int] | None:
        key_bytes = self._key(key)
        if not self.retain_duplicates:
            primary = key_bytes + _LONG.pack(window_start) + _INT.pack(0)
            if self.cache is not None:  # the cache answers first, expired or not (_scan_key)
                entry = self.cache.entries.get(primary)
                if entry is not None:
                    return None if entry.value is None else (entry.value, entry.timestamp)
            if window_start <= self._cutoff():
                return None
            stored = self.inner.get(primary)
            return None if stored is None else self._decode(stored)
        if window_start <= self._cutoff():
            return None
        for _, value, ts in self._scan_key(key_bytes, window_start, window_start, False):
            return value, ts
        return None

    def fetch_timestamped(self, key: Any, time_from: int,
                          time_to: int) -> Iterator[tuple[int, Any, int]]:
        return self._scan_key(self._key(key), time_from, time_to, False)

    def backward_fetch_timestamped(self, key: Any, time_from: int,
                                   time_to: int) -> Iterator[tuple[int, Any, int]]:
        return self._scan_key(self._key(key), time_from, time_to, True)

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Any]]:
        return ((start, value) for start, value, _ in
                self._scan_key(self._key(key), time_from, time_to, True))

    def _scan_key(self, key_bytes: bytes, time_from: int, time_to: int,
                  backward: bool) -> Iterator[tuple[int, Any, int]]:
        # As Kafka's CachingWindowStore: the cache (clean entries too) is read by the query's
        # bounds, the store by its retention, so a window the store has expired is still
        # found while the cache holds it.
        low = max(time_from, 0) if self.cache is not None else self._low(time_from)
        if time_to < low:
            return
        lo = key_bytes + _LONG.pack(low) + _INT.pack(0)
        store_lo = key_bytes + _LONG.pack(self._low(time_from)) + _INT.pack(0)
        hi = key_bytes + _LONG.pack(time_to) + b"\xff\xff\xff\xff"
        size = len(key_bytes)
        for primary, stored, entry in self._merged(lo, hi, backward, store_lo, clean=True):
            if len(primary) - _SUFFIX != size:  # a longer key sharing this prefix
                continue
            value, ts = self._decode(stored) if entry is None else (entry.value, entry.timestamp)
            yield _LONG.unpack_from(primary, size)[0], value, ts

    # -- multi-key reads ----------------------------------------------------------------------

    def fetch_range(self, key_from: Any, key_to: Any, time_from: int,
                    time_to: int) -> Iterator[tuple[Windowed[Any], Any]]:
        """Windows of keys in [key_from, key_to] (None = open) with start in [from, to]."""
        low = self._low(time_from)
        if time_to < low:
            return
        kf = None if key_from is None else self._key(key_from)
        kt = None if key_to is None else self._key(key_to)
        lo = kf
        hi = None if kt is None else kt + b"\xff" * _SUFFIX
        for primary, stored, entry in self._merged(lo, hi, False):
            key_bytes = primary[:-_SUFFIX]
            if (kf is not None and key_bytes < kf) or (kt is not None and key_bytes > kt):
                continue
            start = _LONG.unpack_from(primary, len(key_bytes))[0]
            if low <= start <= time_to:
                value = self._decode(stored)[0] if entry is None else entry.value
                yield self._windowed(key_bytes, start), value

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed[Any], Any]]:
        return ((windowed, value) for windowed, value, _ in
                self._scan_time(time_from, time_to, False, self._cutoff() + 1))

    def fetch_all_timestamped(self, time_from: int,
                              time_to: int) -> Iterator[tuple[Windowed[Any], Any, int]]:
        """Emit-on-close's scan: it still sees the window starting at the cutoff."""
        return self._scan_time(time_from, time_to, False, self._cutoff())

    def all(self) -> Iterator[tuple[Windowed[Any], Any]]:
        return self.fetch_all(0, _MAX_TS)

    def backward_all(self) -> Iterator[tuple[Windowed[Any], Any]]:
        return ((windowed, value) for windowed, value, _ in
                self._scan_time(0, _MAX_TS, True, self._cutoff() + 1))

    def _scan_time(self, time_from: int, time_to: int, backward: bool,
                   earliest: int) -> Iterator[tuple[Windowed[Any], Any, int]]:
        """Windows with start in [max(time_from, earliest), time_to]: the public reads start
        one past the cutoff, as Kafka's (key-first) reads do; emit-on-close at the cutoff."""
        for start, primary, entry, stored in self._index_scan(max(time_from, earliest, 0),
                                                              time_to, backward):
            if entry is not None:
                value, ts = entry.value, entry.timestamp
            else:
                assert stored is not None
                value, ts = self._decode(stored)
            yield self._windowed(primary[:-_SUFFIX], start), value, ts


def build_window_store(builder: Any, ctx: Any) -> WindowStore:
    """The ``STORE_FACTORIES["window"]`` factory."""
    key_serde, value_serde = builder.serdes(ctx)
    if builder.window_size_ms is None or builder.retention_ms is None:
        raise ValueError(f"window store {builder.name!r} needs window_size_ms and retention_ms")
    return WindowStore(
        builder.name,
        builder.bytes_store(ctx),
        builder.bytes_store(ctx, ".time-index"),
        key_serde,
        value_serde,
        window_size_ms=builder.window_size_ms,
        retention_ms=builder.retention_ms,
        retain_duplicates=builder.retain_duplicates,
        timestamped=builder.timestamped,
        logger=ctx.logger_for(builder.name) if builder.logging else None,
    )
