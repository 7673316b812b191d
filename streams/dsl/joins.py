"""DSL wiring for joins: KStream-KStream (windowed), KStream-KTable, KStream-GlobalKTable and
KTable-KTable on the primary key (foreign-key joins are in ``fk_join.py``).

``KStream.join/left_join/outer_join`` call ``stream_join``; ``KTable.join/left_join/outer_join``
call ``table_join``. Node, store and topic names follow Kafka's generated names (reference §1.0,
§2). Stream sides are repartitioned only when marked; joined topics are declared co-partitioned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.joins import (
    JoinWindowProcessor,
    StreamStreamJoinProcessor,
    StreamTableJoinProcessor,
    TableJoinMergeProcessor,
    TableMaterializeProcessor,
    TableTableJoinProcessor,
    TimeTrackers,
)
from ..processor.stateless import PassThroughProcessor
from ..processor.value_getter import (
    DerivedGetter,
    JoinGetter,
    StoreGetter,
    SuppressGetter,
    ValueGetter,
)
from ..serde import Serde, Serdes
from ..state.stores import StoreBuilder
from ..topology.topology import SourceDef, Topology
from .arity import keyed_joiner
from .materialized import Materialized
from .windows import JoinWindows

if TYPE_CHECKING:
    from .kstream import KStream
    from .ktable import KTable

Joiner = Callable[[Any, Any], Any]

JOIN_KINDS = ("inner", "left", "outer")
_METHOD = {"inner": "join", "left": "left_join", "outer": "outer_join"}
_STREAM_JOIN_OPTIONS = frozenset({"name", "store_name", "key_serde", "value_serde",
                                  "other_value_serde", "store_type", "logging", "key_selector",
                                  "grace_period_ms"})


# -- shared helpers -----------------------------------------------------------------------------


def source_topics(topology: Topology, node: str) -> list[str]:
    """The topics feeding ``node`` within its sub-topology (for co-partition declarations)."""
    topics: list[str] = []
    seen: set[str] = set()
    stack = [node]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        defn = topology.nodes.get(name)
        if isinstance(defn, SourceDef):
            topics.extend(t for t in defn.topics if t not in topics)
        elif defn is not None:
            stack.extend(getattr(defn, "parents", []))
    return topics


def copartition(topology: Topology, *nodes: str, operator: str | None = None) -> None:
    """Declare the topics feeding ``nodes`` co-partitioned for ``operator`` (named in errors)."""
    topics: list[str] = []
    for node in nodes:
        topics.extend(t for t in source_topics(topology, node) if t not in topics)
    if len(topics) > 1:
        topology.copartition(*topics, operator=operator)


def table_view(table: KTable) -> tuple[str, str | ValueGetter]:
    """``(node, view)`` of ``table`` for a join that reads it: its store's name when it has
    one; for a table derived record by record (filter, map_values) or a table-table join
    without a store, a value getter that computes the value on demand from the stored
    ancestors (Kafka's value getters, streams/processor/value_getter.py); for anything else
    (a suppressed table) a store added after it.
    """
    table.materialize()
    if table.store_name is not None:
        # reading a table through its store is what makes Kafka's source tables queryable
        # (KTableSource.materialize()): from then on they offer old values to later operators
        table.offers_old_values = True
        return table.node, table.store_name
    getter = value_getter(table)
    if getter is not None:
        return table.node, getter
    return materialized_view(table)


def value_getter(table: KTable) -> ValueGetter | None:
    """The on-demand getter of a table without a store, or None when it has none."""
    if table.store_name is not None:
        return StoreGetter(table.store_name)
    recipe = table.getter_recipe
    if recipe is None:
        return None
    if recipe[0] == "suppress":
        _, parent, buffer = recipe
        parent_view = table_view(parent)[1]
        return SuppressGetter(StoreGetter(parent_view) if isinstance(parent_view, str)
                              else parent_view, buffer)
    if recipe[0] == "derived":
        _, parent, step, maps_values = recipe
        parent_view = table_view(parent)[1]
        parent_getter = StoreGetter(parent_view) if isinstance(parent_view, str) \
            else parent_view
        return DerivedGetter(parent_getter, step, table.value_serde if maps_values else None,
                             maps_values)
    _, left, right, joiner, kind = recipe
    views = [table_view(side)[1] for side in (left, right)]
    getters = [StoreGetter(v) if isinstance(v, str) else v for v in views]
    return JoinGetter(getters[0], getters[1], joiner, kind, table.value_serde)


def view_store_names(view: str | ValueGetter) -> tuple[str, ...]:
    return (view,) if isinstance(view, str) else view.store_names()


def materialized_view(table: KTable) -> tuple[str, str]:
    """``(node, store)`` of ``table``: its own store, or a store added after it for joins.

    Kafka reads non-materialized tables through value getters; here such a table gets a store
    named ``<node>-STATE-STORE`` (no counter value is spent, so later generated names still
    match Kafka's). The view is made once per table and shared by every join of it.
    """
    if table.store_name is not None:
        return table.node, table.store_name
    view: tuple[str, str] | None = getattr(table, "_join_view", None)
    if view is None:
        builder = table.builder
        node, store = f"{table.node}-MATERIALIZE", f"{table.node}-STATE-STORE"
        builder.topology.add_processor(node, lambda: TableMaterializeProcessor(store),
                                       table.node)
        builder.topology.add_state_store(
            builder.store_builder(store, Materialized(), table.key_serde, table.value_serde),
            node)
        view = (node, store)
        table._join_view = view  # type: ignore[attr-defined]
    return view


def _reverse(joiner: Joiner) -> Joiner:
    return lambda this, other: joiner(other, this)


# -- KStream joins ------------------------------------------------------------------------------


def stream_join(stream: KStream, other: Any, joiner: Joiner, windows: Any, kind: str,
                **kwargs: Any) -> KStream:
    """``KStream.join/left_join/outer_join``: dispatch on what ``other`` is.

    Options (Kafka's ``StreamJoined``/``Joined`` in keyword form): ``name``, ``key_serde``,
    ``value_serde``, ``other_value_serde``, and for stream-stream joins ``store_name``,
    ``store_type``, ``logging``; a global-table join needs ``key_selector=(key, value) -> key``.
    """
    from .joined import Joined
    from .kstream import KStream
    from .ktable import GlobalKTable, KTable

    if isinstance(windows, Joined):  # Kafka's join(table, joiner, joined)
        windows, kwargs = None, {**windows.options(), **kwargs}
    joined = kwargs.pop("joined", None)
    if joined is not None:
        if not isinstance(joined, Joined):
            raise TypeError(f"joined= takes a Joined, got {joined!r}")
        kwargs = {**joined.options(), **kwargs}
    unknown = set(kwargs) - _STREAM_JOIN_OPTIONS
    if unknown:
        raise TypeError(f"unknown join option(s) {sorted(unknown)}; "
                        f"allowed: {sorted(_STREAM_JOIN_OPTIONS)}")
    if kind not in JOIN_KINDS:
        raise ValueError(f"join kind must be one of {JOIN_KINDS}, got {kind!r}")
    # stream joins call joiner(key, left, right): Kafka's ValueJoinerWithKey (arity.py)
    joiner = keyed_joiner(joiner, f"KStream.{_METHOD[kind]}")
    if isinstance(other, KStream):
        if not isinstance(windows, JoinWindows):
            raise TypeError("a stream-stream join needs JoinWindows, e.g. "
                            "JoinWindows.of_time_difference_with_no_grace(1000)")
        if "key_selector" in kwargs:
            raise TypeError("key_selector is only for joins with a GlobalKTable")
        if "grace_period_ms" in kwargs:
            raise TypeError("a stream-stream join takes its grace from JoinWindows, not Joined")
        return _stream_stream_join(stream, other, joiner, windows, kind, **kwargs)
    if windows is not None:
        raise TypeError("only stream-stream joins take JoinWindows")
    if kind == "outer":
        raise TypeError(f"a KStream cannot be outer-joined with a {type(other).__name__} "
                        "(Kafka supports join and left_join only)")
    if isinstance(other, GlobalKTable):
        if "grace_period_ms" in kwargs:
            raise TypeError("a grace period is for joins with a versioned KTable, not a "
                            "GlobalKTable")
        return _global_table_join(stream, other, joiner, kind == "left", **kwargs)
    if isinstance(other, KTable):
        if "key_selector" in kwargs:
            raise TypeError("key_selector is only for joins with a GlobalKTable")
        return _stream_table_join(stream, other, joiner, kind == "left", **kwargs)
    raise TypeError(f"cannot join a KStream with {type(other).__name__}")


def _stream_table_join(stream: KStream, table: KTable, joiner: Joiner, left: bool, *,
                       name: str | None = None, key_serde: Serde[Any] | None = None,
                       value_serde: Serde[Any] | None = None,
                       other_value_serde: Serde[Any] | None = None,
                       grace_period_ms: int | None = None) -> KStream:
    """Only the stream triggers; the table's store is read. Output ts = the stream record's.
    A versioned table is read as of the stream record's time, after a grace period if one is
    given (versioned.py).

    A re-keyed stream is repartitioned with the join's ``key_serde``, else its own, else the
    table's: the repartition topic must hold the table topic's key bytes so that the default
    partitioner puts each record on the partition of its table row (see
    topology/copartition.py for the ``default.key.serde`` fallback and the build-time error).
    """
    from .kstream import KStream

    builder = stream.builder
    topology = builder.topology
    if stream.repartition_required:
        stream = stream.repartition_for_join(name or stream.node,
                                        key_serde or stream.key_serde or table.key_serde,
                                        value_serde)
    table_node, store = table_view(table)
    join_name = name or builder.new_name("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN")
    from .versioned import versioned_stream_table_join  # KIP-914 / KIP-923

    supplier, buffer = versioned_stream_table_join(stream, table, store, joiner, left,
                                                   join_name, grace_period_ms, key_serde,
                                                   value_serde)
    topology.add_processor(
        join_name, supplier or (lambda: StreamTableJoinProcessor(store, joiner, left)),
        stream.node)
    if buffer is not None:
        topology.add_state_store(buffer, join_name)
    topology.connect_processor_and_state_stores(join_name, *view_store_names(store),
                                                read_only=True)
    copartition(topology, stream.node, table_node, operator=join_name)
    return KStream(builder, join_name, key_serde or stream.key_serde, None, False)


def _global_table_join(stream: KStream, table: Any, joiner: Joiner, left: bool, *,
                       key_selector: Callable[[Any, Any], Any] | None = None,
                       name: str | None = None, key_serde: Serde[Any] | None = None,
                       value_serde: Serde[Any] | None = None,
                       other_value_serde: Serde[Any] | None = None) -> KStream:
    """A lookup by ``key_selector(key, value)`` in the global store; never repartitions."""
    from .kstream import KStream

    if key_selector is None:
        raise TypeError("a join with a GlobalKTable needs key_selector=(key, value) -> table key")
    builder = stream.builder
    # Kafka names global-table joins KSTREAM-LEFTJOIN for inner joins too.
    join_name = name or builder.new_name("KSTREAM-LEFTJOIN")
    store = table.store_name
    builder.topology.add_processor(
        join_name, lambda: StreamTableJoinProcessor(store, joiner, left, key_selector),
        stream.node)
    return KStream(builder, join_name, stream.key_serde, None, stream.repartition_required)


def _stream_stream_join(stream: KStream, other: KStream, joiner: Joiner, windows: JoinWindows,
                        kind: str, *, name: str | None = None, store_name: str | None = None,
                        key_serde: Serde[Any] | None = None,
                        value_serde: Serde[Any] | None = None,
                        other_value_serde: Serde[Any] | None = None,
                        store_type: str = "rocksdb", logging: bool = True) -> KStream:
    """Windowed join: each side buffers in a window store, either side triggers (§2.1).

    A re-keyed side is repartitioned with the join's ``key_serde``, else its own, else the
    other side's, so that both topics hold the same key bytes (co-partitioning).
    """
    from .kstream import KStream

    builder = stream.builder
    topology = builder.topology
    left, right = stream, other
    if left.repartition_required:
        left = left.repartition_for_join(f"{name}-left" if name else left.node,
                                    key_serde or left.key_serde or right.key_serde,
                                    value_serde)
    if right.repartition_required:
        right = right.repartition_for_join(f"{name}-right" if name else right.node,
                                      key_serde or right.key_serde or stream.key_serde,
                                      other_value_serde)
    left_outer, right_outer = kind in ("left", "outer"), kind == "outer"
    this_suffix = "-outer-this-join" if right_outer else "-this-join"
    other_suffix = "-outer-other-join" if left_outer else "-other-join"

    this_windowed = f"{name}-this-windowed" if name else builder.new_name("KSTREAM-WINDOWED")
    other_windowed = f"{name}-other-windowed" if name else builder.new_name("KSTREAM-WINDOWED")
    this_prefix = "KSTREAM-OUTERTHIS" if right_outer else "KSTREAM-JOINTHIS"
    this_generated = builder.new_name(this_prefix)
    other_generated = builder.new_name("KSTREAM-OUTEROTHER" if left_outer
                                       else "KSTREAM-JOINOTHER")
    this_name = name + this_suffix if name else this_generated
    other_name = name + other_suffix if name else other_generated
    merge_name = f"{name}-merge" if name else builder.new_name("KSTREAM-MERGE")

    this_store = (store_name + this_suffix if store_name else this_generated) + "-store"
    other_store = (store_name + other_suffix if store_name else other_generated) + "-store"
    outer_store = None
    if left_outer and windows.enable_spurious_result_fix:
        shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
        base = (store_name + shared_suffix if store_name else
                "KSTREAM-OUTERSHARED" + this_generated[len(this_prefix):])
        outer_store = base + "-store"

    key_serde = key_serde or left.key_serde
    size = windows.size()
    retention = size + windows.grace_ms

    def window_store(store: str, values: Serde[Any] | None) -> StoreBuilder:
        # Retains duplicates, so its changelog must not be compacted (Kafka: cleanup=delete).
        return StoreBuilder(store, "window", key_serde, values, store_type, logging=logging,
                            retention_ms=retention, window_size_ms=size, retain_duplicates=True,
                            changelog_config={"cleanup.policy": "delete"})

    trackers = TimeTrackers()
    # a join of a stream with itself: topology.optimization=all makes it Kafka's self-join
    # (single.store.self.join, KIP-862) over this side's store; optimize.py sets the flag
    self_join = [False]
    if left.node == right.node:
        builder.self_joins.append((self_join, this_name, this_store))

    this_values = value_serde or left.value_serde
    other_values = other_value_serde or right.value_serde

    def side(is_left: bool) -> StreamStreamJoinProcessor:
        return StreamStreamJoinProcessor(
            is_left=is_left,
            other_store_name=other_store if is_left else this_store,
            this_value_serde=this_values if is_left else other_values,
            outer_store_name=outer_store,
            joiner=joiner,
            outer=left_outer if is_left else right_outer,
            before_ms=windows.before_ms if is_left else windows.after_ms,
            after_ms=windows.after_ms if is_left else windows.before_ms,
            windows_before_ms=windows.before_ms,
            windows_after_ms=windows.after_ms,
            grace_ms=windows.grace_ms,
            trackers=trackers,
            self_join_store=this_store if self_join[0] else None,
            retention_ms=retention,
        )

    topology.add_processor(this_windowed, lambda: JoinWindowProcessor(this_store), left.node)
    topology.add_state_store(window_store(this_store, this_values), this_windowed)
    topology.add_processor(other_windowed, lambda: JoinWindowProcessor(other_store), right.node)
    topology.add_state_store(window_store(other_store, other_values), other_windowed)
    topology.add_processor(this_name, lambda: side(True), this_windowed)
    topology.add_processor(other_name, lambda: side(False), other_windowed)
    topology.connect_processor_and_state_stores(this_name, other_store)
    topology.connect_processor_and_state_stores(other_name, this_store)
    if outer_store is not None:
        topology.add_state_store(
            StoreBuilder(outer_store, "kv", Serdes.bytes(), Serdes.bytes(), store_type,
                         logging=logging, timestamped=False),
            this_name, other_name)
    topology.add_processor(merge_name, PassThroughProcessor, this_name, other_name)
    copartition(topology, left.node, right.node, operator=this_name)
    return KStream(builder, merge_name, key_serde, None, False)


# -- KTable-KTable (primary key) ----------------------------------------------------------------


def table_join(left: KTable, right: KTable, joiner: Joiner, kind: str,
               materialized: Materialized | str | None = None, *,
               name: str | None = None) -> KTable:
    """Primary-key table-table join (reference §2.3); returns the result table.

    Either side's update triggers; results travel as ``Change(new, old)`` with timestamp
    max(left, right) while the other side has a value. ``materialized`` stores the result
    (queryable). Both inputs are read through their stores (materialized if needed). No
    repartitioning: the two tables' topics are declared co-partitioned.
    """
    from .ktable import KTable

    if kind not in JOIN_KINDS:
        raise ValueError(f"table join kind must be one of {JOIN_KINDS}, got {kind!r}")
    if not isinstance(right, KTable):
        raise TypeError(f"a KTable joins another KTable, got {type(right).__name__}")
    builder = left.builder
    topology = builder.topology
    mat = None if materialized is None else Materialized.of(materialized)
    store = None
    if mat is not None:
        store = mat.name or builder.new_store_name("KTABLE-MERGE-")
    left_node, left_store = table_view(left)
    right_node, right_store = table_view(right)
    merge_name = name or builder.new_name("KTABLE-MERGE")
    this_name = f"{name}-join-this" if name else builder.new_name("KTABLE-JOINTHIS")
    other_name = f"{name}-join-other" if name else builder.new_name("KTABLE-JOINOTHER")
    key_serde = (mat.key_serde if mat else None) or left.key_serde
    value_serde = mat.value_serde if mat else None
    result = KTable(builder, merge_name, store, key_serde, value_serde)
    result.getter_recipe = ("join", left, right, joiner, kind)
    result.join_inputs = (left, right)
    this_mode, other_mode = {"inner": ("inner", "inner"), "left": ("left", "right"),
                             "outer": ("outer", "outer")}[kind]
    reverse = _reverse(joiner)

    def send_old() -> bool:
        return result.send_old_values

    topology.add_processor(
        this_name, lambda: TableTableJoinProcessor(right_store, joiner, this_mode, send_old),
        left_node)
    topology.connect_processor_and_state_stores(this_name, *view_store_names(right_store),
                                                read_only=True)
    topology.add_processor(
        other_name, lambda: TableTableJoinProcessor(left_store, reverse, other_mode, send_old),
        right_node)
    topology.connect_processor_and_state_stores(other_name, *view_store_names(left_store),
                                                read_only=True)
    topology.add_processor(merge_name, lambda: TableJoinMergeProcessor(store), this_name,
                           other_name)
    if mat is not None and store is not None:
        topology.add_state_store(builder.store_builder(store, mat, key_serde, value_serde),
                                 merge_name)
    copartition(topology, left_node, right_node, operator=merge_name)
    return result
