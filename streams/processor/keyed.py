"""Key-aware value operators: Kafka's ``ValueMapperWithKey`` forms of ``map_values`` and
``flat_map_values`` (KStream and KTable). The DSL picks them when the user's function takes
``(key, value)`` instead of ``(value)`` (dsl/arity.py); the key is read-only, so nothing is
repartitioned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .api import Processor, Record
from .table import TableMapValuesProcessor


class MapValuesWithKeyProcessor(Processor[Any, Any]):
    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_value(self.fn(record.key, record.value)))


class FlatMapValuesWithKeyProcessor(Processor[Any, Any]):
    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def process(self, record: Record[Any, Any]) -> None:
        for value in self.fn(record.key, record.value) or ():
            self.context.forward(record.with_value(value))


class TableMapValuesWithKeyProcessor(TableMapValuesProcessor):
    """``KTable.map_values`` with ``mapper(key, value)``."""

    def _map(self, key: Any, value: Any) -> Any:
        return self.mapper(key, value)  # type: ignore[call-arg]
