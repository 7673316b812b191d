"""Stateless DSL operators as processors: each wraps the user's function.

Predicates and key-value functions receive ``(key, value)``; value functions receive ``value``.
Every output keeps the input record's timestamp and headers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .api import Processor, Record


class FilterProcessor(Processor[Any, Any]):
    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def process(self, record: Record[Any, Any]) -> None:
        if bool(self.predicate(record.key, record.value)) != self.negate:
            self.context.forward(record)


class MapProcessor(Processor[Any, Any]):
    """``map``: fn(key, value) -> (new_key, new_value)."""

    def __init__(self, fn: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        key, value = self.fn(record.key, record.value)
        self.context.forward(Record(key, value, record.timestamp, record.headers))


class MapValuesProcessor(Processor[Any, Any]):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_value(self.fn(record.value)))


class FlatMapProcessor(Processor[Any, Any]):
    """``flat_map``: fn(key, value) -> iterable of (key, value)."""

    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        for key, value in self.fn(record.key, record.value) or ():
            self.context.forward(Record(key, value, record.timestamp, record.headers))


class FlatMapValuesProcessor(Processor[Any, Any]):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        for value in self.fn(record.value) or ():
            self.context.forward(record.with_value(value))


class SelectKeyProcessor(Processor[Any, Any]):
    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_key(self.fn(record.key, record.value)))


class PeekProcessor(Processor[Any, Any]):
    """``peek`` (forwards) and ``foreach`` (terminal): call fn(key, value)."""

    def __init__(self, fn: Callable[[Any, Any], Any], forward: bool = True) -> None:
        self.fn = fn
        self.forward = forward

    def process(self, record: Record[Any, Any]) -> None:
        self.fn(record.key, record.value)
        if self.forward:
            self.context.forward(record)


class PassThroughProcessor(Processor[Any, Any]):
    """``merge`` and branch heads: forward unchanged."""

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


class BranchProcessor(Processor[Any, Any]):
    """``split()``: each record goes to the first branch whose predicate matches."""

    def __init__(self, predicates: list[Callable[[Any, Any], bool]], children: list[str],
                 default_child: str | None) -> None:
        self.predicates = predicates
        self.children = children
        self.default_child = default_child

    def process(self, record: Record[Any, Any]) -> None:
        for predicate, child in zip(self.predicates, self.children, strict=True):
            if predicate(record.key, record.value):
                self.context.forward(record, child)
                return
        if self.default_child is not None:
            self.context.forward(record, self.default_child)


class DropNullKeyProcessor(Processor[Any, Any]):
    """Before a repartition topic: records with a null key cannot be routed and are dropped."""

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is not None:
            self.context.forward(record)
