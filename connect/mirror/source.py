"""MirrorSourceConnector: replicates topics of the source cluster to the target cluster.

The connector (on a worker whose Kafka is the target) finds the source topics to replicate
(``topics`` / ``topics.exclude``, never internal topics nor a topic that came from the target:
Kafka's loop prevention), creates their replicas with the same partition count and configs,
keeps partitions and configs in step every ``refresh.topics.interval.seconds`` /
``sync.topic.configs.interval.seconds``, and spreads the partitions over its tasks. A task
consumes its partitions from the source and hands each record to the worker unchanged (key,
value, headers, timestamp, partition); once the target acked a record, the task may write an
offset sync (upstream offset -> downstream offset) to ``mm2-offset-syncs.<target>.internal``,
which the checkpoint connector uses to translate consumer group offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from connect.api import ConnectException, SourceConnector, SourceTask
from connect.config_def import ConfigDef, ConfigException, ConfigType, Importance, Range
from connect.data import Schema
from connect.mirror import admin as mm_admin
from connect.mirror.config import (
    CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
    EMIT_OFFSET_SYNCS,
    TOPICS_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    FlowConfig,
    NameFilter,
    base_config_def,
    flow_config,
    replication_factor,
)
from connect.mirror.formats import OffsetSync
from connect.mirror.metrics import SOURCE_METRICS
from connect.mirror.scheduler import Scheduler
from connect.records import ConnectHeaders, Header, SourceRecord
from connect.runtime import clients

log = logging.getLogger("connect.mirror.source")

TASK_PARTITIONS = "task.assigned.partitions"
TASK_INDEX = "task.index"
MAX_PENDING_OFFSET_SYNCS = 100_000


def _use_defaults(name: str, value: Any) -> None:
    if str(value) not in ("source", "target"):
        raise ConfigException(f"Invalid value {value} for configuration {name}: "
                              "String must be one of: source, target")


CONFIG_DEF: ConfigDef = (
    base_config_def()
    .define("topics", ConfigType.LIST, TOPICS_DEFAULT, None, Importance.HIGH,
            "Topics to replicate. Supports comma-separated topic names and regexes.")
    .define("topics.exclude", ConfigType.LIST, TOPICS_EXCLUDE_DEFAULT, None, Importance.HIGH,
            "Excluded topics. Supports comma-separated topic names and regexes.")
    .define("config.properties.exclude", ConfigType.LIST, CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
            None, Importance.HIGH, "Topic config properties that should not be replicated.")
    .define("use.defaults.from", ConfigType.STRING, "target", _use_defaults, Importance.MEDIUM,
            "Which cluster's defaults (source or target) to use for topic configs that have "
            "default values.")
    .define("refresh.topics.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to periodically check for new topics and partitions.")
    .define("refresh.topics.interval.seconds", ConfigType.LONG, 600, None, Importance.LOW,
            "Frequency of topic refresh.")
    .define("sync.topic.configs.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to periodically configure remote topics to match their corresponding "
            "upstream topics.")
    .define("sync.topic.configs.interval.seconds", ConfigType.LONG, 600, None, Importance.LOW,
            "Frequency of topic config sync.")
    .define("sync.topic.acls.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to periodically configure remote topic ACLs to match their corresponding "
            "upstream topics.")
    .define("sync.topic.acls.interval.seconds", ConfigType.LONG, 600, None, Importance.LOW,
            "Frequency of topic ACL sync.")
    .define("replication.factor", ConfigType.INT, 2, replication_factor, Importance.LOW,
            "Replication factor for newly created remote topics.")
    .define("offset-syncs.topic.replication.factor", ConfigType.SHORT, 3, replication_factor,
            Importance.LOW, "Replication factor for the offset-syncs topic.")
    .define("offset.lag.max", ConfigType.LONG, 100, Range.at_least(0), Importance.LOW,
            "How out-of-sync a remote partition can be before it is resynced.")
    .define("heartbeats.replication.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to replicate the heartbeats topics even when the topic filter does not "
            "include them.")
    .define(EMIT_OFFSET_SYNCS, ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to store the new offset of the replicated records in the offset-syncs "
            "topic.")
    .define("consumer.poll.timeout.ms", ConfigType.LONG, 1000, Range.at_least(1),
            Importance.LOW, "Timeout when polling the source cluster.")
)


def encode_partitions(partitions: list[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in partitions)


def decode_partitions(text: str) -> list[TopicPartition]:
    out = []
    for item in (text or "").split(","):
        if item:
            topic, _, partition = item.rpartition("-")
            out.append(TopicPartition(topic, int(partition)))
    return out


class SourceSettings:
    """The parsed config of the connector and its tasks."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        self.parsed = CONFIG_DEF.parse({k: v for k, v in props.items()
                                        if k in CONFIG_DEF.names()})
        self.flow: FlowConfig = flow_config(props, self.parsed)
        self.topic_filter = NameFilter(self.parsed["topics"], self.parsed["topics.exclude"])
        self.property_filter = NameFilter(None, self.parsed["config.properties.exclude"])

    def __getitem__(self, key: str) -> Any:
        return self.parsed[key]


class MirrorSourceConnector(SourceConnector):
    def __init__(self) -> None:
        self.settings: SourceSettings | None = None
        self.scheduler: Scheduler | None = None
        self.known_source: dict[str, int] = {}
        self.known_target: dict[str, int] = {}
        self._lock = threading.Lock()
        self._no_authorizer_logged = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, props: dict[str, str]) -> None:
        settings = SourceSettings(props)
        self.settings = settings
        if not settings.flow.enabled:
            return
        flow = settings.flow
        self.scheduler = Scheduler(f"MirrorSourceConnector-{flow.source_alias}->"
                                   f"{flow.target_alias}", flow.admin_timeout)
        try:
            if settings[EMIT_OFFSET_SYNCS]:
                self.scheduler.run(lambda: mm_admin.ensure_compacted_topic(
                    flow.offset_syncs_cluster(), flow.offset_syncs_topic(),
                    settings["offset-syncs.topic.replication.factor"]),
                    "creating the offset-syncs topic")
            self.scheduler.run(self._refresh_topic_partitions, "loading topic-partitions")
        except BaseException:
            self.stop()
            raise
        if settings["refresh.topics.enabled"]:
            self.scheduler.repeat(self._refresh_and_reconfigure,
                                  settings["refresh.topics.interval.seconds"], "refreshing topics")
        if settings["sync.topic.acls.enabled"]:
            self.scheduler.repeat(self._sync_topic_acls,
                                  settings["sync.topic.acls.interval.seconds"],
                                  "syncing topic ACLs", delayed=False)
        if settings["sync.topic.configs.enabled"]:
            self.scheduler.repeat(self._sync_topic_configs,
                                  settings["sync.topic.configs.interval.seconds"],
                                  "syncing topic configs")

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None

    def task_class(self) -> type:
        return MirrorSourceTask

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        settings = self.settings
        if settings is None or not settings.flow.enabled:
            return []
        with self._lock:
            partitions = [TopicPartition(t, p) for t, n in sorted(self.known_source.items())
                          for p in range(n)]
        if not partitions:
            return []
        count = min(max_tasks, len(partitions))
        groups: list[list[TopicPartition]] = [[] for _ in range(count)]
        for i, tp in enumerate(partitions):
            groups[i % count].append(tp)
        return [{**settings.props, TASK_PARTITIONS: encode_partitions(group),
                 TASK_INDEX: str(i)} for i, group in enumerate(groups)]

    def exactly_once_support(self, props: dict[str, str]) -> str | None:
        isolation = props.get("source.consumer.isolation.level") or \
            props.get("consumer.isolation.level")
        return "SUPPORTED" if isolation == "read_committed" else "UNSUPPORTED"

    def alter_offsets(self, props: dict[str, str], offsets: list) -> bool:
        for partition, offset in offsets:
            if offset is None:
                continue
            for key in ("cluster", "topic"):
                if not isinstance(partition.get(key), str):
                    raise ConnectException(f"Source partition must have a string '{key}'")
            if not isinstance(partition.get("partition"), int):
                raise ConnectException("Source partition must have an integer 'partition'")
            value = offset.get("offset")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConnectException("Source offset 'offset' must be a non-negative integer")
        return True

    # -- topics --------------------------------------------------------------------------------
    def should_replicate(self, topic: str) -> bool:
        """Kafka's shouldReplicateTopic: matched by the filter (or a heartbeats topic), not an
        internal topic, and not a topic that came from the target (a cycle)."""
        settings = self.settings
        assert settings is not None
        policy = settings.flow.policy
        heartbeats = settings["heartbeats.replication.enabled"] and \
            policy.is_heartbeats_topic(topic)
        return (settings.topic_filter(topic) or heartbeats) \
            and not policy.is_internal_topic(topic) and not self.is_cycle(topic)

    def is_cycle(self, topic: str) -> bool:
        assert self.settings is not None
        policy, target = self.settings.flow.policy, self.settings.flow.target_alias
        seen = set()
        while True:
            source = policy.topic_source(topic)
            if source is None:
                return False
            if source == target:
                return True
            upstream = policy.upstream_topic(topic)
            if upstream is None or upstream == topic or upstream in seen:
                return False
            seen.add(topic)
            topic = upstream

    def remote_topic(self, topic: str) -> str:
        assert self.settings is not None
        return self.settings.flow.policy.format_remote_topic(self.settings.flow.source_alias,
                                                             topic)

    async def _refresh_and_reconfigure(self) -> None:
        if await self._refresh_topic_partitions():
            self.context.request_task_reconfiguration()

    async def _refresh_topic_partitions(self) -> bool:
        """Find source topics and partitions; create what the target lacks. True if the set of
        source partitions changed."""
        settings = self.settings
        assert settings is not None
        flow = settings.flow
        async with mm_admin.admin_client(flow.source) as source_admin:
            topics = {t for t in await mm_admin.list_topics(source_admin)
                      if self.should_replicate(t)}
            source = await mm_admin.partition_counts(source_admin, topics)
            async with mm_admin.admin_client(flow.target) as target_admin:
                target_topics = await mm_admin.list_topics(target_admin)
                remote = {t: self.remote_topic(t) for t in source}
                target = await mm_admin.partition_counts(
                    target_admin, [r for r in remote.values() if r in target_topics])
                await self._create_missing(source_admin, target_admin, source, target, remote)
                target = await mm_admin.partition_counts(target_admin, remote.values())
        short = {t: (target.get(remote[t], 0), n) for t, n in source.items()
                 if target.get(remote[t], 0) < n}
        if short:
            topic, (have, want) = sorted(short.items())[0]
            raise ConnectException(
                f"target topic {remote[topic]} on cluster {flow.target_alias} has {have} "
                f"partition(s), fewer than the {want} of {topic} on {flow.source_alias}, and "
                f"could not be given more; its records are not replicated")
        with self._lock:
            changed = source != self.known_source
            self.known_source, self.known_target = source, target
        return changed

    async def _create_missing(self, source_admin: Any, target_admin: Any, source: dict[str, int],
                              target: dict[str, int], remote: dict[str, str]) -> None:
        settings = self.settings
        assert settings is not None
        flow = settings.flow
        new = [t for t in source if remote[t] not in target]
        if new:
            configs = await mm_admin.topic_configs(source_admin, new)
            brokers = await mm_admin.broker_count(target_admin)
            topics = [mm_admin.new_topic(remote[t], source[t], settings["replication.factor"],
                                         brokers, self.target_configs(configs.get(t, []), False))
                      for t in sorted(new)]
            failures = await mm_admin.create_topics(target_admin, topics)
            for topic in topics:
                if topic.name in failures:
                    log.warning("Could not create topic %s on %s: %s", topic.name,
                                flow.target_alias, failures[topic.name])
                else:
                    log.info("Created remote topic %s with %d partitions.", topic.name,
                             topic.num_partitions)
        grow = {remote[t]: n for t, n in source.items()
                if remote[t] in target and target[remote[t]] < n}
        if grow:
            for topic, count in sorted(grow.items()):
                log.info("Target topic %s has %d partition(s), its source %d: adding %d.",
                         topic, target[topic], count, count - target[topic])
            for topic, error in (await mm_admin.add_partitions(target_admin, grow)).items():
                log.warning("Could not add partitions to %s on %s: %s", topic,
                            flow.target_alias, error)

    # -- ACLs ----------------------------------------------------------------------------------
    async def _sync_topic_acls(self) -> None:
        """Kafka's syncTopicAcls: literal topic ACLs of replicated topics, read access only (an
        ALLOW ALL becomes ALLOW READ, an ALLOW WRITE is not copied: only MirrorMaker writes a
        replica), created on the replica."""
        settings = self.settings
        assert settings is not None
        flow = settings.flow
        async with mm_admin.admin_client(flow.source) as source_admin:
            try:
                bindings = await mm_admin.topic_acls(source_admin)
            except mm_admin.SecurityDisabled:
                if not self._no_authorizer_logged:
                    self._no_authorizer_logged = True
                    log.info("No ACL authorizer is configured on the source cluster %s, so no "
                             "topic ACL syncing will take place. Consider setting "
                             "sync.topic.acls.enabled=false.", flow.source_alias)
                return
        wanted = []
        for b in bindings:
            if b.pattern != mm_admin.PATTERN_LITERAL or not self.should_replicate(b.name):
                continue
            if b.permission == mm_admin.PERMISSION_ALLOW and \
                    b.operation == mm_admin.OPERATION_WRITE:
                continue
            operation = mm_admin.OPERATION_READ if (
                b.permission == mm_admin.PERMISSION_ALLOW
                and b.operation == mm_admin.OPERATION_ALL) else b.operation
            wanted.append(mm_admin.AclBinding(b.resource_type, self.remote_topic(b.name),
                                              mm_admin.PATTERN_LITERAL, b.principal, b.host,
                                              operation, b.permission))
        if not wanted:
            return
        async with mm_admin.admin_client(flow.target) as target_admin:
            for binding, error in (await mm_admin.create_acls(target_admin, wanted)).items():
                log.warning("Could not sync ACL of topic %s: %s", binding.name, error)

    # -- configs -------------------------------------------------------------------------------
    def target_configs(self, entries: list[mm_admin.ConfigEntry],
                       incremental: bool) -> dict[str, str]:
        """Kafka's targetConfig: non-default (or, with use.defaults.from=source, every)
        property that is writable, not sensitive, not from the broker's static config and not
        excluded by config.properties.exclude."""
        settings = self.settings
        assert settings is not None
        source_defaults = settings["use.defaults.from"] == "source"
        out = {}
        for entry in entries:
            if entry.value is None or entry.read_only or entry.sensitive:
                continue
            if entry.source == 4:  # STATIC_BROKER_CONFIG
                continue
            if entry.is_default and not (source_defaults or incremental):
                continue
            if entry.is_default and incremental and not source_defaults:
                continue  # reset to the target's default: left out of the overrides
            if not settings.property_filter(entry.name):
                continue
            out[entry.name] = entry.value
        return out

    async def _sync_topic_configs(self) -> None:
        """Make each replica's overrides what its source topic's are (keeping the target's own
        values of excluded properties), as Kafka's incremental sync leaves them."""
        settings = self.settings
        assert settings is not None
        flow = settings.flow
        with self._lock:
            replicated = {t: self.remote_topic(t) for t in self.known_source
                          if self.remote_topic(t) in self.known_target}
        if not replicated:
            return
        async with mm_admin.admin_client(flow.source) as source_admin:
            source = await mm_admin.topic_configs(source_admin, replicated)
        async with mm_admin.admin_client(flow.target) as target_admin:
            current = await mm_admin.topic_configs(target_admin, replicated.values())
            changes = {}
            for topic, remote in replicated.items():
                if topic not in source or remote not in current:
                    continue
                existing = mm_admin.overrides_of(current[remote])
                kept = {k: v for k, v in existing.items() if not settings.property_filter(k)}
                wanted = {**kept, **self.target_configs(source[topic], True)}
                if wanted != existing:
                    changes[remote] = wanted
            for topic, error in (await mm_admin.set_topic_overrides(target_admin,
                                                                     changes)).items():
                log.warning("Could not alter configuration of topic %s: %s", topic, error)


class PartitionState:
    """When to write an offset sync (Kafka's OffsetSyncWriter.PartitionState): the first record
    of this task's life, once the last sync is ``offset.lag.max`` behind, after a gap upstream
    (compaction, transaction markers) or a truncation downstream."""

    __slots__ = ("previous_upstream", "previous_downstream", "last_sync_downstream", "max_lag",
                 "should_sync")

    def __init__(self, max_lag: int) -> None:
        self.previous_upstream = -1
        self.previous_downstream = -1
        self.last_sync_downstream = -1
        self.max_lag = max_lag
        self.should_sync = False

    def update(self, upstream: int, downstream: int) -> bool:
        if (self.last_sync_downstream == -1
                or downstream - (self.last_sync_downstream + 1) >= self.max_lag
                or upstream - self.previous_upstream != 1
                or downstream < self.previous_downstream):
            self.last_sync_downstream = downstream
            self.should_sync = True
        self.previous_upstream = upstream
        self.previous_downstream = downstream
        return self.should_sync


def _log_sync_failure(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("Failure sending offset sync: %s", future.exception())


class MirrorSourceTask(SourceTask):
    """Consumes its partitions from the source cluster; ``poll`` returns the records as they
    are, addressed to the replica topic and the same partition."""

    def __init__(self) -> None:
        self.stopping = False
        self.consumer: AIOKafkaConsumer | None = None
        self.sync_producer: AIOKafkaProducer | None = None
        self.states: dict[tuple[str, int], PartitionState] = {}
        # The latest acked (upstream, downstream) per partition not yet synced (Kafka's delayed
        # syncs, written at the next commit).
        self.delayed: dict[tuple[str, int], tuple[int, int]] = {}
        # In order: the worker reports acks in bursts (at each offset flush), and every
        # sync of a burst is kept, so translation has one per offset.lag.max records.
        self.pending: list[OffsetSync] = []
        self._sync_lock = threading.Lock()
        self._remote: dict[str, str] = {}
        self._partitions: dict[tuple[str, int], dict[str, Any]] = {}
        self._closing: asyncio.Future[None] | None = None

    async def start(self, props: dict[str, str]) -> None:
        settings = SourceSettings(props)
        flow = settings.flow
        self.flow = flow
        self.source_alias = flow.source_alias
        self.max_lag = int(settings["offset.lag.max"])
        self.poll_timeout_ms = int(min(settings["consumer.poll.timeout.ms"], 500))
        self.partitions = decode_partitions(props.get(TASK_PARTITIONS, ""))
        self.offset_syncs_topic = flow.offset_syncs_topic()
        self.metrics = SOURCE_METRICS.for_flow(flow.source_alias, flow.target_alias)
        overrides = flow.source.consumer_overrides()
        overrides.setdefault("auto.offset.reset", "earliest")
        consumer = clients.consumer(flow.source.bootstrap, overrides,
                                    client_id=f"mirror-source-{flow.source_alias}->"
                                              f"{flow.target_alias}-{props.get(TASK_INDEX, 0)}")
        await consumer.start()
        self.consumer = consumer
        if settings[EMIT_OFFSET_SYNCS]:
            cluster = flow.offset_syncs_cluster()
            producer = clients.producer(cluster.bootstrap, cluster.producer_overrides())
            await producer.start()
            self.sync_producer = producer
        consumer.assign(self.partitions)
        reader = self.context.offset_storage_reader()
        for tp in self.partitions:
            stored = reader.offset(self._partition(tp.topic, tp.partition))
            offset = (stored or {}).get("offset")
            if isinstance(offset, int) and offset >= 0:
                consumer.seek(tp, offset + 1)
        if self.stopping:  # stop() came while starting: it found nothing to close yet
            await self._close_clients()
            return
        log.info("replicating %d topic-partitions %s->%s: %s", len(self.partitions),
                 flow.source_alias, flow.target_alias, encode_partitions(self.partitions))

    def _partition(self, topic: str, partition: int) -> dict[str, Any]:
        key = (topic, partition)
        cached = self._partitions.get(key)
        if cached is None:
            cached = {"cluster": self.source_alias, "partition": partition, "topic": topic}
            self._partitions[key] = cached
        return cached

    def _remote_topic(self, topic: str) -> str:
        remote = self._remote.get(topic)
        if remote is None:
            remote = self.flow.policy.format_remote_topic(self.source_alias, topic)
            self._remote[topic] = remote
        return remote

    async def poll(self) -> list[SourceRecord] | None:
        consumer = self.consumer
        if self.stopping or consumer is None:
            return None
        await self._fire_offset_syncs()
        try:
            batches = await consumer.getmany(timeout_ms=self.poll_timeout_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - Kafka's task logs and polls again
            if self.stopping:
                return None
            log.warning("Failure during poll from %s: %s", self.source_alias, exc)
            return None
        if not batches:
            return None
        now = int(time.time() * 1000)
        out: list[SourceRecord] = []
        bytes_schema = Schema.OPTIONAL_BYTES_SCHEMA
        metrics = self.metrics
        for tp, messages in batches.items():
            remote = self._remote_topic(tp.topic)
            partition = self._partition(tp.topic, tp.partition)
            size = 0
            for m in messages:
                headers = ConnectHeaders([Header(k, bytes_schema, v) for k, v in m.headers]) \
                    if m.headers else None
                out.append(SourceRecord(partition, {"offset": m.offset}, remote, tp.partition,
                                        bytes_schema, m.key, bytes_schema, m.value,
                                        m.timestamp, headers))
                size += len(m.value) if m.value is not None else 0
            metrics.polled(remote, tp.partition, len(messages), size,
                           now - messages[-1].timestamp)
        return out or None

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        """The target acked ``record`` at ``metadata.offset``: maybe queue an offset sync.
        Called for every record, so it keeps to plain tuples until a sync is due."""
        if self.stopping or metadata is None:
            return
        source = record.source_partition
        key = (source["topic"], source["partition"])
        upstream = record.source_offset["offset"]
        downstream = metadata.offset
        self.metrics.replicated(record.topic, record.kafka_partition,
                                int(time.time() * 1000) - (record.timestamp or 0))
        if self.sync_producer is None:
            return
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = PartitionState(self.max_lag)
        with self._sync_lock:
            if state.update(upstream, downstream):
                self.delayed.pop(key, None)
                if len(self.pending) < MAX_PENDING_OFFSET_SYNCS:
                    self.pending.append(OffsetSync(key[0], key[1], upstream, downstream))
                state.should_sync = False
            else:
                self.delayed[key] = (upstream, downstream)

    async def commit(self) -> None:
        """After the worker stored source offsets: the last record of each partition gets a
        sync too (Kafka's promoteDelayedOffsetSyncs), so translation is exact at rest."""
        if self.stopping:
            await self._close_clients()
            return
        with self._sync_lock:
            self.pending.extend(OffsetSync(topic, partition, upstream, downstream)
                                for (topic, partition), (upstream, downstream)
                                in self.delayed.items())
            self.delayed.clear()
        await self._fire_offset_syncs()

    async def _fire_offset_syncs(self) -> None:
        producer = self.sync_producer
        if producer is None or self.stopping:
            return
        with self._sync_lock:
            syncs, self.pending = self.pending, []
        for sync in syncs:
            try:
                future = await producer.send(self.offset_syncs_topic, sync.record_value(),
                                             key=sync.record_key(), partition=0)
            except Exception as exc:  # noqa: BLE001 - a lost sync only coarsens translation
                log.error("Failure sending offset sync: %s", exc)
                return
            future.add_done_callback(_log_sync_failure)

    async def stop(self) -> None:
        self.stopping = True
        await self._close_clients()

    async def _close_clients(self) -> None:
        """Close once; every caller (stop, and the last commit after it) waits for the end,
        so the worker does not end the task's thread half-way through."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_now())
        await asyncio.shield(self._closing)

    async def _close_now(self) -> None:
        consumer, self.consumer = self.consumer, None
        producer, self.sync_producer = self.sync_producer, None
        try:
            if consumer is not None:
                await consumer.stop()
        finally:
            if producer is not None:
                with contextlib.suppress(Exception):  # closing anyway
                    await asyncio.wait_for(producer.flush(), 5)
                await producer.stop()


__all__ = ["CONFIG_DEF", "MirrorSourceConnector", "MirrorSourceTask", "PartitionState"]
