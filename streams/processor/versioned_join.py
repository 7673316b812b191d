"""Versioned tables in the DSL (KIP-914) and the stream-table join grace period (KIP-923).

``VersionedTableSourceProcessor`` is ``StreamsBuilder.table`` / ``KStream.to_table`` over a
versioned store (streams/state/versioned.py), as Kafka's ``KTableSource``: every update is put
into the store; one older than the store's grace (= its history retention) is dropped and
forwarded nowhere; an out-of-order one (older than the key's latest version) changes only the
history and is forwarded as ``Change(new, latest, is_latest=False)``, which ``to_stream`` still
emits but table-table joins, foreign-key joins and ``group_by`` ignore.

``VersionedStreamTableJoinProcessor`` joins each stream record with the table's value *as of
the stream record's timestamp* (``get(key, timestamp)``), as Kafka's
``KStreamKTableJoinProcessor`` does when the table's value getter is versioned. With a grace
period (``Joined.with_grace_period``) the stream records wait in a time-ordered buffer
(streams/state/join_buffer.py) until the buffer's stream time passes their timestamp plus the
grace, so that table updates arriving late but within the grace are seen; a record that is
already older than that bound is joined at once. Evicted records are joined with their own
timestamp and headers, oldest first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..state.versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED
from .api import Change, Processor, ProcessorContext, Record
from .joins import StreamTableJoinProcessor

log = logging.getLogger(__name__)

KeyedJoiner = Callable[[Any, Any, Any], Any]


class VersionedTableSourceProcessor(Processor[Any, Any]):
    """A source table materialized in a versioned store; see the module docstring."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        key = record.key
        if key is None:
            log.debug("versioned table %s: dropping a record with a null key", self.store_name)
            return
        latest = self.store.get(key)
        code = self.store.put(key, record.value, record.timestamp)
        if code == PUT_RETURN_CODE_NOT_PUT:
            log.warning("versioned table %s: skipping an update older than the history "
                        "retention (timestamp %d)", self.store_name, record.timestamp)
            return
        old = None if latest is None else latest.value
        self.context.forward(record.with_value(
            Change(record.value, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))


class VersionedStreamTableJoinProcessor(StreamTableJoinProcessor):
    """``KStream.join/left_join(versioned KTable)``, with an optional grace buffer: the
    stream-table join (joins.py) with an as-of lookup and records waiting in the buffer."""

    def __init__(self, store_name: str, joiner: KeyedJoiner, left: bool,
                 buffer_name: str | None = None) -> None:
        super().__init__(store_name, joiner, left)
        self.buffer_name = buffer_name
        self.buffer: Any = None

    def init(self, context: ProcessorContext) -> None:
        Processor.init(self, context)  # the versioned store itself, not a value getter
        self.store = context.get_state_store(self.store_name)
        if self.buffer_name is not None:
            self.buffer = context.get_state_store(self.buffer_name)

    def process(self, record: Record[Any, Any]) -> None:
        if not self._joinable(record):
            return
        key, buffer = record.key, self.buffer
        # A null key (left join, KIP-962) joins with None at once: it has nothing to wait for.
        if buffer is None or key is None or not buffer.put(key, record.value, record.timestamp,
                                                            record.headers):
            self._join(record)
            return
        for b_key, b_value, timestamp, headers in buffer.evict():
            self._join(Record(b_key, b_value, timestamp, headers))

    def _lookup(self, record: Record[Any, Any]) -> Any:
        if record.key is None:
            return None
        found = self.store.get(record.key, record.timestamp)
        return None if found is None else found.value
