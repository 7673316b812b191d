"""DSL wiring for versioned tables (KIP-889 / KIP-914) and the stream-table join grace
period (KIP-923).

A table is versioned when ``StreamsBuilder.table`` or ``KStream.to_table`` materializes it with
``Materialized.as_(Stores.persistent_versioned_key_value_store(name, history))``. A stream-table
join against such a table reads it as of each stream record's timestamp; with
``Joined.with_grace_period(ms)`` it first buffers the stream records in a store named
``<join name>-Buffer`` (changelogged like any store). A grace period against a table that is not
versioned is refused, as Kafka refuses it.

Not supported yet, and refused rather than answered differently: a stream-table join against a
table derived from a versioned one without a store of its own (``filter``/``map_values``), which
Kafka reads as of the record's time through value getters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.versioned_join import (
    VersionedStreamTableJoinProcessor,
    VersionedTableSourceProcessor,
)
from ..serde import Serde
from ..state.stores import StoreBuilder

if TYPE_CHECKING:
    from .kstream import KStream
    from .ktable import KTable


def is_versioned(table: KTable) -> bool:
    """Whether ``table``'s own store is a versioned one."""
    name = table.store_name
    if name is None:
        return False
    store = table.builder.topology.stores.get(name)
    return store is not None and store.kind == "versioned"


def versioned_upstream(table: KTable) -> bool:
    """Whether ``table`` is versioned or derives, store-less, from a versioned table (Kafka's
    ``isVersionedUpstream``)."""
    if is_versioned(table):
        return True
    return table.store_name is None and table.parent is not None \
        and versioned_upstream(table.parent)


def versioned_filter(processor: Any, versioned: bool) -> Any:
    """A ``KTable.filter`` processor below a versioned table keeps Kafka's versioned semantics
    (it forwards an update that was and stays filtered out)."""
    processor.versioned_semantics = versioned
    return processor


def table_source_supplier(store_name: str, versioned: bool) -> Callable[[], Any] | None:
    """The processor of a source table over a versioned store (None: the plain one)."""
    if not versioned:
        return None
    return lambda: VersionedTableSourceProcessor(store_name)


def versioned_stream_table_join(stream: KStream, table: KTable, store: str,
                                joiner: Callable[[Any, Any, Any], Any], left: bool,
                                join_name: str, grace_period_ms: int | None,
                                key_serde: Serde[Any] | None, value_serde: Serde[Any] | None
                                ) -> tuple[Callable[[], Any] | None, StoreBuilder | None]:
    """``(processor supplier, grace buffer)`` for a join against a versioned table, or
    ``(None, None)`` for a plain table (then a grace period is an error)."""
    if not is_versioned(table):
        if versioned_upstream(table):
            raise ValueError(f"{join_name}: joining a table derived from a versioned table "
                             "without a store of its own is not supported yet (Kafka reads it "
                             "as of the stream record's time); join the versioned table itself")
        if grace_period_ms is not None:
            raise ValueError(f"{join_name}: a grace period needs a versioned KTable "
                             "(Materialized.as_(Stores.persistent_versioned_key_value_store("
                             "...))); this table is not versioned")
        return None, None
    buffer_name = None
    buffer = None
    if grace_period_ms is not None:
        history = table.builder.topology.stores[store].retention_ms or 0
        if history < grace_period_ms:  # as Kafka refuses it: the buffer would outlive history
            raise ValueError(f"{join_name}: the table's history retention ({history} ms) must "
                             f"be at least the join's grace period ({grace_period_ms} ms)")
        buffer_name = f"{join_name}-Buffer"
        buffer = StoreBuilder(buffer_name, "join-buffer", key_serde or stream.key_serde,
                              value_serde or stream.value_serde, "rocksdb",
                              retention_ms=grace_period_ms)
    return (lambda: VersionedStreamTableJoinProcessor(store, joiner, left, buffer_name)), buffer
