"""``KTable`` and ``GlobalKTable``: changelog streams materialized as tables.

Between table processors values travel as ``Change(new, old)``; ``to_stream`` turns them back
into plain records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.aggregate import TableToStreamProcessor
from ..serde import Serde

if TYPE_CHECKING:
    from .builder import StreamsBuilder
    from .kstream import KStream


class KTable:
    def __init__(self, builder: StreamsBuilder, node: str, store_name: str | None,
                 key_serde: Serde[Any] | None, value_serde: Serde[Any] | None) -> None:
        self.builder = builder
        self.node = node
        self.store_name = store_name  # None: not materialized (not queryable)
        self.key_serde = key_serde
        self.value_serde = value_serde

    def queryable_store_name(self) -> str | None:
        return self.store_name

    def to_stream(self, mapper: Callable[[Any, Any], Any] | None = None) -> KStream:
        from .kstream import KStream

        name = self.builder.new_name("KTABLE-TOSTREAM")
        self.builder.topology.add_processor(name, lambda: TableToStreamProcessor(mapper),
                                            self.node)
        return KStream(self.builder, name, None if mapper else self.key_serde, self.value_serde,
                       repartition_required=mapper is not None)


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
