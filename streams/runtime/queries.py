"""Interactive queries: read-only views of local stores, and where every key lives.

``ReadOnlyStoreView`` reads this instance's stores. ``StreamsMetadataState`` answers "which
instance holds this key" from the host map every assignment carries (assignor.py), as Kafka's
``StreamsMetadataState`` does: the key is serialized with the store's key serde and hashed with
the default partitioner (murmur2) over the source topic's partition count; the task of that
partition runs on one host (KIP-67, "Queryable state for Kafka Streams").

Read-only views:

A store name covers one store instance per local task (one per partition); the view asks all of
them, as Kafka's ``CompositeReadOnlyKeyValueStore`` does. Writes are not offered.

Queries run on the caller's thread while the stream thread writes, so they go through
``read_only_view`` (streams/state/readonly.py): they read the record cache and the store
without ever flushing or writing either. Results are as fresh as the moment each store is read
(like Kafka's, not a snapshot across tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from aiokafka import TopicPartition

from ..kafka.batching import default_partition
from ..processor.api import TaskId
from ..serde import Serde
from ..state.readonly import read_only_view
from .assignor import AssignmentInfo

if TYPE_CHECKING:
    from ..topology.topology import Topology
    from .app import KafkaStreams
    from .topics import TopicLayout


class HostInfo(NamedTuple):
    """An instance's ``application.server`` (Kafka's ``HostInfo``)."""

    host: str
    port: int

    @classmethod
    def parse(cls, endpoint: str) -> HostInfo:
        host, _, port = endpoint.rpartition(":")
        return cls(host, int(port))

    @classmethod
    def unavailable(cls) -> HostInfo:
        return cls("unavailable", -1)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where a key's store entry lives: the active host, standby hosts, the partition.
    ``KeyQueryMetadata.NOT_AVAILABLE`` while no assignment with host information is known."""

    active_host: HostInfo
    standby_hosts: list[HostInfo] = field(default_factory=list)
    partition: int = -1

    NOT_AVAILABLE: ClassVar[KeyQueryMetadata]


KeyQueryMetadata.NOT_AVAILABLE = KeyQueryMetadata(HostInfo.unavailable(), [], -1)


@dataclass(frozen=True)
class StreamsMetadata:
    """One instance of the application as the last assignment described it."""

    host_info: HostInfo
    state_store_names: frozenset[str]
    topic_partitions: frozenset[TopicPartition]
    standby_state_store_names: frozenset[str] = frozenset()
    standby_topic_partitions: frozenset[TopicPartition] = frozenset()

    def host(self) -> str:
        return self.host_info.host

    def port(self) -> int:
        return self.host_info.port


@dataclass(frozen=True)
class TaskMetadata:
    """One task of this instance (Kafka's ``TaskMetadata``): its id and input partitions, the
    offsets committed for them and the last ones known on the broker."""

    task_id: str
    topic_partitions: frozenset[TopicPartition]
    committed_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    end_offsets: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ThreadMetadata:
    """The stream thread of this instance (Kafka's ``ThreadMetadata``)."""

    thread_name: str
    thread_state: str
    active_tasks: tuple[TaskMetadata, ...]  # by task id
    standby_tasks: tuple[TaskMetadata, ...]


class StreamsMetadataState:
    """The group's host map from one assignment, and the lookups built on it."""

    def __init__(self, info: AssignmentInfo, layout: TopicLayout, topology: Topology,
                 default_key_serde: Serde[Any] | None) -> None:
        self.info = info
        self.layout = layout
        self.topology = topology
        self.default_key_serde = default_key_serde
        self.store_sub = {store: sub.id for sub in layout.sub_topologies for store in sub.stores}
        self.hosts = {HostInfo.parse(h): set(ts) for h, ts in info.hosts.items()}
        self.standbys = {HostInfo.parse(h): set(ts) for h, ts in info.standby_hosts.items()}

    def _metadata(self, host: HostInfo) -> StreamsMetadata:
        def describe(tasks: Iterable[TaskId]) -> tuple[frozenset[str], frozenset[TopicPartition]]:
            tasks = list(tasks)
            stores = {s for s, sub in self.store_sub.items()
                      if any(t.subtopology == sub for t in tasks)}
            parts = {TopicPartition(topic, t.partition) for t in tasks
                     for topic in self.layout.sources.get(t.subtopology, [])
                     if t.partition < self.info.partitions.get(topic, t.partition + 1)}
            return frozenset(stores), frozenset(parts)
        stores, parts = describe(self.hosts.get(host, ()))
        standby_stores, standby_parts = describe(self.standbys.get(host, ()))
        return StreamsMetadata(host, stores | frozenset(self.topology.global_stores), parts,
                               standby_stores, standby_parts)

    def all_metadata(self) -> list[StreamsMetadata]:
        return [self._metadata(h) for h in sorted(set(self.hosts) | set(self.standbys))]

    def metadata_for_store(self, name: str) -> list[StreamsMetadata]:
        if name in self.topology.global_stores:
            return self.all_metadata()
        return [m for m in self.all_metadata()
                if name in m.state_store_names or name in m.standby_state_store_names]

    def key_query_metadata(self, store: str, key: Any, local: HostInfo | None,
                           key_serializer: Serde[Any] | Callable[[Any], bytes] | None = None,
                           partitioner: Callable[[str, Any, Any, int], int | None] | None = None
                           ) -> KeyQueryMetadata:
        if store in self.topology.global_stores:  # every instance holds all of it
            return KeyQueryMetadata(local or HostInfo.unavailable(), [], -1)
        sub = self.store_sub.get(store)
        if sub is None or not self.layout.sources.get(sub):
            return KeyQueryMetadata.NOT_AVAILABLE
        topics = self.layout.sources[sub]
        count = max(self.info.partitions.get(t) or self.layout.partitions.get(t, 0)
                    for t in topics)
        if count <= 0:
            return KeyQueryMetadata.NOT_AVAILABLE
        chosen = partitioner(topics[0], key, None, count) if partitioner is not None else None
        if chosen is None:  # a StreamPartitioner may return None: the default partitioner
            data = _serialize_key(key_serializer or self._store_key_serde(store), topics[0], key)
            chosen = default_partition(data, count)
        partition = chosen
        task = TaskId(sub, partition)
        active = next((h for h, ts in self.hosts.items() if task in ts), None)
        if active is None:
            return KeyQueryMetadata.NOT_AVAILABLE
        standbys = sorted(h for h, ts in self.standbys.items() if task in ts)
        return KeyQueryMetadata(active, standbys, partition)

    def _store_key_serde(self, store: str) -> Serde[Any]:
        builder = self.topology.stores[store]
        serde = builder.key_serde or self.default_key_serde
        if serde is None:
            raise ValueError(f"store {store!r} has no key serde and default.key.serde is not "
                             "set: pass key_serializer= to query_metadata_for_key")
        return serde


def _serialize_key(serializer: Serde[Any] | Callable[[Any], bytes], topic: str,
                   key: Any) -> bytes:
    data = (serializer.serialize(topic, key) if isinstance(serializer, Serde)
            else serializer(key))
    if data is None:
        raise ValueError("a query key cannot be None")
    return data


T = TypeVar("T")


class InvalidStateStoreError(RuntimeError):
    """The store is not queryable right now (not running, rebalancing, restoring)."""


class ReadOnlyStoreView:
    """What ``KafkaStreams.store(name)`` returns: reads over every local task's store.

    Reads see each store's committed data with its task's uncommitted writes laid over them,
    and never write, flush or wait for the stream thread (streams/state/rocksdb.py)."""

    def __init__(self, name: str, app: KafkaStreams) -> None:
        self.name = name
        self.app = app

    def _stores(self) -> list[Any]:
        stores = self.app.local_stores(self.name)
        if not stores and self.app.state.value not in ("RUNNING", "REBALANCING"):
            raise InvalidStateStoreError(
                f"store {self.name!r} is not available: the instance is {self.app.state.value}")
        return [read_only_view(store) for store in stores]

    def _read(self, read: Callable[[], T]) -> T:
        """A read of one store; a store its task closed meanwhile (a rebalance moved it, or
        it is being wiped to restore) is Kafka's InvalidStateStoreException: retry later."""
        try:
            return read()
        except RuntimeError as exc:
            if "is closed" not in str(exc):
                raise
            raise InvalidStateStoreError(
                f"store {self.name!r} is not available right now (its task was closed or "
                "moved); retry") from exc

    def _first(self, read: Callable[[Any], Any]) -> Any:
        for store in self._stores():
            value = self._read(lambda store=store: read(store))
            if value is not None:
                return value
        return None

    def _scan(self, read: Callable[[Any], Any]) -> Iterator[Any]:
        """Each task's store in turn, lazily (a scan is as fresh as the moment it opens each
        store's iterator, as Kafka's)."""
        for store in self._stores():
            try:
                yield from read(store)
            except RuntimeError as exc:
                if "is closed" not in str(exc):
                    raise
                raise InvalidStateStoreError(
                    f"store {self.name!r} is not available right now (its task was closed or "
                    "moved); retry") from exc

    # key-value stores
    def get(self, key: Any, as_of_timestamp: int | None = None) -> Any:
        """The key's value; from a versioned store (KIP-889) its ``VersionedRecord``, the
        latest or the one valid at ``as_of_timestamp`` (Kafka's IQv2 ``VersionedKeyQuery``)."""
        if as_of_timestamp is not None:
            return self._first(lambda s: s.get(key, as_of_timestamp))
        return self._first(lambda s: s.get(key))

    def get_with_timestamp(self, key: Any) -> Any:
        return self._first(lambda s: s.get_with_timestamp(key))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._scan(lambda s: s.all())

    def range(self, from_key: Any = None, to_key: Any = None) -> Iterator[tuple[Any, Any]]:
        return self._scan(lambda s: s.range(from_key, to_key))

    def approximate_num_entries(self) -> int:
        return sum(self._read(lambda s=s: s.approximate_num_entries()) for s in self._stores())

    # window and session stores
    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) + len(kwargs) == 2:  # fetch(key, window_start) -> the value
            return self._first(lambda s: s.fetch(*args, **kwargs))
        return self._scan(lambda s: s.fetch(*args, **kwargs))

    def fetch_all(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._scan(lambda s: s.fetch_all(*args, **kwargs))

    def find_sessions(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._scan(lambda s: s.find_sessions(*args, **kwargs))
