"""A source connector's offsets as its tasks see them (Kafka's ``ConnectorOffsetBackingStore``).

A connector may keep its offsets in a topic of its own (``offsets.storage.topic``, KIP-618). Its
tasks then read that topic first and fall back to the worker's store for partitions it does not
hold yet (so a connector that starts using its own topic continues where the worker's topic left
it), and write only to their own topic. Without it they use the worker's store alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from connect.runtime.offsets import OffsetStore

if TYPE_CHECKING:
    from connect.runtime.config import WorkerConfig

COMPACT = {"cleanup.policy": "compact"}


class ConnectorOffsets:
    def __init__(self, primary: OffsetStore, fallback: OffsetStore | None,
                 topic: str | None, owned: bool) -> None:
        self.primary = primary
        self.fallback = fallback
        self.topic = topic  # the topic offsets are written to (None: a file)
        self._owned = owned

    @classmethod
    async def open(cls, worker: WorkerConfig, worker_store: OffsetStore,
                   topic: str | None) -> ConnectorOffsets:
        """Read both stores to their end (``read_committed``: offsets of aborted transactions
        never count) before the task asks for an offset."""
        await worker_store.sync()
        if not topic or topic == worker.offset_storage_topic:
            return cls(worker_store, None, worker.offset_storage_topic, owned=False)
        from connect.runtime import clients
        from connect.runtime.kafka_log import KafkaOffsetStore

        await clients.ensure_topic(worker, topic, worker.offset_storage_partitions,
                                   worker.offset_storage_replication_factor, COMPACT)
        store = KafkaOffsetStore(worker, topic)
        await store.start()
        return cls(store, worker_store, topic, owned=True)

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.primary.get(connector, partition)
        if found is None and self.fallback is not None:
            return self.fallback.get(connector, partition)
        return found

    async def put(self, connector: str,
                  offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        await self.primary.put(connector, offsets)

    def applied(self, connector: str,
                offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Offsets a transaction wrote to the topic: visible to this task's reads at once."""
        self.primary._apply(connector, offsets)

    async def close(self) -> None:
        if self._owned:
            await self.primary.stop()


async def read_connector_topic(worker: WorkerConfig, topic: str, connector: str
                               ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The offsets of ``connector`` in ``topic`` (for ``GET /connectors/{name}/offsets``)."""
    from connect.runtime.kafka_log import KafkaOffsetStore

    store = KafkaOffsetStore(worker, topic)
    await store.start()
    try:
        return store.all_for(connector)
    finally:
        await store.stop()


async def write_connector_topic(worker: WorkerConfig, topic: str, connector: str,
                                offsets: list) -> None:
    """Alter or reset offsets in a connector's own topic (KIP-875 on a KIP-618 topic)."""
    from connect.runtime import clients
    from connect.runtime.kafka_log import KafkaOffsetStore

    await clients.ensure_topic(worker, topic, worker.offset_storage_partitions,
                               worker.offset_storage_replication_factor, COMPACT)
    store = KafkaOffsetStore(worker, topic)
    await store.start()
    try:
        await store.put(connector, offsets)
    finally:
        await store.stop()
