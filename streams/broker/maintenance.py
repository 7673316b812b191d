"""Background log maintenance: retention for `delete` topics, compaction for `compact` ones."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from .storage.cleaner import CompactionConfig, needs_cleaning, plan_and_write, swap
from .storage.retention import apply_retention

if TYPE_CHECKING:
    from .server import Broker
    from .topics import Topic

log = logging.getLogger(__name__)


def _compaction_config(broker: Broker, topic: Topic) -> CompactionConfig:
    get = broker.topics.effective_config
    return CompactionConfig(
        min_cleanable_dirty_ratio=float(get(topic, "min.cleanable.dirty.ratio")),
        min_compaction_lag_ms=int(get(topic, "min.compaction.lag.ms")),
        max_compaction_lag_ms=int(get(topic, "max.compaction.lag.ms")),
        delete_retention_ms=int(get(topic, "delete.retention.ms")),
    )


async def run_once(broker: Broker, now_ms: int | None = None) -> None:
    """One pass over every partition: retention first, then compaction where due."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    for topic in list(broker.topics.topics.values()):
        policy = broker.topics.effective_config(topic, "cleanup.policy").split(",")
        for plog in list(topic.partitions):
            if "delete" in policy:
                apply_retention(
                    plog,
                    int(broker.topics.effective_config(topic, "retention.ms")),
                    int(broker.topics.effective_config(topic, "retention.bytes")),
                    now_ms,
                )
            if "compact" in policy:
                config = _compaction_config(broker, topic)
                if plog.cleaning or not needs_cleaning(plog, config, now_ms):
                    continue
                plog.cleaning = True
                try:
                    plan = await asyncio.to_thread(plan_and_write, plog, config, now_ms)
                    if topic.name in broker.topics.topics and plog.segments:
                        swap(plog, plan, now_ms)
                finally:
                    plog.cleaning = False
                if plog.segments:
                    plog.drop_segments_below_start()


async def maintenance_loop(broker: Broker) -> None:
    interval = broker.config.log_retention_check_interval_ms / 1000
    while True:
        await asyncio.sleep(interval)
        try:
            await run_once(broker)
        except Exception:
            log.exception("log maintenance pass failed")
