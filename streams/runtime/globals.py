"""Global stores at runtime: bootstrapped from every partition of their topics before any task
processes, then kept up to date by polling on every loop iteration (not time-synchronised,
as in Kafka Streams)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

from ..kafka import clients
from ..kafka.internals import stop_client, wait_on_metadata
from ..processor.global_task import GlobalStoreFeeder
from ..processor.task import InboundRecord, TaskConfig
from ..state.stores import StoreInitContext
from .guarantee import ProcessingGuarantee

log = logging.getLogger(__name__)


class GlobalStores:
    def __init__(self, topology: Any, config: TaskConfig, client_kwargs: dict[str, Any],
                 guarantee: ProcessingGuarantee, app_dir: Path,
                 clock: Callable[[], int]) -> None:
        directory = app_dir / "global"
        # No global checkpoint yet: rebuild from the topics (which are the changelogs).
        shutil.rmtree(directory, ignore_errors=True)
        ctx = StoreInitContext(directory, lambda name: None, config.internal_key_serde,
                               config.internal_value_serde)
        self.feeder = GlobalStoreFeeder(topology, ctx, config, clock)
        self.stores = self.feeder.stores
        self.consumer = clients.consumer(
            client_kwargs, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=guarantee.isolation_level)

    async def bootstrap(self) -> None:
        consumer = self.consumer
        await consumer.start()
        tps = []
        for topic in self.feeder.topics():
            partitions = await wait_on_metadata(consumer, topic)
            tps.extend(TopicPartition(topic, p) for p in sorted(partitions))
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        remaining = {tp for tp in tps if ends[tp] > 0}
        count = 0
        while remaining:
            count += self._apply(await consumer.getmany(*remaining, timeout_ms=200))
            for tp in list(remaining):
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
        log.info("global stores %s bootstrapped from %d records", sorted(self.stores), count)

    def _apply(self, batch: dict[TopicPartition, list[Any]]) -> int:
        n = 0
        for records in batch.values():
            for r in records:
                self.feeder.process(InboundRecord(r.topic, r.partition, r.offset, r.key, r.value,
                                                  r.timestamp, tuple(r.headers or ())))
            n += len(records)
        return n

    async def poll(self) -> None:
        self._apply(await self.consumer.getmany(timeout_ms=0))

    async def close(self) -> None:
        await stop_client(self.consumer)
        self.feeder.close()
