"""Session stores (kind ``"session"``): one aggregate per (key, session window).

Used by session-windowed aggregations. Declare one with
``StoreBuilder(name, "session", key_serde, value_serde, store_type, retention_ms=...)``.

Layout (Kafka's ``SessionKeySchema``): ``[key bytes][end: 8-byte BE][start: 8-byte BE]``, so a
key's sessions are ordered by end, then start. That same key is the changelog key; the changelog
value is the serialized aggregate. A time index (``.time-index``: ``[end][key][start]``) serves
cross-key scans by end time and retention. Sessions include both ends: ``Window(start, end)``.

Retention (Kafka's bounds): ``observed`` is the largest session end ever put or restored; a
session with ``end <= observed - retention_ms`` is expired for puts and per-key reads, while
``find_sessions_by_end`` (time-ordered, used by emit-on-close) still sees
``end == observed - retention_ms``; ``flush`` deletes ``end < observed - retention_ms``. The
record cache is not cut off (Kafka's caching layer is not): an expired session put with the
cache on lives in the cache, is seen by reads and forwarded at the flush, whose write to the
store skips it. Only input replayed after a crash meets this (the aggregation's own stream
time starts from nothing, as Kafka's does, while the store's was restored).

API::

    put(Windowed(key, Window(start, end)), agg, timestamp=None)   # agg None removes
    remove(windowed)
    fetch_session(key, start, end) -> agg | None
    find_sessions(key, earliest_session_end, latest_session_start)
        -> Iterator[(Windowed, agg)]   # end >= earliest and start <= latest, by (end, start)
    backward_find_sessions(key, earliest_session_end, latest_session_start)
    find_sessions_range(key_from, key_to, earliest_session_end, latest_session_start)
    find_sessions_by_end(earliest_end, latest_end) -> Iterator[(Windowed, agg)]  # all keys,
                                                                          # by end, start, key
    fetch(key) -> all sessions of key; fetch_range(key_from, key_to); all()
    restore(key_bytes, value_bytes, timestamp); flush(); close(); wipe()

Caching (Kafka's CachingSessionStore): a store written by one processor may cache, as
key-value and window stores do (cache.py): ``put``/``remove`` land in the record cache under
the session key, every read lays the cache's dirty entries over the store, and a flush
(commit, eviction) writes, changelogs and hands each change to the processor's listener with
the ``Windowed`` key.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ..serde import Serde
from ..windowing import Window, Windowed
from .api import BytesKeyValueStore, ChangeLogger
from .cache import CacheEntry
from .changelogging import with_change_logging
from .window import _CachedTimeIndexed

_LONG = struct.Struct(">q")
_SUFFIX = 16
_MAX_TS = 2**63 - 1


class SessionStore(_CachedTimeIndexed):
    _time_suffix = _SUFFIX

    def __init__(
        self,
        name: str,
        inner: BytesKeyValueStore,
        index: BytesKeyValueStore,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        retention_ms: int,
        logger: ChangeLogger | None = None,
    ) -> None:
        super().__init__(name, with_change_logging(inner, logger, False), index, retention_ms)
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._init_caching()

    # -- encoding -----------------------------------------------------------------------------

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise ValueError(f"session store {self.name}: keys cannot be None")
        return data

    def _index_key(self, primary: bytes) -> bytes:
        return primary[-16:-8] + primary[:-16] + primary[-8:]

    def _primary_from_index(self, index_key: bytes) -> bytes:
        return index_key[8:-8] + index_key[:8] + index_key[-8:]

    def _session_key(self, windowed: Windowed[Any]) -> bytes:
        return (self._key(windowed.key) + _LONG.pack(windowed.window.end)
                + _LONG.pack(windowed.window.start))

    def _entry(self, primary: bytes, stored: bytes) -> tuple[Windowed[Any], Any]:
        key_bytes = primary[:-_SUFFIX]
        end, start = _LONG.unpack_from(primary, len(key_bytes)), _LONG.unpack_from(
            primary, len(key_bytes) + 8)
        key = self.key_serde.deserialize(self.name, key_bytes)
        return (Windowed(key, Window(start[0], end[0])),
                self.value_serde.deserialize(self.name, stored))

    # -- writes -------------------------------------------------------------------------------

    def put(self, windowed: Windowed[Any], agg: Any, timestamp: int | None = None,
            context: Any = None) -> None:
        """Write (into the cache when caching is on; ``context`` is handed back to the flush
        listener with the change)."""
        window = windowed.window
        if window.start < 0 or window.end < window.start:
            raise ValueError(f"session store {self.name}: bad session window {window}")
        primary = self._session_key(windowed)
        timestamp = window.end if timestamp is None else timestamp
        if self.cache is not None:
            # Kafka's CachingSessionStore takes every put: its cache knows no retention, so
            # a session rebuilt from input replayed after a crash (older than the restored
            # store's retention) still grows there and is forwarded at the flush, whose
            # write to the store then skips it (_store_value), as the segmented store does.
            # The store's stream time (its retention) moves when the flush writes it
            # (_flush_value): the store behind Kafka's cache sees a put only then.
            self.cache.put(primary, windowed, agg, timestamp, context)
            return
        self._advance(window.end)
        if window.end < self._cutoff():
            # expired; a session ending at the cutoff is still written, as Kafka's segmented
            # store does: per-key reads skip it, the time-ordered scan of emit-on-close sees it
            return
        self._store_value(primary, agg, timestamp)

    def remove(self, windowed: Windowed[Any], timestamp: int | None = None,
               context: Any = None) -> None:
        primary = self._session_key(windowed)
        timestamp = windowed.window.end if timestamp is None else timestamp
        if self.cache is not None:
            self.cache.put(primary, windowed, None, timestamp, context)
            return
        self._write(primary, None, timestamp)

    # -- caching ------------------------------------------------------------------------------

    def _store_value(self, primary: bytes, agg: Any, timestamp: int) -> None:
        if agg is not None and self._time_of(primary) < self._cutoff():
            return  # expired (a cached session flushed after the store moved past it)
        value_bytes = None if agg is None else self.value_serde.serialize(self.name, agg)
        self._write(primary, value_bytes, timestamp)

    def _read_inner(self, primary: bytes) -> tuple[Any, int] | None:
        """The stored value a flush replaces: None once the session has expired, as Kafka's
        caching store reads the old value through the store's retention (so a merged-away
        session the store has expired is removed without a tombstone downstream)."""
        end = self._time_of(primary)
        stored = self.inner.get(primary) if end > self._cutoff() else None
        if stored is None:
            return None
        return self.value_serde.deserialize(self.name, stored), end

    def _item(self, primary: bytes, raw: bytes | None,
              entry: CacheEntry | None) -> tuple[Windowed[Any], Any]:
        return (entry.key, entry.value) if entry is not None else self._entry(primary, raw)  # type: ignore[arg-type]

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        if self.cache is not None:
            self.cache.discard(key)
        end = _LONG.unpack_from(key, len(key) - _SUFFIX)[0]
        self._advance(end)
        if end > self._cutoff():
            self._write(key, value)

    # -- reads --------------------------------------------------------------------------------

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        primary = self._key(key) + _LONG.pack(session_end) + _LONG.pack(session_start)
        if self.cache is not None:  # the cache answers first, expired or not (see _merged)
            entry = self.cache.entries.get(primary)
            if entry is not None:
                return entry.value
        if session_end <= self._cutoff():
            return None
        stored = self.inner.get(primary)
        return None if stored is None else self.value_serde.deserialize(self.name, stored)

    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> Iterator[tuple[Windowed[Any], Any]]:
        """Sessions of ``key`` with end >= earliest_session_end and start <= latest."""
        return self._scan_key(self._key(key), earliest_session_end, latest_session_start, False)

    def backward_find_sessions(self, key: Any, earliest_session_end: int,
                               latest_session_start: int
                               ) -> Iterator[tuple[Windowed[Any], Any]]:
        return self._scan_key(self._key(key), earliest_session_end, latest_session_start, True)

    def fetch(self, key: Any) -> Iterator[tuple[Windowed[Any], Any]]:
        return self.find_sessions(key, 0, _MAX_TS)

    def _scan_key(self, key_bytes: bytes, earliest_end: int, latest_start: int,
                  backward: bool) -> Iterator[tuple[Windowed[Any], Any]]:
        low = max(earliest_end, self._cutoff() + 1, 0)
        store_lo = key_bytes + _LONG.pack(low) + _LONG.pack(0)
        lo = key_bytes + _LONG.pack(max(earliest_end, 0)) + _LONG.pack(0)
        hi = key_bytes + _LONG.pack(_MAX_TS) + _LONG.pack(_MAX_TS)
        size = len(key_bytes)
        for primary, stored, entry in self._merged(lo, hi, backward, store_lo, clean=True):
            if len(primary) - _SUFFIX != size:
                continue
            if _LONG.unpack_from(primary, size + 8)[0] > latest_start:
                if backward:
                    continue
                return  # a key's sessions do not overlap: later ones start later still
            yield self._item(primary, stored, entry)

    def find_sessions_range(self, key_from: Any, key_to: Any, earliest_session_end: int,
                            latest_session_start: int) -> Iterator[tuple[Windowed[Any], Any]]:
        low = max(earliest_session_end, self._cutoff() + 1, 0)
        kf = None if key_from is None else self._key(key_from)
        kt = None if key_to is None else self._key(key_to)
        hi = None if kt is None else kt + b"\xff" * _SUFFIX
        for primary, stored, entry in self._merged(kf, hi, False, clean=True):
            key_bytes = primary[:-_SUFFIX]
            if (kf is not None and key_bytes < kf) or (kt is not None and key_bytes > kt):
                continue
            end = _LONG.unpack_from(primary, len(key_bytes))[0]
            start = _LONG.unpack_from(primary, len(key_bytes) + 8)[0]
            # a cached session answers by the query's bounds alone (see _merged)
            if end >= (earliest_session_end if entry is not None else low) \
                    and start <= latest_session_start:
                yield self._item(primary, stored, entry)

    def fetch_range(self, key_from: Any, key_to: Any) -> Iterator[tuple[Windowed[Any], Any]]:
        return self.find_sessions_range(key_from, key_to, 0, _MAX_TS)

    def find_sessions_by_end(self, earliest_end: int,
                             latest_end: int) -> Iterator[tuple[Windowed[Any], Any]]:
        """Sessions of every key with earliest_end <= end <= latest_end, by end, then start,
        then key: the order Kafka's emit-on-close forwards sessions closing together in
        (checked on its driver; the time index itself runs end, key, start)."""
        low = max(earliest_end, self._cutoff(), 0)  # time-ordered: Kafka's lenient bound
        group: list[tuple[bytes, bytes, CacheEntry | None, bytes | None]] = []
        end = None
        for time, primary, entry, stored in self._index_scan(low, latest_end, False):
            if time != end:
                yield from self._by_start(group)
                group, end = [], time
            group.append((primary[-8:] + primary[:-_SUFFIX], primary, entry, stored))
        yield from self._by_start(group)

    def _by_start(self, group: list[tuple[bytes, bytes, CacheEntry | None, bytes | None]]
                  ) -> Iterator[tuple[Windowed[Any], Any]]:
        """One end's sessions by start (big-endian bytes sort as the non-negative numbers
        they are), then key bytes."""
        group.sort(key=lambda item: item[0])
        for _, primary, entry, stored in group:
            if entry is not None:
                yield entry.key, entry.value
            else:
                assert stored is not None
                yield self._entry(primary, stored)

    def all(self) -> Iterator[tuple[Windowed[Any], Any]]:
        return self.fetch_range(None, None)


def build_session_store(builder: Any, ctx: Any) -> SessionStore:
    """The ``STORE_FACTORIES["session"]`` factory."""
    key_serde, value_serde = builder.serdes(ctx)
    if builder.retention_ms is None:
        raise ValueError(f"session store {builder.name!r} needs retention_ms")
    return SessionStore(
        builder.name,
        builder.bytes_store(ctx),
        builder.bytes_store(ctx, ".time-index"),
        key_serde,
        value_serde,
        retention_ms=builder.retention_ms,
        logger=ctx.logger_for(builder.name) if builder.logging else None,
    )
