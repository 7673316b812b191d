"""``KTable`` and ``GlobalKTable``: changelog streams materialized as tables.

Between table processors values travel as ``Change(new, old)``; ``to_stream`` turns them back
into plain records. Filter and map_values send the replaced value only when a downstream
operator asked for it (``enable_sending_old_values``), as Kafka does; joins, foreign-key joins
and suppress live in their own modules and are reached through thin methods here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.aggregate import TableToStreamProcessor
from ..processor.keyed import TableMapValuesWithKeyProcessor
from ..processor.table import TableFilterProcessor, TableMapValuesProcessor
from ..serde import Serde
from .arity import check, takes_key
from .materialized import Materialized
from .versioned import versioned_filter, versioned_upstream

if TYPE_CHECKING:
    from .builder import StreamsBuilder
    from .grouped_table import KGroupedTable
    from .kstream import KStream


class KTable:
    def __init__(self, builder: StreamsBuilder, node: str, store_name: str | None,
                 key_serde: Serde[Any] | None, value_serde: Serde[Any] | None, *,
                 parent: KTable | None = None) -> None:
        self.builder = builder
        self.node = node
        self.store_name = store_name  # None: not materialized (not queryable)
        self.key_serde = key_serde
        self.value_serde = value_serde
        # The table this one derives from record by record (filter, map_values); a request
        # for old values travels up to it unless this table can read them from its own store.
        self.parent = parent
        # A primary-key join result's two inputs: old values asked of it are asked of both
        # (Kafka's KTableKTableJoinMerger/KTableKTableAbstractJoin#enableSendingOldValues)
        self.join_inputs: tuple[KTable, ...] = ()
        self.send_old_values = False
        # Whether Kafka answers enableSendingOldValues(false) with yes on this table's own
        # account: aggregation and join results do, sources and derived tables only when
        # materialized under a name (builder.table, to_table and _derive set it).
        self.offers_old_values = True
        # How a join reads this table when it has no store (streams/dsl/joins.py,
        # value_getter): ("derived", parent, step, maps_values) for filter/map_values,
        # ("join", left, right, joiner, kind) for a primary-key table-table join.
        self.getter_recipe: tuple[Any, ...] | None = None
        # Gives a table without a store one when old values or a value getter are asked of it
        # (Kafka's KTableSource.materialize(): an FK join result); None when it has nothing
        # to do
        self.materialize_hook: Callable[[], None] | None = None

    def queryable_store_name(self) -> str | None:
        return self.store_name

    def enable_sending_old_values(self) -> None:
        """Make this table's updates carry the value they replaced (``Change.old``)."""
        self.send_old_values = True
        self.materialize()
        if self.store_name is None and self.parent is not None:
            self.parent.enable_sending_old_values()
        for upstream in self.join_inputs:
            upstream.enable_sending_old_values()

    def materialize(self) -> None:
        """Give the table the store it lacks, if it is a kind Kafka materializes on demand."""
        hook, self.materialize_hook = self.materialize_hook, None
        if hook is not None:
            hook()

    def enable_sending_old_values_if_materialized(self) -> bool:
        """Kafka's ``enableSendingOldValues(false)``: send old values if that materializes
        nothing new, and say whether they are sent (KTable.filter asks its parent this)."""
        if not (self.send_old_values or self.offers_old_values or (
                self.parent is not None and self.parent.enable_sending_old_values_if_materialized())):
            return False
        self.enable_sending_old_values()
        return True

    # -- stateless table operators ------------------------------------------------------------

    def _derive(self, prefix: str, materialized: Materialized | str | None,
                make: Callable[[KTable, str | None], Any],
                value_serde: Serde[Any] | None,
                step: Callable[[Any, Any], Any] | None = None) -> KTable:
        """Add a record-by-record table operator, stored when ``materialized`` names a store.

        As Kafka's ``KTableImpl#doFilter/doMapValues``, a Materialized without a name gives
        the table its serdes but no store (a name is still spent from the counter)."""
        builder = self.builder
        mat = None if materialized is None else Materialized.of(materialized)
        store_name = None
        if mat is not None:
            store_name = mat.name
            if store_name is None:
                builder.new_store_name(f"{prefix}-")
        name = builder.new_name(prefix)
        key_serde = (mat.key_serde if mat else None) or self.key_serde
        value_serde = (mat.value_serde if mat else None) or value_serde
        table = KTable(builder, name, store_name, key_serde, value_serde, parent=self)
        table.offers_old_values = mat is not None and mat.name is not None
        if step is not None:  # (key, parent value) -> value, for joins reading it storeless
            table.getter_recipe = ("derived", self, step, value_serde is None)
        builder.topology.add_processor(name, lambda: make(table, store_name), self.node)
        if mat is not None and store_name is not None:
            # the store takes the Materialized's serdes, else the defaults, not the table's
            # (Kafka's KTableImpl#doFilter/doMapValues hand the MaterializedInternal as it is
            # to its KeyValueStoreMaterializer)
            builder.topology.add_state_store(
                builder.store_builder(store_name, mat, None, None), name)
        return table

    def filter(self, predicate: Callable[[Any, Any], bool],
               materialized: Materialized | str | None = None) -> KTable:
        check(predicate, "KTable.filter", "predicate(key, value)")
        versioned = versioned_upstream(self)
        parent_sends = self.enable_sending_old_values_if_materialized()
        return self._derive(
            "KTABLE-FILTER", materialized,
            lambda table, store: versioned_filter(
                TableFilterProcessor(predicate, False, store,
                                     table.send_old_values or parent_sends), versioned),
            self.value_serde, _filter_step(predicate, False))

    def filter_not(self, predicate: Callable[[Any, Any], bool],
                   materialized: Materialized | str | None = None) -> KTable:
        check(predicate, "KTable.filter_not", "predicate(key, value)")
        versioned = versioned_upstream(self)
        parent_sends = self.enable_sending_old_values_if_materialized()
        return self._derive(
            "KTABLE-FILTER", materialized,
            lambda table, store: versioned_filter(
                TableFilterProcessor(predicate, True, store,
                                     table.send_old_values or parent_sends), versioned),
            self.value_serde, _filter_step(predicate, True))

    def map_values(self, mapper: Callable[..., Any],
                   materialized: Materialized | str | None = None) -> KTable:
        """``mapper(value)``, or ``mapper(key, value)`` (Kafka's ValueMapperWithKey)."""
        keyed = takes_key(mapper, "KTable.map_values", "mapper(value)", "mapper(key, value)")
        processor = TableMapValuesWithKeyProcessor if keyed else TableMapValuesProcessor
        return self._derive(
            "KTABLE-MAPVALUES", materialized,
            lambda table, store: processor(mapper, store, table.send_old_values),
            None, (lambda k, v: mapper(k, v)) if keyed else (lambda k, v: mapper(v)))

    def to_stream(self, mapper: Callable[[Any, Any], Any] | None = None) -> KStream:
        check(mapper, "KTable.to_stream", "mapper(key, value)")
        from .kstream import KStream

        name = self.builder.new_name("KTABLE-TOSTREAM")
        self.builder.topology.add_processor(name, lambda: TableToStreamProcessor(mapper),
                                            self.node)
        return KStream(self.builder, name, None if mapper else self.key_serde, self.value_serde,
                       repartition_required=mapper is not None)

    # -- regrouping ---------------------------------------------------------------------------

    def group_by(self, fn: Callable[[Any, Any], tuple[Any, Any]], *,
                 key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None) -> KGroupedTable:
        """Re-key the table; always repartitions (subtract under the old key, add under the new)."""
        check(fn, "KTable.group_by", "selector(key, value)")
        from ..processor.table import TableRepartitionMapProcessor
        from .grouped_table import KGroupedTable

        self.enable_sending_old_values()
        name = self.builder.new_name("KTABLE-SELECT")
        self.builder.topology.add_processor(name, lambda: TableRepartitionMapProcessor(fn),
                                            self.node)
        return KGroupedTable(self.builder, name, key_serde, value_serde)

    # -- joins and suppress (implemented in joins.py, fk_join.py, suppress.py) -----------------

    def join(self, other: KTable, joiner: Callable[[Any, Any], Any],
             materialized: Materialized | str | None = None, *,
             foreign_key_extractor: Callable[..., Any] | None = None,
             table_joined: Any = None) -> KTable:
        """Primary-key join, or foreign-key join with ``foreign_key_extractor`` taking
        ``(value)`` or ``(key, value)`` and an optional ``TableJoined`` (dsl/joined.py)."""
        return self._table_join(other, joiner, "inner", materialized, foreign_key_extractor,
                                table_joined)

    def left_join(self, other: KTable, joiner: Callable[[Any, Any], Any],
                  materialized: Materialized | str | None = None, *,
                  foreign_key_extractor: Callable[..., Any] | None = None,
                  table_joined: Any = None) -> KTable:
        return self._table_join(other, joiner, "left", materialized, foreign_key_extractor,
                                table_joined)

    def outer_join(self, other: KTable, joiner: Callable[[Any, Any], Any],
                   materialized: Materialized | str | None = None) -> KTable:
        return self._table_join(other, joiner, "outer", materialized, None)

    def _table_join(self, other: KTable, joiner: Callable[[Any, Any], Any], kind: str,
                    materialized: Materialized | str | None,
                    foreign_key_extractor: Callable[..., Any] | None,
                    table_joined: Any = None) -> KTable:
        if not isinstance(other, KTable):
            raise TypeError(f"a KTable joins another KTable, got {type(other).__name__}")
        if table_joined is not None and foreign_key_extractor is None:
            raise TypeError("table_joined is for foreign-key joins (foreign_key_extractor=)")
        # Kafka's doJoinOnForeignKey asks both tables for old values; its primary-key doJoin
        # only the left of a left or outer join and the right of an outer join, so an inner
        # join's filtered input still forwards a delete it never let through (and the join a
        # tombstone for it), as Kafka's KTableFilter does without old values
        if foreign_key_extractor is not None or kind in ("left", "outer"):
            self.enable_sending_old_values()
        if foreign_key_extractor is not None or kind == "outer":
            other.enable_sending_old_values()
        if foreign_key_extractor is not None:
            from .fk_join import foreign_key_join

            return foreign_key_join(self, other, foreign_key_extractor, joiner, kind,
                                    materialized, table_joined=table_joined)
        from .joins import table_join

        return table_join(self, other, joiner, kind, materialized)

    def suppress(self, suppressed: Any) -> KTable:
        from .suppress import suppress_table
        from .versioned import versioned_upstream

        if versioned_upstream(self):  # as Kafka's TopologyException
            raise ValueError("suppress() is only supported for non-versioned KTables (note "
                             "that version semantics might be inherited from upstream)")

        return suppress_table(self, suppressed)


def _filter_step(predicate: Callable[[Any, Any], bool], negate: bool
                 ) -> Callable[[Any, Any], Any]:
    return lambda key, value: value if bool(predicate(key, value)) != negate else None


class GlobalKTable:
    """A table replicated in full to every instance; joined by ``KStream.join(..., key_selector=)``."""

    def __init__(self, builder: StreamsBuilder, store_name: str, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None) -> None:
        self.builder = builder
        self.store_name = store_name
        self.key_serde = key_serde
        self.value_serde = value_serde

    def queryable_store_name(self) -> str:
        return self.store_name
