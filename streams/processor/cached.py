"""Forwarding through a store's record cache, shared by the aggregation processors.

A processor that is its store's only writer asks the store to cache (``enable_caching``); from
then on it puts each update with its record context and forwards nothing itself: the cache hands
the latest change per key to the listener when it flushes (commit, eviction), and the listener
forwards it as the processor, with the context of the record that made it. Whether the cache
took is decided at the first record, once every processor of the task is initialised (a second
writer turns caching off for both).
"""

from __future__ import annotations

from typing import Any

from .api import Change, Record


class CacheForwarding:
    """Mixin for processors with a ``context`` and a ``store``."""

    context: Any
    store: Any

    def _init_cache_forwarding(self, context: Any, enable: bool = True) -> None:
        """Call from ``init`` after ``self.store`` is set; ``enable=False`` never caches."""
        self._node = getattr(context, "current_node", None)
        self._listener = self._flushed
        self._cached: bool | None = None
        enable_caching = getattr(self.store, "enable_caching", None)
        if (enable and enable_caching is not None and self._node is not None
                and hasattr(context, "forward_from")):
            enable_caching(self._listener)

    def _cache_active(self) -> bool:
        """True when updates go to the cache (and reach downstream through ``_flushed``)."""
        cached = self._cached
        if cached is None:
            cached = self._cached = getattr(self.store, "cache_listener", None) is self._listener
        return cached

    def _put_cached(self, record: Record[Any, Any], key: Any, value: Any,
                    timestamp: int) -> bool:
        """Put into the store's cache when it is active (the flush forwards the change);
        False when the caller must write and forward itself."""
        if not self._cache_active():
            return False
        self.store.put(key, value, timestamp, self._cache_context(record))
        return True

    def _cache_context(self, record: Record[Any, Any]) -> tuple[Any, Any, int]:
        """What a cached put carries for the flush listener: headers, record metadata and the
        timestamp of the record that made the update."""
        return record.headers, self.context.record_metadata(), record.timestamp

    def _flushed(self, key: Any, new: Any, old: Any, timestamp: int, context: Any) -> None:
        if new is None and old is None:
            return  # a delete of what the store never held: Kafka's caching stores skip it
        self._forward_flushed(key, new, old, flushed_timestamp(new, timestamp, context),
                              context)

    def _forward_flushed(self, key: Any, new: Any, old: Any, timestamp: int,
                         context: Any) -> None:
        headers, metadata = context[:2] if context is not None else ((), None)
        self.context.forward_from(self._node, Record(key, Change(new, old), timestamp, headers),
                                  metadata)


def flushed_timestamp(new: Any, timestamp: int, context: Any) -> int:
    """The timestamp a timestamped store's cache flush forwards a change with: the stored
    value's, but for a delete (no value, so no value timestamp) that of the record that made
    it, as Kafka's TimestampedCacheFlushListener (a windowed reduce to null of a window last
    updated later than the deleting record forwards the record's time, not the window's)."""
    if new is None and context is not None and len(context) > 2:
        return int(context[2])
    return timestamp
