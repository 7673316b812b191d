"""Non-windowed stream aggregations and the KTable source: the stateful basics.

Aggregates are stored with the max timestamp of the records that built them (Kafka's output
timestamp rule) and forwarded downstream as ``Change(new, old)`` so that table operators and
``KTable.group_by`` subtractors can see what was replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .api import Change, Processor, Record
from .cached import CacheForwarding

log = logging.getLogger(__name__)


class StreamAggregateProcessor(CacheForwarding, Processor[Any, Any]):
    """``KGroupedStream.aggregate`` (and count/reduce built on it).

    Records with a null key or a null value are skipped, as Kafka's KStreamAggregate does.
    ``initializer`` is None for ``reduce``: the first value becomes the aggregate. When the
    store caches (the runtime's record cache), changes are forwarded when the cache flushes
    them rather than on every update.
    """

    def __init__(self, store_name: str, initializer: Callable[[], Any] | None,
                 aggregator: Callable[[Any, Any, Any], Any]) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context)

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            log.debug("skipping record with null key or value in %s", self.store_name)
            return
        cached = self._cache_active()
        found = self.store.get_with_timestamp(record.key)
        if found is None:
            old, timestamp = None, record.timestamp
            if self.initializer is None:
                new = record.value
            else:
                # Kafka's KStreamAggregate forwards the initial aggregate as the old value of a
                # key's first update (a KTable.group_by downstream subtracts it)
                old = self.initializer()
                new = self.aggregator(record.key, record.value, old)
        else:
            old, old_ts = found
            timestamp = max(record.timestamp, old_ts)
            new = self.aggregator(record.key, record.value, old)
        if cached:
            self.store.put(record.key, new, timestamp, self._cache_context(record))
            return
        self.store.put(record.key, new, timestamp)
        self.context.forward(Record(record.key, Change(new, old), timestamp, record.headers))


class TableSourceProcessor(CacheForwarding, Processor[Any, Any]):
    """``StreamsBuilder.table`` / ``KStream.to_table``: upsert into the store, forward changes.

    A null value deletes the key, and is forwarded even for a key the table did not hold (as
    Kafka's KTableSource does: a left join's right side re-emits on it); null keys are dropped.
    Without a store (not materialized) the old value is unknown and forwarded as None.

    With the record cache on, a queryable table (Kafka materializes only those: named, or
    read by a join) writes through its store's cache, as Kafka's KTableSource writes its
    caching store: a key's updates between two flushes reach downstream as one change, and a
    delete of a key it never held as nothing.
    """

    def __init__(self, store_name: str | None,
                 queryable: Callable[[], bool] | None = None) -> None:
        self.store_name = store_name
        self.store: Any = None
        self.queryable = queryable

    def init(self, context: Any) -> None:
        super().init(context)
        if self.store_name is not None:
            self.store = context.get_state_store(self.store_name)
        # Kafka writes a queryable source table (named, or read by a join) through its caching
        # store when the record cache is on, and that store forwards nothing for a delete of a
        # key it never held; an unqueryable one forwards every change itself
        task = getattr(context, "task", None)
        cache = getattr(getattr(task, "config", None), "cache", None)
        self.skip_absent_deletes = (cache is not None and cache.max_bytes > 0
                                    and self.queryable is not None and self.queryable())
        self._init_cache_forwarding(context, enable=self.skip_absent_deletes)

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            log.debug("table source dropping a record with a null key")
            return
        old = None
        if self.store is not None:
            if self._cache_active():
                self.store.put(record.key, record.value, record.timestamp,
                               self._cache_context(record))
                return
            old = self.store.get(record.key)
            if old is None and record.value is None and self.skip_absent_deletes:
                return
            self.store.put(record.key, record.value, record.timestamp)
        self.context.forward(record.with_value(Change(record.value, old)))


class TableToStreamProcessor(Processor[Any, Any]):
    """``KTable.to_stream``: each change becomes a record with the new value (None = delete)."""

    def __init__(self, mapper: Callable[[Any, Any], Any] | None = None) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        value = record.value.new if isinstance(record.value, Change) else record.value
        if self.mapper is not None:
            self.context.forward(Record(self.mapper(record.key, value), value,
                                        record.timestamp, record.headers))
        else:
            self.context.forward(record.with_value(value))
