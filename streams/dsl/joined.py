"""``Joined`` (stream-table joins) and ``TableJoined`` (foreign-key joins): Kafka's option
objects, immutable, built with ``with_*`` calls that return a new object.

``Joined`` carries what the keyword options of ``KStream.join`` carry (``key_serde``,
``value_serde``, ``other_value_serde``, ``name``) plus the grace period of KIP-923: a join with a
grace period against a versioned table buffers stream records until stream time passes their
timestamp plus the grace (streams/processor/versioned_join.py). ``Joined.with_grace_period(ms)``
works on the class, as in Kafka's examples, and on an instance.

``TableJoined`` names a foreign-key join and gives the partitioners of both tables: ``partitioner``
(the left table's, ``(topic, key, value, partitions) -> partition``) routes subscription
responses back to the left rows, ``other_partitioner`` (the right table's) routes subscriptions
to the right rows. Each is called with the table's typed key and ``None`` as the value, as
Kafka calls it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from ..serde import Serde
from ..topology.topology import StreamPartitioner
from .materialized import Duration, to_ms


class _class_or_instance:
    """A ``with_*`` method that also works on the class (starting from the defaults)."""

    def __init__(self, method: Any) -> None:
        self.method = method
        functools.update_wrapper(self, method)  # type: ignore[arg-type]

    def __get__(self, instance: Any, owner: type) -> Any:
        return functools.partial(self.method, instance if instance is not None else owner())


@dataclass(frozen=True)
class Joined:
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    other_value_serde: Serde[Any] | None = None
    name: str | None = None
    grace_period_ms: int | None = None

    @staticmethod
    def with_(key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None,
              other_value_serde: Serde[Any] | None = None) -> Joined:
        return Joined(key_serde, value_serde, other_value_serde)

    @staticmethod
    def as_(name: str) -> Joined:
        return Joined(name=name)

    @_class_or_instance
    def with_key_serde(self, key_serde: Serde[Any]) -> Joined:
        return replace(self, key_serde=key_serde)

    @_class_or_instance
    def with_value_serde(self, value_serde: Serde[Any]) -> Joined:
        return replace(self, value_serde=value_serde)

    @_class_or_instance
    def with_other_value_serde(self, other_value_serde: Serde[Any]) -> Joined:
        return replace(self, other_value_serde=other_value_serde)

    @_class_or_instance
    def with_name(self, name: str) -> Joined:
        return replace(self, name=name)

    @_class_or_instance
    def with_grace_period(self, grace: Duration) -> Joined:
        """KIP-923: buffer stream records this long (the table must be versioned)."""
        ms = to_ms(grace)
        assert ms is not None
        if ms < 0:
            raise ValueError(f"Joined grace period must be >= 0 ms, got {ms}")
        return replace(self, grace_period_ms=ms)

    def options(self) -> dict[str, Any]:
        """The keyword options of ``KStream.join`` this stands for (unset ones left out)."""
        out = {"key_serde": self.key_serde, "value_serde": self.value_serde,
               "other_value_serde": self.other_value_serde, "name": self.name,
               "grace_period_ms": self.grace_period_ms}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class TableJoined:
    partitioner: StreamPartitioner | None = None
    other_partitioner: StreamPartitioner | None = None
    name: str | None = None

    @staticmethod
    def with_(partitioner: StreamPartitioner | None,
              other_partitioner: StreamPartitioner | None) -> TableJoined:
        return TableJoined(partitioner, other_partitioner)

    @staticmethod
    def as_(name: str) -> TableJoined:
        return TableJoined(name=name)

    @_class_or_instance
    def with_partitioner(self, partitioner: StreamPartitioner | None) -> TableJoined:
        return replace(self, partitioner=partitioner)

    @_class_or_instance
    def with_other_partitioner(self, other_partitioner: StreamPartitioner | None
                               ) -> TableJoined:
        return replace(self, other_partitioner=other_partitioner)

    @_class_or_instance
    def with_name(self, name: str) -> TableJoined:
        return replace(self, name=name)
