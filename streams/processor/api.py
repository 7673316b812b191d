"""The Processor API: what a user-written processor sees.

Mirrors Kafka Streams' ``org.apache.kafka.streams.processor.api`` in snake_case: a ``Processor``
gets a ``ProcessorContext`` in ``init``, receives ``Record`` objects in ``process`` and passes
results on with ``context.forward``. The runtime and the TopologyTestDriver run the same code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

Headers = tuple[tuple[str, bytes | None], ...]


class Record(Generic[K, V]):
    """One record flowing through a topology. Small and slotted: the hot path makes many."""

    __slots__ = ("key", "value", "timestamp", "headers")

    def __init__(self, key: K, value: V, timestamp: int, headers: Headers = ()) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers

    def with_key(self, key: Any) -> Record[Any, V]:
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: Any) -> Record[K, Any]:
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record[K, V]:
        return Record(self.key, self.value, timestamp, self.headers)

    def with_headers(self, headers: Headers) -> Record[K, V]:
        return Record(self.key, self.value, self.timestamp, headers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and (
            self.key, self.value, self.timestamp, self.headers
        ) == (other.key, other.value, other.timestamp, other.headers)

    def __hash__(self) -> int:
        return hash((self.key, self.timestamp))

    def __repr__(self) -> str:
        return f"Record(key={self.key!r}, value={self.value!r}, timestamp={self.timestamp})"


class Change(Generic[V]):
    """A KTable update between table processors: the new value and the one it replaced.

    Subtractors in ``KTable.group_by`` aggregations need the old value; it never leaves the
    topology (sinks and ``to_stream`` see only ``new``).
    """

    __slots__ = ("new", "old", "is_latest")

    def __init__(self, new: V | None, old: V | None, is_latest: bool = True) -> None:
        self.new = new
        self.old = old
        # False for an out-of-order update of a versioned table (KIP-914): it changed the
        # table's history, not its latest value; joins and group_by ignore it.
        self.is_latest = is_latest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and (self.new, self.old) == (other.new, other.old)

    def __hash__(self) -> int:
        return hash((self.new, self.old))

    def __repr__(self) -> str:
        return f"Change(new={self.new!r}, old={self.old!r})"


class PunctuationType(enum.Enum):
    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable:
    """Handle returned by ``schedule``; ``cancel()`` stops the punctuator."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True, order=True)
class TaskId:
    """Sub-topology x partition, written ``<subtopology>_<partition>`` as in Kafka."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        sub, _, part = text.partition("_")
        return cls(int(sub), int(part))


class ProcessorContext:
    """What a processor may do: forward records, schedule punctuators, reach its stores."""

    application_id: str
    task_id: TaskId
    app_config: dict[str, Any]

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        raise NotImplementedError

    def schedule(
        self, interval_ms: int, punctuation_type: PunctuationType, callback: Callable[[int], None]
    ) -> Cancellable:
        raise NotImplementedError

    def get_state_store(self, name: str) -> Any:
        raise NotImplementedError

    def record_metadata(self) -> RecordMetadata | None:
        raise NotImplementedError

    def current_stream_time_ms(self) -> int:
        raise NotImplementedError

    def current_system_time_ms(self) -> int:
        raise NotImplementedError

    def commit(self) -> None:
        """Ask for a commit as soon as possible (the runtime decides when)."""
        raise NotImplementedError


class Processor(Generic[K, V]):
    """Subclass and override ``process``; ``init`` keeps the context as ``self.context``."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[K, V]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return None


ProcessorSupplier = Callable[[], Processor[Any, Any]]
