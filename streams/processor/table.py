"""KTable operators as processors: filter, map_values, group_by's re-keying, and the
add/subtract aggregation behind ``KGroupedTable``.

With the record cache on, a materialized filter, map_values or table aggregation writes
through its store's cache and the cache's flush forwards the latest change per key, as Kafka's
table processors do with a caching store (TimestampedTupleForwarder).

Table processors receive ``Record(key, Change(new, old))``. ``send_old`` mirrors Kafka's
"send old values" switch: a downstream operator that needs the replaced value (group_by,
joins, suppress) turns it on, otherwise ``old`` is left as None so that, for example, a
non-materialized ``map_values`` calls the user's mapper once per update, as in Kafka.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from ..serde import Serde, SerializationError
from .api import Change, Processor, Record
from .cached import CacheForwarding

log = logging.getLogger(__name__)


class TableFilterProcessor(CacheForwarding, Processor[Any, Any]):
    """``KTable.filter`` / ``filter_not``, as Kafka's KTableFilter.

    An update failing the predicate is forwarded as a tombstone (the key leaves the filtered
    table), and an input tombstone is forwarded as is. When old values are sent (asked for
    downstream, or offered by a materialized parent: KTableFilter asks its parent with
    ``enableSendingOldValues(false)``), an update whose old and new filtered values are both
    None is dropped: the key was not in the filtered table and is still not. The predicate is
    never called on a tombstone.
    """

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool,
                 store_name: str | None, send_old: bool) -> None:
        self.predicate = predicate
        self.negate = negate
        self.store_name = store_name
        self.send_old = send_old
        self.store: Any = None
        # KIP-914: below a versioned table an update that was and stays filtered out is still
        # forwarded (Kafka's KTableFilter with useVersionedSemantics); set by the DSL
        self.versioned_semantics = False

    def init(self, context: Any) -> None:
        super().init(context)
        if self.store_name is not None:
            self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context, enable=self.store is not None)

    def _compute(self, key: Any, value: Any) -> Any:
        if value is None:
            return None
        return value if bool(self.predicate(key, value)) != self.negate else None

    def process(self, record: Record[Any, Any]) -> None:
        change: Change[Any] = record.value
        key = record.key
        new = self._compute(key, change.new)
        old = None
        if self.send_old:
            old = self.store.get(key) if self.store is not None else self._compute(key, change.old)
            if new is None and old is None and not self.versioned_semantics:
                return  # out of the filtered table before and after: nothing to say
        if self.store is not None:
            if self._put_cached(record, key, new, record.timestamp):
                return
            self.store.put(key, new, record.timestamp)
        self.context.forward(record.with_value(Change(new, old, change.is_latest)))


class TableMapValuesProcessor(CacheForwarding, Processor[Any, Any]):
    """``KTable.map_values``: tombstones pass through without calling the mapper."""

    def __init__(self, mapper: Callable[[Any], Any], store_name: str | None,
                 send_old: bool) -> None:
        self.mapper = mapper
        self.store_name = store_name
        self.send_old = send_old
        self.store: Any = None

    def init(self, context: Any) -> None:
        super().init(context)
        if self.store_name is not None:
            self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context, enable=self.store is not None)

    def _map(self, key: Any, value: Any) -> Any:
        """The user's mapper; the key-aware variant (processor/keyed.py) passes the key."""
        return self.mapper(value)

    def process(self, record: Record[Any, Any]) -> None:
        change: Change[Any] = record.value
        new = None if change.new is None else self._map(record.key, change.new)
        old = None
        if self.store is not None:
            if self._put_cached(record, record.key, new, record.timestamp):
                return
            if self.send_old:
                old = self.store.get(record.key)
            self.store.put(record.key, new, record.timestamp)
        elif self.send_old and change.old is not None:
            old = self._map(record.key, change.old)
        self.context.forward(record.with_value(Change(new, old, change.is_latest)))


class TableRepartitionMapProcessor(Processor[Any, Any]):
    """``KTable.group_by``: re-key each update for the repartition topic.

    The old value is subtracted under its old grouping key and the new value added under its
    new one. When both map to the same key the two travel as one ``Change(new, old)`` so the
    aggregate applies them as a single update (KIP-904); otherwise the subtract goes first.
    A mapped key of None is dropped.
    """

    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        change: Change[Any] = record.value
        if record.key is None or not change.is_latest:
            return  # KIP-914: an out-of-order update of a versioned table changes no group
        new_pair = None if change.new is None else self.mapper(record.key, change.new)
        old_pair = None if change.old is None else self.mapper(record.key, change.old)
        ts, headers = record.timestamp, record.headers
        forward = self.context.forward
        if new_pair is not None and old_pair is not None and new_pair[0] is not None \
                and new_pair[0] == old_pair[0]:
            forward(Record(new_pair[0], Change(new_pair[1], old_pair[1]), ts, headers))
            return
        if old_pair is not None and old_pair[0] is not None:
            forward(Record(old_pair[0], Change(None, old_pair[1]), ts, headers))
        if new_pair is not None and new_pair[0] is not None:
            forward(Record(new_pair[0], Change(new_pair[1], None), ts, headers))


class TableAggregateProcessor(CacheForwarding, Processor[Any, Any]):
    """``KGroupedTable.aggregate`` (count and reduce are built on it).

    Subtract the old value (if the aggregate exists), then add the new one, initializing when
    there is no aggregate; a None result deletes the key. ``initializer`` None means reduce:
    the first value becomes the aggregate. The output timestamp is the max of the record's and
    the previous aggregate's.
    """

    def __init__(self, store_name: str, initializer: Callable[[], Any] | None,
                 adder: Callable[[Any, Any, Any], Any],
                 subtractor: Callable[[Any, Any, Any], Any]) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context)

    def process(self, record: Record[Any, Any]) -> None:
        key = record.key
        change: Change[Any] = record.value
        if key is None or (change.new is None and change.old is None):
            log.debug("skipping a null key or empty change in %s", self.store_name)
            return
        found = self.store.get_with_timestamp(key)
        old_agg, timestamp = (None, record.timestamp) if found is None else found
        if found is not None:
            timestamp = max(record.timestamp, timestamp)
        agg = old_agg
        if change.old is not None and agg is not None:
            agg = self.subtractor(key, change.old, agg)
        if change.new is not None:
            if agg is None:
                agg = change.new if self.initializer is None else \
                    self.adder(key, change.new, self.initializer())
            else:
                agg = self.adder(key, change.new, agg)
        if self._put_cached(record, key, agg, timestamp):
            return
        self.store.put(key, agg, timestamp)
        self.context.forward(Record(key, Change(agg, old_agg), timestamp, record.headers))


class ChangeSerde(Serde[Change[Any]]):
    """Carries a ``Change`` through a ``KTable.group_by`` repartition topic.

    Layout: one flag byte (1 = new present, 2 = old present); with both, a 4-byte big-endian
    length of the new value's bytes, then new, then old; with one, just its bytes.
    """

    name = "change"
    _LEN = struct.Struct(">I")

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def to_bytes(self, value: Change[Any]) -> bytes:
        new = self.inner.serialize(None, value.new)
        old = self.inner.serialize(None, value.old)
        if new is not None and old is not None:
            return b"\x03" + self._LEN.pack(len(new)) + new + old
        if new is not None:
            return b"\x01" + new
        if old is not None:
            return b"\x02" + old
        return b"\x00"

    def from_bytes(self, data: bytes) -> Change[Any]:
        data = bytes(data)
        flags, body = data[0] if data else -1, data[1:]
        if flags == 3:
            size = self._LEN.unpack_from(body)[0]
            return Change(self.inner.deserialize(None, body[4:4 + size]),
                          self.inner.deserialize(None, body[4 + size:]))
        if flags == 1:
            return Change(self.inner.deserialize(None, body), None)
        if flags == 2:
            return Change(None, self.inner.deserialize(None, body))
        if flags == 0:
            return Change(None, None)
        raise SerializationError(f"not a table change record (flags {flags!r})")

    def __repr__(self) -> str:
        return f"ChangeSerde({self.inner!r})"
