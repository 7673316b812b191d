"""Foreign-key join options: the extractor's two forms and ``TableJoined``'s partitioners.

Kafka 4.0 added ``(key, value) -> fk`` extractors beside ``(value) -> fk``; both are taken,
chosen by arity (arity.py), and the processors always call ``extractor(key, value)``.

``TableJoined.with_(partitioner, other_partitioner)`` (Kafka's): the subscription topic is
written with ``other_partitioner(topic, fk, None, partitions)`` so subscriptions land where the
right table's rows are when the right topic is partitioned by it; the response topic with
``partitioner(topic, left_key, None, partitions)`` so responses land on the left row's
partition. Both internal topics carry serialized keys, so the partitioners get the keys
deserialized with the tables' key serdes, which must then be given on the tables. A partitioner
that returns None leaves the choice to the default (the fk's hash for subscriptions, the left
row's own partition for responses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .arity import takes_key

if TYPE_CHECKING:
    from ..topology.topology import StreamPartitioner
    from .ktable import KTable


def keyed_extractor(extractor: Any, operator: str) -> Callable[[Any, Any], Any]:
    """``extractor`` as ``(key, value) -> fk`` whichever form it was given in."""
    if takes_key(extractor, operator, "foreign_key_extractor(value)",
                 "foreign_key_extractor(key, value)"):
        return extractor  # type: ignore[no-any-return]
    return lambda key, value: extractor(value)


def partitioners(left: KTable, right: KTable, table_joined: Any
                 ) -> tuple[StreamPartitioner | None, StreamPartitioner | None]:
    """``(subscription partitioner, response partitioner)`` from a ``TableJoined`` (None: the
    defaults)."""
    from .joined import TableJoined

    if table_joined is None:
        return None, None
    if not isinstance(table_joined, TableJoined):
        raise TypeError(f"table_joined takes a TableJoined, got {table_joined!r}")
    return (_typed(table_joined.other_partitioner, right, "other_partitioner", "right"),
            _typed(table_joined.partitioner, left, "partitioner", "left"))


def _typed(partitioner: StreamPartitioner | None, table: KTable, option: str, side: str
           ) -> StreamPartitioner | None:
    if partitioner is None:
        return None
    if not callable(partitioner):
        raise TypeError(f"TableJoined {option} must be a function (topic, key, value, "
                        f"partitions) -> partition, got {partitioner!r}")
    serde = table.key_serde
    if serde is None:
        raise ValueError(f"TableJoined {option} needs the {side} table's key serde: give "
                         "key_serde= where the table is defined")
    user = partitioner

    def partition(topic: str, key: Any, value: Any, partitions: int) -> int | None:
        if key is None:
            return None
        chosen = user(topic, serde.deserialize(topic, key), None, partitions)
        if chosen is None and side == "left":
            return value.primary_partition  # type: ignore[no-any-return]
        return chosen

    return partition
