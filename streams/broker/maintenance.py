"""Background log maintenance, on Kafka's two schedules.

Retention (``cleanup.policy=delete``) runs every ``log.retention.check.interval.ms`` (Kafka's
LogManager `kafka-log-retention` task). Compaction (``cleanup.policy=compact``) has its own loop,
as Kafka's LogCleaner threads do: clean every partition that is due, and when none is, sleep
``log.cleaner.backoff.ms`` (default 15000). A partition that fails is logged once and skipped;
the other partitions are still maintained.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from .storage.cleaner import CompactionConfig, needs_cleaning, plan_and_write, swap
from .storage.retention import apply_retention

if TYPE_CHECKING:
    from .server import Broker
    from .storage.log import PartitionLog
    from .topics import Topic

log = logging.getLogger(__name__)


class FailureLog:
    """Remembers which partitions failed which job, so each failure is logged once."""

    def __init__(self) -> None:
        self.failing: set[tuple[str, str]] = set()

    def failed(self, job: str, partition: str, exc: BaseException) -> None:
        if (job, partition) not in self.failing:
            self.failing.add((job, partition))
            log.error("%s of %s failed (%s: %s); skipping it, other partitions continue",
                      job, partition, type(exc).__name__, exc)

    def succeeded(self, job: str, partition: str) -> None:
        if (job, partition) in self.failing:
            self.failing.discard((job, partition))
            log.info("%s of %s works again", job, partition)


def _compaction_config(broker: Broker, topic: Topic) -> CompactionConfig:
    get = broker.topics.effective_config
    return CompactionConfig(
        min_cleanable_dirty_ratio=float(get(topic, "min.cleanable.dirty.ratio")),
        min_compaction_lag_ms=int(get(topic, "min.compaction.lag.ms")),
        max_compaction_lag_ms=int(get(topic, "max.compaction.lag.ms")),
        delete_retention_ms=int(get(topic, "delete.retention.ms")),
    )


def _partitions(broker: Broker, policy: str) -> list[tuple[Topic, int, PartitionLog]]:
    out = []
    for topic in list(broker.topics.topics.values()):
        if policy in broker.topics.effective_config(topic, "cleanup.policy").split(","):
            out.extend((topic, i, plog) for i, plog in enumerate(list(topic.partitions)))
    return out


def retention_pass(broker: Broker, now_ms: int | None = None) -> int:
    """Apply retention.ms / retention.bytes to every `delete` partition; segments deleted."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    failures = broker.maintenance_failures
    deleted = 0
    for topic, index, plog in _partitions(broker, "delete"):
        name = f"{topic.name}-{index}"
        try:
            deleted += apply_retention(
                plog,
                int(broker.topics.effective_config(topic, "retention.ms")),
                int(broker.topics.effective_config(topic, "retention.bytes")),
                now_ms,
            )
        except Exception as exc:
            failures.failed("retention", name, exc)
        else:
            failures.succeeded("retention", name)
    return deleted


async def _compact(broker: Broker, topic: Topic, plog: PartitionLog, now_ms: int) -> bool:
    config = _compaction_config(broker, topic)
    if plog.cleaning or not needs_cleaning(plog, config, now_ms):
        return False
    plog.cleaning = True
    try:
        plan = await asyncio.to_thread(plan_and_write, plog, config, now_ms)
        if topic.name in broker.topics.topics and plog.segments:
            swap(plog, plan, now_ms)
    finally:
        plog.cleaning = False
    if plog.segments:
        plog.drop_segments_below_start()
    return True


async def cleaner_pass(broker: Broker, now_ms: int | None = None) -> int:
    """Compact every `compact` partition that is due; returns how many were cleaned."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    failures = broker.maintenance_failures
    cleaned = 0
    for topic, index, plog in _partitions(broker, "compact"):
        name = f"{topic.name}-{index}"
        try:
            cleaned += await _compact(broker, topic, plog, now_ms)
        except Exception as exc:
            failures.failed("compaction", name, exc)
        else:
            failures.succeeded("compaction", name)
    return cleaned


async def run_once(broker: Broker, now_ms: int | None = None) -> None:
    """One pass over every partition: retention first, then compaction where due."""
    retention_pass(broker, now_ms)
    await cleaner_pass(broker, now_ms)


async def retention_loop(broker: Broker) -> None:
    """As Kafka's LogManager schedules it: a first pass log.initial.task.delay.ms after start
    (segments that expired while the broker was down go soon), then every
    log.retention.check.interval.ms."""
    await asyncio.sleep(broker.config.log_initial_task_delay_ms / 1000)
    interval = broker.config.log_retention_check_interval_ms / 1000
    while True:
        retention_pass(broker)
        await asyncio.sleep(interval)


async def cleaner_loop(broker: Broker) -> None:
    """Kafka's CleanerThread: back off only when there was nothing to clean."""
    while True:
        if not await cleaner_pass(broker):  # the backoff is a dynamic broker config
            await asyncio.sleep(broker.config.log_cleaner_backoff_ms / 1000)
        else:
            await asyncio.sleep(0)
