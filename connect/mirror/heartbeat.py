"""MirrorHeartbeatConnector: a heartbeat record (Kafka's format) every
``emit.heartbeats.interval.seconds`` on the target's ``heartbeats`` topic. Replicated onward, the
heartbeats show which clusters a cluster receives from and how many hops away they are
(Kafka's MirrorClient.upstreamClusters / replicationHops)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from connect.api import SourceConnector, SourceTask
from connect.config_def import ConfigDef, ConfigType, Importance
from connect.data import Schema
from connect.mirror import admin as mm_admin
from connect.mirror.config import base_config_def, flow_config, replication_factor
from connect.mirror.formats import Heartbeat
from connect.mirror.scheduler import Scheduler
from connect.records import SourceRecord

CONFIG_DEF: ConfigDef = (
    base_config_def()
    .define("emit.heartbeats.enabled", ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to emit heartbeats to target cluster.")
    .define("emit.heartbeats.interval.seconds", ConfigType.LONG, 1, None, Importance.LOW,
            "Frequency of heartbeats.")
    .define("heartbeats.topic.replication.factor", ConfigType.SHORT, 3, replication_factor,
            Importance.LOW, "Replication factor for heartbeats topic.")
)


def _parse(props: dict[str, str]) -> tuple[dict[str, Any], Any]:
    parsed = CONFIG_DEF.parse({k: v for k, v in props.items() if k in CONFIG_DEF.names()})
    return parsed, flow_config(props, parsed)


class MirrorHeartbeatConnector(SourceConnector):
    """Emits whether or not the flow's ``enabled`` is set, as Kafka's does: heartbeats flow
    in both directions so each side can see the other."""

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.parsed, flow = _parse(props)
        if not self.emits():
            return
        scheduler = Scheduler(f"MirrorHeartbeatConnector-{flow.source_alias}->"
                              f"{flow.target_alias}", flow.admin_timeout)
        try:
            scheduler.run(lambda: mm_admin.ensure_compacted_topic(
                flow.target, flow.policy.heartbeats_topic(),
                self.parsed["heartbeats.topic.replication.factor"]),
                "creating the heartbeats topic")
        finally:
            scheduler.close()

    def emits(self) -> bool:
        return bool(self.parsed["emit.heartbeats.enabled"]) and \
            self.parsed["emit.heartbeats.interval.seconds"] >= 0

    def task_class(self) -> type:
        return MirrorHeartbeatTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)] if self.emits() else []  # one task is enough

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def alter_offsets(self, props: dict[str, str], offsets: list) -> bool:
        return True


class MirrorHeartbeatTask(SourceTask):
    def __init__(self) -> None:
        self.stopped = False

    def start(self, props: dict[str, str]) -> None:
        parsed, flow = _parse(props)
        self.source_alias, self.target_alias = flow.source_alias, flow.target_alias
        self.topic = flow.policy.heartbeats_topic()
        self.interval = max(0.05, float(parsed["emit.heartbeats.interval.seconds"]))
        self.next = time.monotonic() + self.interval

    async def poll(self) -> list[SourceRecord] | None:
        wait = self.next - time.monotonic()
        if self.stopped:
            return None
        if wait > 0:
            await asyncio.sleep(min(wait, 0.5))
            return None
        self.next = time.monotonic() + self.interval
        timestamp = int(time.time() * 1000)
        heartbeat = Heartbeat(self.source_alias, self.target_alias, timestamp)
        return [SourceRecord(heartbeat.connect_partition(), {"offset": 0}, self.topic, 0,
                             Schema.BYTES_SCHEMA, heartbeat.record_key(), Schema.BYTES_SCHEMA,
                             heartbeat.record_value(), timestamp)]

    def stop(self) -> None:
        self.stopped = True


__all__ = ["CONFIG_DEF", "MirrorHeartbeatConnector", "MirrorHeartbeatTask"]
