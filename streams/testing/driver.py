"""``TopologyTestDriver``: run a topology without a broker, deterministically.

It drives the same ``StreamTask`` code as the runtime. Every topic is one partition; each
sub-topology is one task (``<id>_0``). What sinks write is captured per topic; records written
to a topic the topology itself reads (repartition topics, or a user topic read back) are fed
back in, the next one always from the topic whose head record has the lowest timestamp (as
Kafka's driver, whose one task picks across all its partitions). Like Kafka's driver it commits (flushes stores) after every input record and
has no emit throttling. The record cache is off unless ``statestore.cache.max.bytes`` (or the
older ``cache.max.bytes.buffering``) is set above 0; then the stores cache as in the runtime and
each commit forwards the latest change per key, so one input record's updates fold into one.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..processor.api import Headers, TaskId
from ..processor.task import InboundRecord, StreamTask, TaskConfig
from ..serde import Serde, Serdes, resolve_serde
from ..state.cache import CacheBudget
from ..state.stores import StoreInitContext
from ..topology.topology import Topology


class _QueuesByTime:
    """The driver's topic queues, the next record taken from the queue with the lowest head
    timestamp, as Kafka's one task does (``PartitionGroup.nonEmptyQueuesByTime``): a binary
    heap that breaks ties as ``java.util.PriorityQueue`` does (a queue offered again after
    its head was taken sinks below the queues of the same timestamp), so records of equal
    timestamps on a topic and a repartition topic interleave as in Kafka's driver."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[InboundRecord]] = {}
        self._heap: list[deque[InboundRecord]] = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def add(self, topic: str, record: InboundRecord) -> None:
        queue = self.queues.get(topic)
        if queue is None:
            queue = self.queues[topic] = deque()
        queue.append(record)
        if len(queue) == 1:
            self._offer(queue)

    def take(self) -> tuple[str, InboundRecord]:
        queue = self._poll()
        record = queue.popleft()
        if queue:
            self._offer(queue)
        return record.topic, record

    def _offer(self, queue: deque[InboundRecord]) -> None:  # PriorityQueue.siftUp
        heap = self._heap
        heap.append(queue)
        k, key = len(heap) - 1, queue[0].timestamp
        while k > 0:
            parent = (k - 1) >> 1
            if key >= heap[parent][0].timestamp:
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = queue

    def _poll(self) -> deque[InboundRecord]:  # PriorityQueue.poll / siftDown
        heap = self._heap
        result, last = heap[0], heap.pop()
        n = len(heap)
        if n:
            k, key, half = 0, last[0].timestamp, n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and heap[child][0].timestamp > heap[right][0].timestamp:
                    child = right
                if key <= heap[child][0].timestamp:
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return result


class NoSuchElementError(LookupError):
    """Reading from an output topic that holds no (more) records."""


class TestRecord:
    """A record as piped in or read out; equality covers key, value, timestamp and headers."""

    __slots__ = ("key", "value", "timestamp", "headers")
    __test__ = False  # not a pytest test class

    def __init__(self, key: Any, value: Any, timestamp: int | None = None,
                 headers: Iterable[tuple[str, bytes | None]] = ()) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = tuple(headers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TestRecord) and (
            self.key, self.value, self.timestamp, self.headers
        ) == (other.key, other.value, other.timestamp, other.headers)

    def __hash__(self) -> int:
        return hash((self.key, self.timestamp))

    def __repr__(self) -> str:
        headers = f", headers={self.headers!r}" if self.headers else ""
        return f"TestRecord({self.key!r}, {self.value!r}, {self.timestamp!r}{headers})"


@dataclass(slots=True)
class _Captured:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


class _DriverCollector:
    def __init__(self, driver: TopologyTestDriver) -> None:
        self.driver = driver

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Headers, partition: int | None) -> None:
        self.driver._capture(topic, _Captured(key, value, timestamp, headers))

    def partitions_for(self, topic: str) -> int:
        return 1


def _cache_budget(config: dict[str, Any]) -> CacheBudget | None:
    """The record cache the config asks for; none unless a size above 0 is set."""
    for key in ("statestore.cache.max.bytes", "cache.max.bytes.buffering"):
        value = config.get(key)
        if value is not None:
            size = int(value)
            if size < 0:
                raise ValueError(f"{key} must be >= 0, got {value!r}")
            return CacheBudget(size) if size > 0 else None
    return None


class TopologyTestDriver:
    __test__ = False

    def __init__(self, topology: Topology, config: dict[str, Any] | None = None,
                 initial_wall_clock_time: int = 0) -> None:
        config = dict(config or {})
        self.application_id = str(config.get("application.id") or f"test-{uuid.uuid4().hex[:8]}")
        self.topology = topology
        self.wall_clock_ms = int(initial_wall_clock_time)
        state_dir = config.get("state.dir")
        self._own_state_dir = state_dir is None
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="streams-ttd-"))
        key_default = resolve_serde(config.get("default.key.serde"))
        topology.check_key_serdes(key_default)  # a join's repartition key format, or fail
        value_default = resolve_serde(config.get("default.value.serde"))
        self.config = TaskConfig(
            application_id=self.application_id,
            default_key_serde=key_default or Serdes.bytes(),
            default_value_serde=value_default or Serdes.bytes(),
            internal_key_serde=key_default,
            internal_value_serde=value_default,
            state_dir=self.state_dir,
            app_config=config,  # exception handlers, DLQ topic, timestamp extractor
            cache=_cache_budget(config),
        )
        self._outputs: dict[str, deque[_Captured]] = {}
        self._produced: set[str] = set()
        self._offsets: dict[str, int] = {}
        self._pending = _QueuesByTime()
        collector = _DriverCollector(self)
        self.global_stores = self._build_global_stores()
        self.tasks: list[StreamTask] = []
        self._task_by_topic: dict[str, StreamTask] = {}
        for sub in topology.sub_topologies():
            task = StreamTask(TaskId(sub.id, 0), topology, sub, self.config, collector,
                              self._clock, self.global_stores)
            self.tasks.append(task)
            for topic in task.sources_by_topic:
                self._task_by_topic[topic] = task
        self.closed = False

    # -- plumbing -----------------------------------------------------------------------------

    def _clock(self) -> int:
        return self.wall_clock_ms

    def _build_global_stores(self) -> dict[str, Any]:
        stores: dict[str, Any] = {}
        self._global_processors: dict[str, tuple[Any, Any, Any]] = {}
        if not self.topology.global_stores:
            return stores
        from ..processor.global_task import GlobalStoreFeeder

        ctx = StoreInitContext(self.state_dir / self.application_id / "global",
                               lambda name: None, self.config.default_key_serde,
                               self.config.default_value_serde)
        self._global_feeder = GlobalStoreFeeder(self.topology, ctx, self.config, self._clock)
        return self._global_feeder.stores

    def _capture(self, topic: str, captured: _Captured) -> None:
        self._produced.add(topic)
        self._outputs.setdefault(topic, deque()).append(captured)
        if topic in self._task_by_topic or self._is_global_topic(topic):
            offset = self._offsets.get(topic, 0)
            self._offsets[topic] = offset + 1
            self._pending.add(topic, InboundRecord(topic, 0, offset, captured.key,
                                                   captured.value, captured.timestamp,
                                                   captured.headers))

    def _is_global_topic(self, topic: str) -> bool:
        return bool(self.topology.global_stores) and self._global_feeder.reads(topic)

    def _pipe(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
              headers: Headers) -> None:
        if self.closed:
            raise RuntimeError("the TopologyTestDriver is closed")
        resolved = self.topology.resolve_topic(topic, self.application_id)
        if resolved not in self._task_by_topic and not self._is_global_topic(resolved):
            raise ValueError(f"unknown topic {topic!r}: no source of this topology reads it")
        offset = self._offsets.get(resolved, 0)
        self._offsets[resolved] = offset + 1
        self._pending.add(resolved,
                          InboundRecord(resolved, 0, offset, key, value, timestamp, headers))
        self._drain()

    def _drain(self) -> None:
        """Process the piped record and everything it causes, committing after each record;
        the next record is the one with the lowest timestamp at the head of its topic (ties
        as in Kafka's driver, see _QueuesByTime)."""
        while self._pending:
            topic, inbound = self._pending.take()
            if self._is_global_topic(topic):
                self._global_feeder.process(inbound)
                continue
            task = self._task_by_topic[topic]
            task.process_record(inbound)
            task.flush()
            task.commit_stores({})

    # -- public API ---------------------------------------------------------------------------

    def create_input_topic(self, name: str, key_serde: Serde[Any] | None = None,
                           value_serde: Serde[Any] | None = None, start_timestamp: int = 0,
                           auto_advance: int = 0) -> TestInputTopic:
        return TestInputTopic(self, name, key_serde or self.config.default_key_serde,
                              value_serde or self.config.default_value_serde,
                              start_timestamp, auto_advance)

    def create_output_topic(self, name: str, key_serde: Serde[Any] | None = None,
                            value_serde: Serde[Any] | None = None) -> TestOutputTopic:
        return TestOutputTopic(self, self.topology.resolve_topic(name, self.application_id),
                               key_serde or self.config.default_key_serde,
                               value_serde or self.config.default_value_serde)

    def advance_wall_clock_time(self, ms: int) -> None:
        """Move the mocked wall clock, fire wall-clock punctuators, then commit."""
        if ms < 0:
            raise ValueError("wall-clock time cannot go backwards")
        self.wall_clock_ms += int(ms)
        for task in self.tasks:
            task.punctuate_wall_clock()
            self._drain()
            task.flush()
            task.commit_stores({})

    def get_state_store(self, name: str) -> Any:
        for task in self.tasks:
            if name in task.stores:
                return task.stores[name]
        if name in self.global_stores:
            return self.global_stores[name]
        raise KeyError(f"no state store named {name!r} in this topology")

    def get_key_value_store(self, name: str) -> Any:
        store = self.get_state_store(name)
        if getattr(store, "versioned", False):  # as Kafka's driver refuses it
            raise TypeError(f"store {name!r} is a versioned key-value store and should be "
                            "accessed via get_versioned_key_value_store()")
        return store

    def get_versioned_key_value_store(self, name: str) -> Any:
        """A versioned store (KIP-889): ``get(key)``, ``get(key, as_of_timestamp)``."""
        store = self.get_state_store(name)
        if not getattr(store, "versioned", False):
            raise TypeError(f"store {name!r} is not a versioned key-value store")
        return store

    def get_window_store(self, name: str) -> Any:
        return self.get_state_store(name)

    def get_session_store(self, name: str) -> Any:
        return self.get_state_store(name)

    def get_all_state_stores(self) -> dict[str, Any]:
        stores = dict(self.global_stores)
        for task in self.tasks:
            stores.update(task.stores)
        return stores

    def produced_topic_names(self) -> set[str]:
        return set(self._produced)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for task in self.tasks:
            task.flush()
            task.commit_stores({})
            task.close()
        if self.topology.global_stores:
            self._global_feeder.close()
        if self._own_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TestInputTopic:
    __test__ = False

    def __init__(self, driver: TopologyTestDriver, name: str, key_serde: Serde[Any],
                 value_serde: Serde[Any], start_timestamp: int, auto_advance: int) -> None:
        self.driver = driver
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.current_time = start_timestamp
        self.auto_advance = auto_advance

    def _timestamp(self, timestamp: int | None) -> int:
        if timestamp is not None:
            return int(timestamp)
        ts = self.current_time
        self.current_time += self.auto_advance
        return ts

    def pipe_input(self, key: Any, value: Any, timestamp: int | None = None,
                   headers: Iterable[tuple[str, bytes | None]] | None = None) -> None:
        self.driver._pipe(
            self.name,
            self.key_serde.serialize(self.name, key),
            self.value_serde.serialize(self.name, value),
            self._timestamp(timestamp),
            tuple(headers or ()),
        )

    def pipe_key_value_list(self, pairs: Iterable[tuple[Any, Any]],
                            start_timestamp: int | None = None, advance: int = 0) -> None:
        timestamp = start_timestamp
        for key, value in pairs:
            self.pipe_input(key, value, timestamp)
            if timestamp is not None:
                timestamp += advance

    def pipe_value_list(self, values: Iterable[Any]) -> None:
        for value in values:
            self.pipe_input(None, value)

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        for record in records:
            self.pipe_input(record.key, record.value, record.timestamp, record.headers)

    def advance_time(self, ms: int) -> None:
        """Move this topic's record-time generator (not stream time, not the wall clock)."""
        self.current_time += int(ms)


class TestOutputTopic:
    __test__ = False

    def __init__(self, driver: TopologyTestDriver, name: str, key_serde: Serde[Any],
                 value_serde: Serde[Any]) -> None:
        self.driver = driver
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde

    def _queue(self) -> deque[_Captured]:
        return self.driver._outputs.setdefault(self.name, deque())

    def read_record(self) -> TestRecord:
        queue = self._queue()
        if not queue:
            raise NoSuchElementError(f"output topic {self.name!r} is empty")
        captured = queue.popleft()
        return TestRecord(
            self.key_serde.deserialize(self.name, captured.key),
            self.value_serde.deserialize(self.name, captured.value),
            captured.timestamp,
            captured.headers,
        )

    def read_value(self) -> Any:
        return self.read_record().value

    def read_key_value(self) -> tuple[Any, Any]:
        record = self.read_record()
        return record.key, record.value

    def read_records_to_list(self) -> list[TestRecord]:
        out = []
        while self._queue():
            out.append(self.read_record())
        return out

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """Last value per key; a tombstoned key stays with a None value."""
        return dict(self.read_key_values_to_list())

    def get_queue_size(self) -> int:
        return len(self._queue())

    def is_empty(self) -> bool:
        return not self._queue()

