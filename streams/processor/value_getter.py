"""Reading a table's current value by key when the table has no store of its own (Kafka's
``KTableValueGetterSupplier``).

A join that reads a derived table (``filter``, ``map_values``, a table-table join) without a
store computes the value on demand from the nearest stored ancestor: the ancestor's store, then
the derivation steps down to the table. A store of the derived table's own, filled only by the
changes it forwards, would miss what it never forwards (a filter that sends no old values, an
inner join whose other side is absent) and hold values its serde cannot write. The DSL
(streams/dsl/joins.py) builds a getter per table; processors receive either a store name or a
getter and ``bind_view`` both to something with ``get``, ``get_with_timestamp``,
``key_serde`` and ``value_serde``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..serde import Serde


class ValueGetter:
    """A recipe, bound per task in a processor's ``init``."""

    name: str  # the root store's name (log lines, serde topic names)

    def store_names(self) -> tuple[str, ...]:
        raise NotImplementedError

    def bind(self, context: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class StoreGetter(ValueGetter):
    """A table with a store: the store itself."""

    name: str

    def store_names(self) -> tuple[str, ...]:
        return (self.name,)

    def bind(self, context: Any) -> Any:
        return context.get_state_store(self.name)


@dataclass(frozen=True, eq=False)
class DerivedGetter(ValueGetter):
    """``step(key, parent_value) -> value or None`` applied to the parent's value (a filter
    returns the value or None, map_values the mapped value); None parents stay None."""

    parent: ValueGetter
    step: Callable[[Any, Any], Any]
    value_serde: Serde[Any] | None = None  # None: the parent's (a filter keeps its values)
    maps_values: bool = False  # a mapped table without a serde of its own uses the default

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.parent.name

    def store_names(self) -> tuple[str, ...]:
        return self.parent.store_names()

    def bind(self, context: Any) -> Any:
        parent = self.parent.bind(context)
        serde = self.value_serde
        if serde is None:
            if self.maps_values:
                from .joins import internal_value_serde
                serde = internal_value_serde(None, context.app_config or {})
            else:
                serde = parent.value_serde
        return _DerivedView(parent, self.step, serde)


class _DerivedView:
    def __init__(self, parent: Any, step: Callable[[Any, Any], Any],
                 value_serde: Serde[Any]) -> None:
        self.parent = parent
        self.step = step
        self.key_serde = parent.key_serde
        self.value_serde = value_serde

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        found = self.parent.get_with_timestamp(key)
        if found is None or found[0] is None:
            return None
        value = self.step(key, found[0])
        return None if value is None else (value, found[1])

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found[0]


@dataclass(frozen=True, eq=False)
class JoinGetter(ValueGetter):
    """A primary-key table-table join's result, joined on demand from both sides' getters
    (Kafka's KTableKTable{Inner,Left,Outer}Join value getters); timestamp max of both."""

    left: ValueGetter
    right: ValueGetter
    joiner: Callable[[Any, Any], Any]
    kind: str  # inner | left | outer
    value_serde: Serde[Any] | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.left.name

    def store_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.left.store_names() + self.right.store_names()))

    def bind(self, context: Any) -> Any:
        from .joins import internal_value_serde

        return _JoinView(self.left.bind(context), self.right.bind(context), self.joiner,
                         self.kind, internal_value_serde(self.value_serde,
                                                         context.app_config or {}))


class _JoinView:
    def __init__(self, left: Any, right: Any, joiner: Callable[[Any, Any], Any], kind: str,
                 value_serde: Serde[Any]) -> None:
        self.left, self.right, self.joiner, self.kind = left, right, joiner, kind
        self.key_serde = left.key_serde
        self.value_serde = value_serde

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        left = self.left.get_with_timestamp(key)
        if left is None and self.kind != "outer":
            return None
        right = self.right.get_with_timestamp(key)
        if right is None and (self.kind == "inner" or left is None):
            return None
        times = [found[1] for found in (left, right) if found is not None]
        value = self.joiner(None if left is None else left[0],
                            None if right is None else right[0])
        return value, max(times)

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found[0]


@dataclass(frozen=True, eq=False)
class SuppressGetter(ValueGetter):
    """A suppressed table: for a key waiting in the buffer, the value downstream last saw
    (the value from before buffering began), else the parent's value (Kafka's
    KTableSuppressProcessorSupplier view, ``priorValueForBuffered``)."""

    parent: ValueGetter
    buffer: str  # the suppression buffer store

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.parent.name

    def store_names(self) -> tuple[str, ...]:
        return (*self.parent.store_names(), self.buffer)

    def bind(self, context: Any) -> Any:
        return _SuppressView(self.parent.bind(context), context.get_state_store(self.buffer))


class _SuppressView:
    def __init__(self, parent: Any, buffer: Any) -> None:
        self.parent = parent
        self.buffer = buffer
        self.key_serde = parent.key_serde
        self.value_serde = parent.value_serde

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        buffer = self.buffer
        entry = buffer.entries.get(buffer.key_serde.serialize(buffer.name, key))
        if entry is not None:
            return None if entry.old is None else (entry.old, entry.timestamp)
        return self.parent.get_with_timestamp(key)

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found[0]


def bind_view(context: Any, view: str | ValueGetter) -> Any:
    """A store name or a getter, ready to read in this task."""
    return context.get_state_store(view) if isinstance(view, str) else view.bind(context)


def view_name(view: str | ValueGetter) -> str:
    return view if isinstance(view, str) else view.name
