"""MirrorCheckpointConnector: translates consumer group offsets from the source cluster into
offsets of the replicas, written as checkpoints to ``<source>.checkpoints.internal`` on the
target (Kafka's record format), and with ``sync.group.offsets.enabled`` committed to the same
groups on the target while they have no active member there.

Translation (Kafka's OffsetSyncStore): the latest offset sync at or before the group's offset
gives the downstream offset; if the group is past that sync, one more (never further: records
between syncs may have been dropped upstream), so a consumer that fails over re-reads at most
about ``offset.lag.max`` records and never skips one.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from connect.api import SourceConnector, SourceTask
from connect.config_def import ConfigDef, ConfigType, Importance, Range
from connect.data import Schema
from connect.mirror import admin as mm_admin
from connect.mirror.config import (
    GROUPS_DEFAULT,
    GROUPS_EXCLUDE_DEFAULT,
    TOPICS_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    ClusterClients,
    FlowConfig,
    NameFilter,
    base_config_def,
    flow_config,
    replication_factor,
)
from connect.mirror.formats import Checkpoint, FormatError, OffsetSync
from connect.mirror.metrics import CHECKPOINT_METRICS
from connect.mirror.scheduler import Scheduler
from connect.records import SourceRecord
from connect.runtime import clients

log = logging.getLogger("connect.mirror.checkpoint")

TASK_GROUPS = "task.assigned.groups"
TASK_INDEX = "task.index"
SYNCS_PER_PARTITION = 1024

CONFIG_DEF: ConfigDef = (
    base_config_def()
    .define("groups", ConfigType.LIST, GROUPS_DEFAULT, None, Importance.HIGH,
            "Consumer groups to replicate. Supports comma-separated group IDs and regexes.")
    .define("groups.exclude", ConfigType.LIST, GROUPS_EXCLUDE_DEFAULT, None, Importance.HIGH,
            "Exclude groups. Supports comma-separated group IDs and regexes.")
    .define("topics", ConfigType.LIST, TOPICS_DEFAULT, None, Importance.HIGH,
            "Topics to replicate. Supports comma-separated topic names and regexes.")
    .define("topics.exclude", ConfigType.LIST, TOPICS_EXCLUDE_DEFAULT, None, Importance.HIGH,
            "Excluded topics. Supports comma-separated topic names and regexes.")
    .define("refresh.groups.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to periodically check for new consumer groups.")
    .define("refresh.groups.interval.seconds", ConfigType.LONG, 600, None, Importance.LOW,
            "Frequency of group refresh.")
    .define("emit.checkpoints.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to replicate consumer offsets to target cluster.")
    .define("emit.checkpoints.interval.seconds", ConfigType.LONG, 60, None, Importance.LOW,
            "Frequency of checkpoints.")
    .define("sync.group.offsets.enabled", ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Whether to periodically write the translated offsets to __consumer_offsets topic "
            "in target cluster, as long as no active consumers in that group are connected to "
            "the target cluster")
    .define("sync.group.offsets.interval.seconds", ConfigType.LONG, 60, None, Importance.LOW,
            "Frequency of consumer group offset sync.")
    .define("checkpoints.topic.replication.factor", ConfigType.SHORT, 3, replication_factor,
            Importance.LOW, "Replication factor for checkpoints topic.")
    .define("emit.offset-syncs.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether the source connector writes offset syncs (checkpoints need them).")
    .define("consumer.poll.timeout.ms", ConfigType.LONG, 1000, Range.at_least(1),
            Importance.LOW, "Timeout when polling the source cluster.")
)


class CheckpointSettings:
    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        self.parsed = CONFIG_DEF.parse({k: v for k, v in props.items()
                                        if k in CONFIG_DEF.names()})
        self.flow: FlowConfig = flow_config(props, self.parsed)
        self.group_filter = NameFilter(self.parsed["groups"], self.parsed["groups.exclude"])
        self.topic_filter = NameFilter(self.parsed["topics"], self.parsed["topics.exclude"])

    def __getitem__(self, key: str) -> Any:
        return self.parsed[key]

    def emits(self) -> bool:
        return bool(self["emit.checkpoints.enabled"]) and self["emit.checkpoints.interval.seconds"] >= 0


class MirrorCheckpointConnector(SourceConnector):
    def __init__(self) -> None:
        self.settings: CheckpointSettings | None = None
        self.scheduler: Scheduler | None = None
        self.groups: list[str] | None = None

    def start(self, props: dict[str, str]) -> None:
        settings = CheckpointSettings(props)
        self.settings = settings
        flow = settings.flow
        if not flow.enabled or not settings.emits():
            return
        self.scheduler = Scheduler(f"MirrorCheckpointConnector-{flow.source_alias}->"
                                   f"{flow.target_alias}", flow.admin_timeout)
        try:
            self.scheduler.run(lambda: mm_admin.ensure_compacted_topic(
                flow.target, flow.checkpoints_topic(),
                settings["checkpoints.topic.replication.factor"]),
                "creating the checkpoints topic")
            self.groups = self.scheduler.run(self.find_groups, "loading consumer groups")
        except BaseException:
            self.stop()
            raise
        if settings["refresh.groups.enabled"]:
            self.scheduler.repeat(self._refresh_groups,
                                  settings["refresh.groups.interval.seconds"],
                                  "refreshing consumer groups")

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None

    def task_class(self) -> type:
        return MirrorCheckpointTask

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        settings = self.settings
        groups = self.groups or []
        if settings is None or not settings.flow.enabled or not settings.emits() or not groups:
            return []
        count = min(max_tasks, len(groups))
        # Contiguous slices, as Kafka's ConnectorUtils.groupPartitions.
        size, extra = divmod(len(groups), count)
        out, start = [], 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            out.append({**settings.props, TASK_GROUPS: ",".join(groups[start:end]),
                        TASK_INDEX: str(i)})
            start = end
        return out

    def alter_offsets(self, props: dict[str, str], offsets: list) -> bool:
        return True

    async def find_groups(self) -> list[str]:
        """Groups matching groups/groups.exclude that committed offsets of a topic the topic
        filter replicates (Kafka's findConsumerGroups)."""
        settings = self.settings
        assert settings is not None
        found = []
        async with mm_admin.admin_client(settings.flow.source) as admin:
            for group in await mm_admin.consumer_groups(admin):
                if not settings.group_filter(group):
                    continue
                offsets = await mm_admin.group_offsets(admin, group)
                if any(settings.topic_filter(tp.topic) for tp in offsets):
                    found.append(group)
        return sorted(found)

    async def _refresh_groups(self) -> None:
        groups = await self.find_groups()
        if groups != self.groups:
            log.info("Found %d consumer groups for %s->%s (was %d).", len(groups),
                     self.settings.flow.source_alias if self.settings else "?",
                     self.settings.flow.target_alias if self.settings else "?",
                     len(self.groups or []))
            self.groups = groups
            self.context.request_task_reconfiguration()


class OffsetSyncStore:
    """The offset syncs of the flow, read from the offset-syncs topic (partition 0) from the
    beginning and kept up to date before every round of translation."""

    def __init__(self, cluster: ClusterClients, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.tp = TopicPartition(topic, 0)
        self.consumer: AIOKafkaConsumer | None = None
        # per source partition: upstream offsets (sorted) and the syncs in the same order
        self.syncs: dict[TopicPartition, tuple[list[int], list[OffsetSync]]] = {}
        self.read_to_end = False

    async def start(self) -> None:
        consumer = clients.consumer(self.cluster.bootstrap, self.cluster.consumer_overrides())
        await consumer.start()
        consumer.assign([self.tp])
        await consumer.seek_to_beginning(self.tp)
        self.consumer = consumer

    async def catch_up(self, deadline: float) -> None:
        """Read every sync written so far (up to the end offset seen now)."""
        consumer = self.consumer
        assert consumer is not None
        end = (await consumer.end_offsets([self.tp]))[self.tp]
        while await consumer.position(self.tp) < end:
            if time.monotonic() > deadline:
                return
            batch = await consumer.getmany(self.tp, timeout_ms=200)
            for record in batch.get(self.tp, []):
                try:
                    self.add(OffsetSync.from_record(record.key, record.value))
                except FormatError as exc:
                    log.info("Skipping a malformed offset sync at %d: %s", record.offset, exc)
        self.read_to_end = True

    def add(self, sync: OffsetSync) -> None:
        tp = TopicPartition(sync.topic, sync.partition)
        upstreams, syncs = self.syncs.setdefault(tp, ([], []))
        # A sync behind the latest ones (the source task restarted from older offsets, or the
        # replica was truncated) makes every later one unreliable: drop them.
        while syncs and (syncs[-1].upstream_offset >= sync.upstream_offset
                         or syncs[-1].downstream_offset >= sync.downstream_offset):
            syncs.pop()
            upstreams.pop()
        syncs.append(sync)
        upstreams.append(sync.upstream_offset)
        if len(syncs) > SYNCS_PER_PARTITION:
            # Keep the newest half exactly and every other one of the older half.
            half = len(syncs) // 2
            kept = list(range(0, half, 2)) + list(range(half, len(syncs)))
            syncs[:] = [syncs[i] for i in kept]
            upstreams[:] = [upstreams[i] for i in kept]

    def translate(self, tp: TopicPartition, upstream_offset: int) -> int | None:
        """The downstream offset of ``upstream_offset`` in source partition ``tp``; None if
        there is no sync for it yet, -1 if the offset is older than every sync kept."""
        if not self.read_to_end:
            return None
        entry = self.syncs.get(tp)
        if not entry:
            return None
        upstreams, syncs = entry
        index = bisect.bisect_right(upstreams, upstream_offset) - 1
        if index < 0:
            return -1
        sync = syncs[index]
        step = 0 if upstream_offset == sync.upstream_offset else 1
        return sync.downstream_offset + step

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
            self.consumer = None


async def read_checkpoints(cluster: ClusterClients, topic: str, deadline: float
                           ) -> list[Checkpoint]:
    """Every checkpoint in ``topic`` on ``cluster`` (read to its current end)."""
    consumer = clients.consumer(cluster.bootstrap, cluster.consumer_overrides())
    await consumer.start()
    out: list[Checkpoint] = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        while await consumer.position(tp) < end and time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=200)
            for record in batch.get(tp, []):
                try:
                    out.append(Checkpoint.from_record(record.key, record.value))
                except FormatError as exc:
                    log.info("Could not deserialize record at %d of %s, skipping: %s",
                             record.offset, topic, exc)
    finally:
        await consumer.stop()
    return out


class MirrorCheckpointTask(SourceTask):
    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.store: OffsetSyncStore | None = None
        self.last: dict[str, dict[TopicPartition, Checkpoint]] = {}
        self.started = False
        self._closing: asyncio.Future[None] | None = None

    async def start(self, props: dict[str, str]) -> None:
        settings = CheckpointSettings(props)
        self.settings = settings
        flow = settings.flow
        self.flow = flow
        self.groups = [g for g in props.get(TASK_GROUPS, "").split(",") if g]
        self.interval = max(0.0, float(settings["emit.checkpoints.interval.seconds"]))
        self.sync_enabled = bool(settings["sync.group.offsets.enabled"])
        self.sync_interval = float(settings["sync.group.offsets.interval.seconds"])
        self.checkpoints_topic = flow.checkpoints_topic()
        self.next_emit = time.monotonic() + self.interval
        self.next_sync = time.monotonic() + max(self.sync_interval, 0)
        store = OffsetSyncStore(flow.offset_syncs_cluster(), flow.offset_syncs_topic())
        await store.start()
        self.store = store
        deadline = time.monotonic() + flow.admin_timeout
        wanted = set(self.groups)
        # Checkpoints already written: never emit one that moves a group backwards.
        for checkpoint in await read_checkpoints(flow.target, self.checkpoints_topic, deadline):
            if checkpoint.group in wanted:
                self.last.setdefault(checkpoint.group, {})[
                    TopicPartition(checkpoint.topic, checkpoint.partition)] = checkpoint
        if self.stopping.is_set():  # stop() came while starting
            if self.store is store:
                self.store = None
                await store.stop()
            return
        self.started = True
        log.info("checkpointing %d consumer groups %s->%s: %s", len(self.groups),
                 flow.source_alias, flow.target_alias, ",".join(self.groups))

    async def poll(self) -> list[SourceRecord] | None:
        if self.stopping.is_set() or not self.started:
            return None
        now = time.monotonic()
        wait = min(self.next_emit, self.next_sync if self.sync_enabled else self.next_emit) - now
        if wait > 0:
            await asyncio.sleep(min(wait, 0.5))
            return None
        records: list[SourceRecord] = []
        if time.monotonic() >= self.next_emit:
            self.next_emit = time.monotonic() + self.interval
            try:
                records = await self.checkpoint_records()
            except Exception as exc:  # noqa: BLE001 - Kafka logs and tries next round
                log.warning("Failure polling consumer state for checkpoints: %s",
                            mm_admin.describe_error(exc))
        if self.sync_enabled and self.sync_interval >= 0 and time.monotonic() >= self.next_sync:
            self.next_sync = time.monotonic() + self.sync_interval
            try:
                await self.sync_group_offsets()
            except Exception as exc:  # noqa: BLE001
                log.warning("Failure syncing consumer group offsets to %s: %s",
                            self.flow.target_alias, mm_admin.describe_error(exc))
        return records or None

    def rename(self, tp: TopicPartition) -> TopicPartition:
        """The replica of source partition ``tp`` on the target (Kafka's renameTopicPartition:
        a topic that came from the target maps back to its original name)."""
        policy, flow = self.flow.policy, self.flow
        if policy.topic_source(tp.topic) == flow.target_alias:
            return TopicPartition(policy.original_topic(tp.topic), tp.partition)
        return TopicPartition(policy.format_remote_topic(flow.source_alias, tp.topic),
                              tp.partition)

    async def checkpoint_records(self) -> list[SourceRecord]:
        store = self.store
        assert store is not None
        await store.catch_up(time.monotonic() + self.flow.admin_timeout)
        timestamp = int(time.time() * 1000)
        out = []
        async with mm_admin.admin_client(self.flow.source) as admin:
            for group in self.groups:
                offsets = await mm_admin.group_offsets(admin, group)
                for tp, (upstream, metadata) in sorted(offsets.items()):
                    if not self.settings.topic_filter(tp.topic):
                        continue
                    downstream = store.translate(tp, upstream)
                    if downstream is None or downstream < 0:
                        continue
                    renamed = self.rename(tp)
                    checkpoint = Checkpoint(group, renamed.topic, renamed.partition, upstream,
                                            downstream, metadata)
                    if not self._more_recent(checkpoint):
                        continue
                    self.last.setdefault(group, {})[renamed] = checkpoint
                    out.append(SourceRecord(
                        checkpoint.connect_partition(), {"offset": 0}, self.checkpoints_topic, 0,
                        Schema.BYTES_SCHEMA, checkpoint.record_key(), Schema.BYTES_SCHEMA,
                        checkpoint.record_value(), timestamp))
        return out

    def _more_recent(self, checkpoint: Checkpoint) -> bool:
        """Kafka's checkpointIsMoreRecent: emit the first, an upstream rewind (the group was
        reset) or a downstream advance; never a downstream rewind nor a repeat."""
        previous = self.last.get(checkpoint.group, {}).get(
            TopicPartition(checkpoint.topic, checkpoint.partition))
        if previous is None:
            return True
        if checkpoint.upstream_offset < previous.upstream_offset:
            return True
        return checkpoint.downstream_offset > previous.downstream_offset

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        partition = record.source_partition or {}
        CHECKPOINT_METRICS.checkpoint(
            self.flow.source_alias, self.flow.target_alias, str(partition.get("group")),
            str(partition.get("topic")), int(partition.get("partition", 0)),
            int(time.time() * 1000) - (record.timestamp or 0))

    async def sync_group_offsets(self) -> None:
        """Commit the checkpointed offsets to the target's groups that have no active member
        (Kafka syncs only EMPTY groups and ones that do not exist there yet), never moving a
        group's offset backwards."""
        async with mm_admin.admin_client(self.flow.target) as admin:
            for group, checkpoints in self.last.items():
                if not checkpoints:
                    continue
                state, members = await mm_admin.group_state(admin, group)
                if members:
                    continue
                current = await mm_admin.group_offsets(admin, group) \
                    if state not in ("Dead",) else {}
                wanted = {}
                for tp, checkpoint in checkpoints.items():
                    have = current.get(tp)
                    if have is not None and have[0] >= checkpoint.downstream_offset:
                        continue
                    wanted[tp] = checkpoint.downstream_offset
                if wanted:
                    try:
                        await mm_admin.commit_group_offsets(admin, group, wanted)
                    except Exception as exc:  # noqa: BLE001 - a consumer joined meanwhile
                        log.warning("Unable to sync offsets for consumer group %s: %s", group,
                                    mm_admin.describe_error(exc))

    async def stop(self) -> None:
        self.stopping.set()
        await self._close()

    async def commit(self) -> None:
        if self.stopping.is_set():  # the last call after stop(): wait until it closed
            await self._close()

    async def _close(self) -> None:
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_now())
        await asyncio.shield(self._closing)

    async def _close_now(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            await store.stop()


__all__ = ["CONFIG_DEF", "MirrorCheckpointConnector", "MirrorCheckpointTask", "OffsetSyncStore",
           "read_checkpoints"]
