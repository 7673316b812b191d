"""A stream task: one sub-topology instantiated for one partition.

The runtime and the TopologyTestDriver both drive this class; only the edges differ (how
records arrive, and the ``RecordCollector`` that takes what sinks and changelogs produce). The
hot path is synchronous: pick the queued record with the lowest timestamp, push it depth-first
through the nodes, advance stream time, fire due stream-time punctuators.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..serde import InternalSerde, Serde
from ..state.cache import CacheBudget
from ..state.stores import StoreInitContext
from . import commit_metadata
from .api import (
    Cancellable,
    Headers,
    ProcessorContext,
    PunctuationType,
    Record,
    RecordMetadata,
    TaskId,
)
from .errors import (
    ErrorHandlerContext,
    ErrorHandling,
    HandlerFailedError,
    ProducerRecord,
    StreamsError,
)
from .timestamps import ConsumerRecord, FailOnInvalidTimestamp, resolve_timestamp_extractor

log = logging.getLogger(__name__)

__all__ = ["InboundRecord", "StreamTask", "StreamsError", "TaskConfig"]


class RecordCollector(Protocol):
    """Where a task's output goes: sinks, changelogs, repartition topics."""

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Headers, partition: int | None) -> None: ...

    def partitions_for(self, topic: str) -> int: ...


@dataclass(slots=True)
class InboundRecord:
    """A consumed record, still serialized."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = ()


@dataclass
class TaskConfig:
    application_id: str
    default_key_serde: Serde[Any]
    default_value_serde: Serde[Any]
    state_dir: Path
    # Exception handlers + DLQ topic (see errors.py) and default.timestamp.extractor; both
    # default to what app_config says (Kafka's defaults: fail, FailOnInvalidTimestamp).
    errors: ErrorHandling | None = None
    timestamp_extractor: Any = None
    app_config: dict[str, Any] = field(default_factory=dict)
    # For internal topics and stores with no serde of their own: the configured default if
    # the user set one, else the self-describing InternalSerde.
    internal_key_serde: Serde[Any] | None = None
    internal_value_serde: Serde[Any] | None = None
    # The stream thread's record cache (statestore.cache.max.bytes); None = no caching, which
    # is what the TopologyTestDriver uses so that it emits every update.
    cache: CacheBudget | None = None
    # Wraps each store as the task builds it, before any processor sees it (the Metered
    # layer at metrics.recording.level=DEBUG): (store, store name, task id) -> store.
    store_wrapper: Any = None

    def __post_init__(self) -> None:
        self.internal_key_serde = self.internal_key_serde or InternalSerde()
        self.internal_value_serde = self.internal_value_serde or InternalSerde()
        if self.errors is None:
            self.errors = ErrorHandling.from_config(self.app_config)
        if self.timestamp_extractor is None:
            from .errors import config_value

            self.timestamp_extractor = resolve_timestamp_extractor(
                config_value(self.app_config, "default.timestamp.extractor"))

    def serdes_for(self, topic_is_internal: bool) -> tuple[Serde[Any], Serde[Any]]:
        if topic_is_internal:
            return self.internal_key_serde, self.internal_value_serde  # type: ignore[return-value]
        return self.default_key_serde, self.default_value_serde


class _Punctuator:
    __slots__ = ("interval", "type", "callback", "next_due", "handle")

    def __init__(self, interval: int, kind: PunctuationType, callback: Callable[[int], None],
                 first_due: int) -> None:
        self.interval = interval
        self.type = kind
        self.callback = callback
        self.next_due = first_due
        self.handle = Cancellable()


class Node:
    """A runtime node: the processor instance (or source/sink logic) and its children.
    ``processed`` counts the records it received (Kafka's processor-node ``process-total``),
    which the console turns into records/s per node."""

    __slots__ = ("name", "children", "children_by_name", "processor", "kind", "defn",
                 "processed")

    def __init__(self, name: str, kind: str, defn: Any, processor: Any = None) -> None:
        self.name = name
        self.kind = kind
        self.defn = defn
        self.processor = processor
        self.children: list[Node] = []
        self.children_by_name: dict[str, Node] = {}
        self.processed = 0


class TaskContext(ProcessorContext):
    """The ProcessorContext of one task; tracks the node currently processing."""

    def __init__(self, task: StreamTask) -> None:
        self.task = task
        self.application_id = task.config.application_id
        self.task_id = task.task_id
        self.app_config = task.config.app_config
        self.current_node: Node | None = None

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        node = self.current_node
        assert node is not None, "forward() called outside process() or a punctuator"
        if child_name is not None:
            child = node.children_by_name.get(child_name)
            if child is None:
                raise StreamsError(f"{node.name} has no child named {child_name!r}")
            self.task.run_node(child, record)
        else:
            for child in node.children:
                self.task.run_node(child, record)
        self.current_node = node

    def forward_from(self, node: Node, record: Record[Any, Any],
                     metadata: RecordMetadata | None) -> None:
        """Forward as ``node`` with the record context of a cached change being flushed
        (Kafka's cache flush listener), wherever the flush happens (commit or eviction)."""
        task = self.task
        saved = self.current_node, task.current_metadata, task.current_inbound
        self.current_node = node
        task.current_metadata = metadata
        task.current_inbound = None
        try:
            for child in node.children:
                task.run_node(child, record)
        finally:
            self.current_node, task.current_metadata, task.current_inbound = saved

    def schedule(self, interval_ms: int, punctuation_type: PunctuationType,
                 callback: Callable[[int], None]) -> Cancellable:
        if interval_ms < 1:
            raise ValueError(f"punctuation interval must be >= 1 ms, got {interval_ms}")
        node = self.current_node
        if punctuation_type is PunctuationType.STREAM_TIME:
            # Kafka's StreamTask#schedule: aligned to 0, so due at the next stream-time check
            # once there is data, even when scheduled after stream time has advanced.
            first = 0
        else:
            first = self.task.wall_clock() + interval_ms
        punctuator = _Punctuator(interval_ms, punctuation_type, callback, first)
        self.task.punctuators.append((punctuator, node))
        return punctuator.handle

    def get_state_store(self, name: str) -> Any:
        node = self.current_node
        store = self.task.stores.get(name) or self.task.global_stores.get(name)
        if store is None:
            raise StreamsError(f"unknown state store {name!r}")
        if node is not None and node.kind == "processor" and name not in node.defn.stores \
                and name not in self.task.global_stores:
            raise StreamsError(
                f"processor {node.name!r} is not connected to state store {name!r}; "
                "pass the store name to process() or connect_processor_and_state_stores()"
            )
        return store

    def record_metadata(self) -> RecordMetadata | None:
        return self.task.current_metadata

    def current_stream_time_ms(self) -> int:
        return self.task.stream_time

    def current_system_time_ms(self) -> int:
        return self.task.wall_clock()

    def commit(self) -> None:
        self.task.commit_requested = True

    # Kafka's InternalProcessorContext#processorMetadataForKey / addProcessorMetadataKeyValue:
    # values committed with the task's input offsets (see commit_metadata.py).
    def processor_metadata_for_key(self, key: str) -> int | None:
        return self.task.processor_metadata.get(key)

    def add_processor_metadata_key_value(self, key: str, value: int) -> None:
        task = self.task
        task.processor_metadata[key] = value
        task.processor_metadata_changed = True


class StreamTask:
    def __init__(
        self,
        task_id: TaskId,
        topology: Any,
        sub_topology: Any,
        config: TaskConfig,
        collector: RecordCollector,
        wall_clock: Callable[[], int],
        global_stores: dict[str, Any] | None = None,
    ) -> None:
        self.task_id = task_id
        self.topology = topology
        self.sub = sub_topology
        self.config = config
        self.collector = collector
        self.wall_clock = wall_clock
        self.global_stores = global_stores or {}
        self.stream_time = -1
        self.current_metadata: RecordMetadata | None = None
        self.current_inbound: InboundRecord | None = None  # its raw bytes go to the DLQ
        self.errors: ErrorHandling = config.errors  # type: ignore[assignment]
        self.extractors: dict[str, Any] = {}  # source node name -> timestamp extractor
        self.commit_requested = False
        # Metrics, read on scrape: records dropped (a handler said continue, an invalid
        # timestamp) and end-to-end latency (wall clock - record timestamp), sampled once
        # per processed chunk rather than per record.
        self.dropped_records = 0
        self.e2e_samples = 0
        self.e2e_sum_ms = 0
        self.e2e_max_ms = 0
        self.e2e_min_ms = 0
        self.punctuators: list[tuple[_Punctuator, Node | None]] = []
        self.queues: dict[tuple[str, int], deque[InboundRecord]] = {}
        self.partition_time: dict[tuple[str, int], int] = {}
        self.consumed: dict[tuple[str, int], int] = {}  # next offset to commit
        # Committed with the input offsets and read back when the task is created again
        # (commit_metadata.py): processors' values (emit-on-close's last window close time),
        # and whether one changed since the last commit (then every input partition carries
        # them, as Kafka's StreamTask commits them).
        self.processor_metadata: dict[str, int] = {}
        self.processor_metadata_changed = False
        self.context = TaskContext(self)
        self.task_dir = config.state_dir / config.application_id / str(task_id)
        self.stores: dict[str, Any] = {}
        self.nodes: dict[str, Node] = {}
        self.sources_by_topic: dict[str, Node] = {}
        self._build_stores()
        self._build_nodes()

    # -- setup --------------------------------------------------------------------------------

    def changelog_topic(self, store_name: str) -> str:
        source = self.topology.stores[store_name].source_changelog \
            if store_name in self.topology.stores else None
        if source is not None:  # a source table's input topic is its changelog
            return self.topology.resolve_topic(source, self.config.application_id)
        return f"{self.config.application_id}-{store_name}-changelog"

    def _logger_for(self, store_name: str) -> Callable[[bytes, bytes | None, int], None]:
        topic = self.changelog_topic(store_name)
        partition = self.task_id.partition
        send = self.collector.send

        def log_change(key: bytes, value: bytes | None, timestamp: int) -> None:
            send(topic, key, value, max(timestamp, 0), (), partition)

        return log_change

    def _build_stores(self) -> None:
        key_serde, value_serde = self.config.serdes_for(topic_is_internal=True)
        ctx = StoreInitContext(self.task_dir, self._logger_for, key_serde, value_serde)
        for name in self.sub.stores:
            store = self.topology.stores[name].build(ctx)
            if self.config.store_wrapper is not None:
                store = self.config.store_wrapper(store, name, str(self.task_id))
            self.stores[name] = store
            if self.config.cache is not None and hasattr(store, "attach_cache") \
                    and self._store_users(name) == 1:
                store.attach_cache(self.config.cache)

    def _store_users(self, store_name: str) -> int:
        """How many processors of this sub-topology may write the store (connected to it,
        not only to read it)."""
        nodes = self.topology.nodes
        return sum(1 for n in self.sub.nodes
                   if store_name in (getattr(nodes[n], "stores", None) or ())
                   and store_name not in getattr(nodes[n], "read_only_stores", ()))

    def _build_nodes(self) -> None:
        from ..topology.topology import ProcessorDef, SinkDef, SourceDef

        app = self.config.application_id
        for name in self.sub.nodes:
            defn = self.topology.nodes[name]
            if isinstance(defn, SourceDef):
                node = Node(name, "source", defn)
                self.extractors[name] = (
                    resolve_timestamp_extractor(defn.timestamp_extractor)
                    if defn.timestamp_extractor is not None else self.config.timestamp_extractor)
                for topic in defn.topics:
                    self.sources_by_topic[self.topology.resolve_topic(topic, app)] = node
            elif isinstance(defn, ProcessorDef):
                node = Node(name, "processor", defn, defn.supplier())
            else:
                assert isinstance(defn, SinkDef)
                node = Node(name, "sink", defn)
            self.nodes[name] = node
        for node in self.nodes.values():
            for child in getattr(node.defn, "children", []):
                child_node = self.nodes[child]
                node.children.append(child_node)
                node.children_by_name[child] = child_node
        for node in self.nodes.values():
            if node.kind == "processor":
                self.context.current_node = node
                node.processor.init(self.context)
        self.context.current_node = None

    # -- committed metadata -------------------------------------------------------------------

    def resume_from_committed(self, metadata: dict[tuple[str, int], str]) -> None:
        """Take up what the last owner committed with the input offsets (Kafka's
        ``initializeTaskTimeAndProcessorMetadata``): each partition's time, the stream time
        (their maximum) and the processor metadata (per key, the largest value). Call
        before the task processes anything. A string this runtime cannot read (another
        client's) counts as no metadata, with one warning."""
        for tp, text in sorted(metadata.items()):
            decoded, problem = commit_metadata.decode(text)
            if problem is not None:
                log.warning("task %s: ignoring the unreadable metadata committed for %s-%d "
                            "(%s): %r", self.task_id, tp[0], tp[1], problem, text[:80])
            self.partition_time[tp] = decoded.partition_time
            if decoded.partition_time > self.stream_time:
                self.stream_time = decoded.partition_time
            known = self.processor_metadata
            for key, value in decoded.processor_metadata.items():
                if key not in known or known[key] < value:
                    known[key] = value

    def committed_metadata(self, tp: tuple[str, int]) -> str:
        """The metadata string to commit with input partition ``tp``'s offset."""
        return commit_metadata.encode(self.partition_time.get(tp, commit_metadata.NO_TIMESTAMP),
                                      self.processor_metadata)

    # -- input --------------------------------------------------------------------------------

    def add_records(self, records: list[InboundRecord]) -> None:
        for record in records:
            key = (record.topic, record.partition)
            queue = self.queues.get(key)
            if queue is None:
                queue = self.queues[key] = deque()
            queue.append(record)

    def add_batch(self, topic: str, partition: int, records: list[Any]) -> None:
        """Queue one partition's fetched records as they are: any object with InboundRecord's
        attributes will do (the runtime passes aiokafka's ConsumerRecords, no copy)."""
        key = (topic, partition)
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = deque()
        queue.extend(records)

    def buffered(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def _next_queue(self) -> deque[InboundRecord] | None:
        best: deque[InboundRecord] | None = None
        best_ts = 0
        for queue in self.queues.values():
            if queue and (best is None or queue[0].timestamp < best_ts):
                best = queue
                best_ts = queue[0].timestamp
        return best

    def process(self, max_records: int | None = None) -> int:
        """Process buffered records, lowest head timestamp first; returns how many."""
        done = 0
        record = None
        while max_records is None or done < max_records:
            queue = self._next_queue()
            if queue is None:
                break
            record = queue.popleft()
            self.process_record(record)
            done += 1
        if record is not None:
            self._sample_e2e_latency(record.timestamp)
        return done

    def _sample_e2e_latency(self, timestamp: int) -> None:
        latency = self.wall_clock() - timestamp
        if self.e2e_samples == 0 or latency < self.e2e_min_ms:
            self.e2e_min_ms = latency
        if self.e2e_samples == 0 or latency > self.e2e_max_ms:
            self.e2e_max_ms = latency
        self.e2e_samples += 1
        self.e2e_sum_ms += latency

    def process_record(self, inbound: InboundRecord) -> None:
        source = self.sources_by_topic.get(inbound.topic)
        if source is None:
            raise StreamsError(f"task {self.task_id} has no source for topic {inbound.topic!r}")
        tp = (inbound.topic, inbound.partition)
        self.consumed[tp] = inbound.offset + 1
        defn = source.defn
        self.current_inbound = inbound
        try:
            default_key, default_value = self.config.serdes_for(
                defn.topics[0] in self.topology.internal_topics)
            key_serde = defn.key_serde or default_key
            value_serde = defn.value_serde or default_value
            key = key_serde.deserialize(inbound.topic, inbound.key)
            value = value_serde.deserialize(inbound.topic, inbound.value)
        except Exception as exc:  # any deserializer failure goes to the handler, as in Kafka
            self.errors.handle(self.errors.deserialization,
                               self._error_context(source.name, inbound.timestamp), inbound,
                               exc, self.collector.send)
            self.dropped_records += 1
            return
        partition_time = self.partition_time.get(tp, -1)
        extractor = self.extractors[source.name]
        if extractor.__class__ is FailOnInvalidTimestamp:  # the default: no record object
            timestamp = inbound.timestamp
            if timestamp < 0:
                extractor.on_invalid_timestamp(self._consumer_record(inbound, key, value),
                                               timestamp, partition_time)
        else:
            timestamp = extractor(self._consumer_record(inbound, key, value), partition_time)
            if timestamp < 0:
                log.warning("skipping record %s-%d@%d in task %s: negative extracted "
                            "timestamp %d", inbound.topic, inbound.partition, inbound.offset,
                            self.task_id, timestamp)
                self.dropped_records += 1
                return
        if timestamp > partition_time:
            self.partition_time[tp] = timestamp
        if timestamp > self.stream_time:
            self.stream_time = timestamp
        self.current_metadata = RecordMetadata(inbound.topic, inbound.partition, inbound.offset)
        record = Record(key, value, timestamp, inbound.headers)
        source.processed += 1
        self.context.current_node = source
        for child in source.children:
            self.run_node(child, record)
        self.context.current_node = None
        self.punctuate_stream_time()

    @staticmethod
    def _consumer_record(inbound: InboundRecord, key: Any, value: Any) -> ConsumerRecord:
        return ConsumerRecord(inbound.topic, inbound.partition, inbound.offset, key, value,
                              inbound.timestamp, inbound.headers)

    def _error_context(self, node_name: str | None, timestamp: int) -> ErrorHandlerContext:
        """Where a failure happened: the source record being processed (None in a
        punctuator, where only the node and task are known)."""
        inbound = self.current_inbound
        if inbound is None:
            return ErrorHandlerContext(None, None, None, (), timestamp, node_name, self.task_id,
                                       None, None)
        return ErrorHandlerContext(inbound.topic, inbound.partition, inbound.offset,
                                   inbound.headers, timestamp, node_name, self.task_id,
                                   inbound.key, inbound.value)

    def run_node(self, node: Node, record: Record[Any, Any]) -> None:
        node.processed += 1
        context = self.context
        previous = context.current_node
        context.current_node = node
        try:
            if node.kind == "processor":
                node.processor.process(record)
            elif node.kind == "sink":
                self._sink(node, record)
            else:
                for child in node.children:
                    self.run_node(child, record)
        except HandlerFailedError:
            raise  # a handler below already decided
        except Exception as exc:
            if node.kind != "processor":
                raise
            # KIP-1033: the innermost failing processor drops the record; siblings go on.
            self.errors.handle(self.errors.processing,
                               self._error_context(node.name, record.timestamp), record, exc,
                               self.collector.send)
            self.dropped_records += 1
        finally:
            context.current_node = previous

    def _sink(self, node: Node, record: Record[Any, Any]) -> None:
        defn = node.defn
        topic = defn.topic
        if not isinstance(topic, str):
            topic = topic(record.key, record.value, self.current_metadata)
        default_key, default_value = self.config.serdes_for(topic in self.topology.internal_topics)
        topic = self.topology.resolve_topic(topic, self.config.application_id)
        key_serde = defn.key_serde or default_key
        value_serde = defn.value_serde or default_value
        try:
            key = key_serde.serialize(topic, record.key)
            value = value_serde.serialize(topic, record.value)
        except Exception as exc:
            self._production_error(node, ProducerRecord(topic, record.key, record.value,
                                                        record.timestamp, record.headers), exc)
            return
        partition = None
        if defn.partitioner is not None:
            partition = defn.partitioner(topic, record.key, record.value,
                                         self.collector.partitions_for(topic))
        try:
            self.collector.send(topic, key, value, record.timestamp, record.headers, partition)
        except Exception as exc:  # e.g. larger than max.request.size
            self._production_error(node, ProducerRecord(topic, key, value, record.timestamp,
                                                        record.headers, partition), exc)

    def _production_error(self, node: Node, record: ProducerRecord, exc: Exception) -> None:
        self.errors.handle(self.errors.production, self._error_context(node.name, record.timestamp),
                           record, exc, self.collector.send)

    # -- punctuation --------------------------------------------------------------------------

    def _run_punctuators(self, kind: PunctuationType, now: int) -> None:
        for punctuator, node in list(self.punctuators):
            if punctuator.handle.cancelled:
                self.punctuators.remove((punctuator, node))
                continue
            if punctuator.type is not kind or now < punctuator.next_due:
                continue
            self.context.current_node = node
            self.current_metadata = None
            self.current_inbound = None
            try:
                punctuator.callback(now)
            except HandlerFailedError:
                raise
            except Exception as exc:  # KIP-1033: punctuator errors go to the handler too
                self.errors.handle(self.errors.processing,
                                   self._error_context(node.name if node else None, now),
                                   None, exc, self.collector.send)
            finally:
                self.context.current_node = None
            missed = (now - punctuator.next_due) // punctuator.interval
            punctuator.next_due += (missed + 1) * punctuator.interval

    def punctuate_stream_time(self) -> None:
        if self.punctuators and self.stream_time >= 0:
            self._run_punctuators(PunctuationType.STREAM_TIME, self.stream_time)

    def punctuate_wall_clock(self) -> None:
        if self.punctuators:
            self._run_punctuators(PunctuationType.WALL_CLOCK_TIME, self.wall_clock())

    # -- commit and close ---------------------------------------------------------------------

    def flush(self) -> None:
        """The commit starts: flush record caches (what they forward goes to the collector),
        then close every store's write batch of this interval; call before committing offsets.
        Nothing reaches RocksDB until ``commit_stores`` (after the commit succeeded)."""
        self.flush_caches()
        for store in self.stores.values():
            store.flush()
        self.commit_requested = False

    def changelog_partition(self, store_name: str) -> tuple[str, int]:
        return self.changelog_topic(store_name), self.task_id.partition

    def commit_stores(self, offsets: dict[tuple[str, int], int]) -> None:
        """The commit succeeded: each store writes its flushed batch together with its
        changelog partition's next offset from ``offsets`` (if there) in one atomic write."""
        for name, store in self.stores.items():
            commit = getattr(store, "commit", None)
            if commit is not None:
                tp = self.changelog_partition(name)
                commit({tp: offsets[tp]} if tp in offsets else None)

    def flush_caches(self) -> None:
        """Forward and write what the record caches hold. Repeated because a flushed change
        may update another cached store downstream in this task."""
        cached = [s for s in self.stores.values() if getattr(s, "cache", None) is not None]
        while cached and any([s.flush_cache() for s in cached]):
            pass

    def close(self) -> None:
        for node in self.nodes.values():
            if node.kind == "processor":
                self.context.current_node = node
                try:
                    node.processor.close()
                except Exception:
                    log.exception("closing processor %s failed", node.name)
        self.context.current_node = None
        for store in self.stores.values():
            store.close()
