"""What the console reads from and writes to the cluster, as any Kafka client would.

One admin client and one consumer (ListOffsets only, never joins a group) live as long as the
console; every page asks in batches: one DescribeTopics for all topics, one ListOffsets per
leader, one ListGroups and one DescribeGroups per broker (the broker that lists a group is its
coordinator), so 1,000 topics or groups cost a handful of requests, not one each.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.protocol.offset import OffsetRequest

from ..cli.client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    connection_kwargs,
    error_message,
    start_client,
)
from ..kafka import admin as kadmin
from ..kafka import clients
from ..kafka.internals import send_to_node
from ..kafka.requests import DescribeGroupsV2

EARLIEST, LATEST = -2, -1  # ListOffsets timestamps for the log start and end
SECRET_MARKERS = ("password", "secret", "jaas", "key.password", "token")
# DescribeConfigs' ConfigSource (KIP-226)
CONFIG_SOURCES = {1: "topic", 2: "broker (dynamic)", 3: "cluster default (dynamic)",
                  4: "broker (static)", 5: "default", 6: "logger", 7: "client metrics",
                  8: "group"}
PEEK_DEADLINE_S = 5.0  # how long a view waits for the oldest unconsumed records
LAG_HISTORY = 60  # samples kept per group for the lag chart (one per page/API view)


def _leaders(described: list[dict[str, Any]]) -> dict[TopicPartition, int]:
    return {TopicPartition(t["topic"], p["partition"]): p["leader"]
            for t in described for p in t["partitions"]}


class ConsoleError(Exception):
    """A failure shown to the user as one line (the broker's own message when it gave one)."""


def is_secret(name: str) -> bool:
    """Config names whose values the console never renders (sasl.jaas.config, ssl.*password)."""
    return any(marker in name.lower() for marker in SECRET_MARKERS)


@dataclass
class Cluster:
    """The console's clients; started once, shared by every request."""

    args: argparse.Namespace
    admin: AIOKafkaAdminClient | None = None
    consumer: AIOKafkaConsumer | None = None
    lag_history: dict[str, deque[tuple[float, int]]] = field(default_factory=dict)
    _peek: asyncio.Lock = field(default_factory=asyncio.Lock)  # one position set at a time

    async def start(self) -> None:
        self.admin = clients.admin(connection_kwargs(self.args, "admin"),
                                   request_timeout_ms=REQUEST_TIMEOUT_MS)
        self.consumer = clients.consumer(connection_kwargs(self.args, "consumer"),
                                         enable_auto_commit=False,
                                         request_timeout_ms=REQUEST_TIMEOUT_MS)
        try:
            await start_client(self.admin, self.args.bootstrap_servers)
            await start_client(self.consumer, self.args.bootstrap_servers)
        except CliError as exc:
            await self.stop()
            raise ConsoleError(str(exc)) from None

    async def stop(self) -> None:
        if self.admin is not None:
            await self.admin.close()
        if self.consumer is not None:
            await self.consumer.stop()

    # --- topics ---------------------------------------------------------------------------

    async def topics(self) -> list[dict[str, Any]]:
        """Every topic with its partition count and message count (end - start offsets)."""
        assert self.admin is not None
        names = sorted(await self.admin.list_topics())
        if not names:
            return []
        described = await self.admin.describe_topics(names)
        tps = [TopicPartition(t["topic"], p["partition"])
               for t in described if not t["error_code"] for p in t["partitions"]]
        starts, ends = await self._offsets(tps, _leaders(described))
        rows = []
        for t in sorted(described, key=lambda t: t["topic"]):
            parts = [TopicPartition(t["topic"], p["partition"]) for p in t["partitions"]]
            rows.append({
                "name": t["topic"], "internal": bool(t.get("is_internal")),
                "partitions": len(parts),
                "replication": len(t["partitions"][0]["replicas"]) if t["partitions"] else 0,
                "messages": sum(ends.get(tp, 0) - starts.get(tp, 0) for tp in parts),
                "error": error_message(t["error_code"]) if t["error_code"] else None,
            })
        return rows

    async def _offsets(self, tps: list[TopicPartition],
                       leaders: dict[TopicPartition, int] | None = None,
                       ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(log start, log end) of each partition: one Metadata for the leaders, then two
        ListOffsets per leader (earliest, latest), whatever the number of partitions."""
        assert self.admin is not None
        if not tps:
            return {}, {}
        if leaders is None:
            leaders = _leaders(await self.admin.describe_topics(sorted({tp.topic for tp in tps})))
        by_leader: dict[int, dict[str, list[int]]] = {}
        for tp in tps:
            if leaders.get(tp, -1) >= 0:
                by_leader.setdefault(leaders[tp], {}).setdefault(tp.topic, []).append(
                    tp.partition)
        found: tuple[dict[TopicPartition, int], dict[TopicPartition, int]] = ({}, {})
        for which, timestamp in ((0, EARLIEST), (1, LATEST)):
            for node, parts in by_leader.items():
                response = await send_to_node(self.admin, node, OffsetRequest(
                    -1, 0, [(t, [(p, timestamp) for p in ps]) for t, ps in parts.items()]))
                for topic, partitions in response.topics:
                    for partition, error, *_rest in partitions:
                        if not error:
                            found[which][TopicPartition(topic, partition)] = _rest[1]
        return found

    async def topic_names(self) -> set[str]:
        assert self.admin is not None
        return set(await self.admin.list_topics())

    async def topic(self, name: str) -> dict[str, Any]:
        """Partitions (leader, replicas, ISR, offsets) and every config with its source."""
        assert self.admin is not None
        if name not in await self.admin.list_topics():  # Metadata for it could auto-create it
            raise ConsoleError(f"topic {name!r} does not exist")
        (described,) = await self.admin.describe_topics([name])
        if described["error_code"]:
            raise ConsoleError(f"cannot describe topic {name!r}: "
                               f"{error_message(described['error_code'])}")
        partitions = sorted(described["partitions"], key=lambda p: p["partition"])
        tps = [TopicPartition(name, p["partition"]) for p in partitions]
        starts, ends = await self._offsets(tps)
        return {
            "name": name,
            "partitions": [{"partition": p["partition"], "leader": p["leader"],
                            "replicas": p["replicas"], "isr": p["isr"],
                            "start": starts[tp], "end": ends[tp]}
                           for p, tp in zip(partitions, tps, strict=True)],
            "configs": await self.topic_configs(name),
        }

    async def topic_configs(self, name: str) -> list[dict[str, Any]]:
        return await self._configs(ConfigResource(ConfigResourceType.TOPIC, name))

    async def broker_configs(self, node_id: int) -> list[dict[str, Any]]:
        """The broker's configs (DescribeConfigs is answered by that broker itself)."""
        return await self._configs(ConfigResource(ConfigResourceType.BROKER, str(node_id)))

    async def _configs(self, resource: ConfigResource) -> list[dict[str, Any]]:
        """Each config with its value (None when secret), whether it is sensitive, and
        whether it is set on the resource itself (``override``)."""
        assert self.admin is not None
        responses = await self.admin.describe_configs([resource])
        configs = []
        for response in responses:
            for resource in response.to_object()["resources"]:
                if resource["error_code"]:
                    raise ConsoleError(error_message(resource["error_code"],
                                                     resource["error_message"]))
                for entry in resource["config_entries"]:
                    key = entry["config_names"]
                    secret = is_secret(key) or entry.get("is_sensitive")
                    source = entry.get("config_source")
                    configs.append({
                        "name": key,
                        "value": None if secret else entry["config_value"],
                        "sensitive": bool(secret),
                        "override": source == 1 if source is not None
                        else not entry.get("is_default", True),
                        "source": CONFIG_SOURCES.get(source, "") if source is not None
                        else ("default" if entry.get("is_default") else ""),
                    })
        return sorted(configs, key=lambda c: c["name"])

    async def create_topic(self, name: str, partitions: int, replication: int,
                           configs: dict[str, str]) -> None:
        assert self.admin is not None
        response = await self.admin.create_topics(
            [NewTopic(name, partitions, replication, topic_configs=configs)])
        for topic, code, *rest in response.topic_errors:
            if code:
                raise ConsoleError(f"cannot create topic {topic!r}: "
                                   f"{error_message(code, rest[0] if rest else None)}")

    async def delete_topic(self, name: str) -> None:
        assert self.admin is not None
        response = await self.admin.delete_topics([name])
        for topic, code, *rest in response.topic_error_codes:
            if code:
                raise ConsoleError(f"cannot delete topic {topic!r}: "
                                   f"{error_message(code, rest[0] if rest else None)}")

    async def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """Set (or with None, remove) one override through IncrementalAlterConfigs: the other
        overrides, secrets the console never sees included, stay as they are (the legacy
        AlterConfigs would replace them all with what the console sends)."""
        assert self.admin is not None
        code, message = await kadmin.incremental_alter_configs(
            self.admin, ConfigResourceType.TOPIC.value, name, {key: value})
        if code:
            raise ConsoleError(f"cannot alter topic {name!r}: {error_message(code, message)}")

    # --- groups ---------------------------------------------------------------------------

    async def _groups_by_coordinator(self) -> dict[int, list[tuple[str, str]]]:
        assert self.admin is not None
        cluster = await self.admin.describe_cluster()
        return {b["node_id"]: sorted(await self.admin.list_consumer_groups(
            broker_ids=[b["node_id"]])) for b in cluster["brokers"]}

    async def describe_all_groups(self) -> list[dict[str, Any]]:
        """Every group as DescribeGroups v2 answers it (members with their metadata), plus
        its coordinator: one DescribeGroups per broker."""
        assert self.admin is not None
        described = []
        for node, listed in (await self._groups_by_coordinator()).items():
            if not listed:
                continue
            for response in await self._describe_groups([g for g, *_ in listed], node):
                for g in response.to_object()["groups"]:
                    described.append({**g, "coordinator": node})
        return described

    async def groups(self) -> list[dict[str, Any]]:
        """Every group with its state, member count and lag (records): one DescribeGroups and
        one OffsetFetch per coordinator, one ListOffsets per leader for the log ends."""
        described = await self.describe_all_groups()
        by_coordinator: dict[int, list[str]] = {}
        for g in described:
            by_coordinator.setdefault(g["coordinator"], []).append(g["group"])
        lags = await self._group_lags(by_coordinator)
        rows = [{"group": g["group"], "state": g["state"], "protocol_type": g["protocol_type"],
                 "members": len(g["members"]), "coordinator": g["coordinator"],
                 "lag": lags.get(g["group"]),
                 "error": error_message(g["error_code"]) if g["error_code"] else None}
                for g in described]
        return sorted(rows, key=lambda r: r["group"])

    async def _group_lags(self, by_coordinator: dict[int, list[str]]) -> dict[str, int]:
        """Per group, the records between its committed offsets and the log ends (groups
        without a commit are left out)."""
        assert self.admin is not None
        committed: dict[str, dict[TopicPartition, int]] = {}
        for node, groups in by_coordinator.items():
            committed.update(await kadmin.committed_offsets(self.admin, node, groups))
        _starts, ends = await self._offsets(
            sorted({tp for offsets in committed.values() for tp in offsets}))
        return {group: sum(max(ends[tp] - offset, 0) for tp, offset in offsets.items()
                           if tp in ends)
                for group, offsets in committed.items() if offsets}

    async def _describe_groups(self, group_ids: list[str], node: int) -> list[Any]:
        """One DescribeGroups v2 for all of a coordinator's groups."""
        assert self.admin is not None
        return [await send_to_node(self.admin, node, DescribeGroupsV2(group_ids))]

    async def group(self, group_id: str) -> dict[str, Any]:
        """State, members with their assignments, committed offsets, lag per partition."""
        assert self.admin is not None
        responses = await self.admin.describe_consumer_groups([group_id])
        descriptions = [g for r in responses for g in r.to_object()["groups"]]
        if not descriptions:
            raise ConsoleError(f"the broker returned no description for group {group_id!r}")
        d = descriptions[0]
        if d["error_code"]:
            raise ConsoleError(f"cannot describe group {group_id!r}: "
                               f"{error_message(d['error_code'])}")
        members = []
        for m in d["members"]:
            assigned: list[TopicPartition] = []
            raw = m.get("member_assignment")
            if raw and d.get("protocol_type") == "consumer":
                assigned = sorted(ConsumerProtocolMemberAssignment.decode(raw).partitions())
            members.append({"member_id": m["member_id"], "client_id": m["client_id"],
                            "host": m["client_host"],
                            "assignment": [f"{tp.topic}-{tp.partition}" for tp in assigned],
                            "_tps": assigned})
        committed = {tp: meta.offset for tp, meta in
                     (await self.admin.list_consumer_group_offsets(group_id)).items()
                     if meta.offset >= 0}
        if d["state"] == "Dead" and not committed:
            raise ConsoleError(f"consumer group {group_id!r} does not exist")
        existing = set(await self.admin.list_topics())
        owner = {tp: m for m in members for tp in m["_tps"]}
        tps = sorted(set(committed) | set(owner))
        live = [tp for tp in tps if tp.topic in existing]
        starts, ends = await self._offsets(live)
        lagging = {}
        for tp in live:
            current, end = committed.get(tp), ends.get(tp)
            if current is not None and end is not None and end > max(current, starts[tp]):
                lagging[tp] = max(current, starts[tp])
        oldest = await self.record_timestamps(lagging)
        now_ms = time.time() * 1000
        partitions = []
        total = 0
        for tp in tps:
            current, end = committed.get(tp), ends.get(tp)
            lag = end - current if current is not None and end is not None else None
            if lag is not None and lag < 0:
                lag = None
            total += lag or 0
            m = owner.get(tp)
            seconds = None if lag is None else 0.0 if tp not in lagging else \
                max(now_ms - oldest[tp], 0.0) / 1000 if tp in oldest else None
            partitions.append({"topic": tp.topic, "partition": tp.partition, "committed": current,
                               "end": end, "lag": lag, "lag_seconds": seconds,
                               "member": m["member_id"] if m else None})
        for m in members:
            del m["_tps"]
        history = self.lag_history.setdefault(group_id, deque(maxlen=LAG_HISTORY))
        history.append((time.time(), total))
        return {"group": group_id, "state": d["state"], "protocol": d.get("protocol"),
                "protocol_type": d.get("protocol_type"), "members": members,
                "partitions": partitions, "lag": total,
                "lag_seconds": max((p["lag_seconds"] for p in partitions
                                    if p["lag_seconds"] is not None), default=None),
                "lag_history": [{"time": t, "lag": lag} for t, lag in history]}

    async def record_timestamps(self, positions: dict[TopicPartition, int]
                                ) -> dict[TopicPartition, int]:
        """The timestamp of the record at each position (the oldest record a group has not
        consumed: its age is the lag in seconds, as Burrow and Kafka Lag Exporter report it).
        One fetch per leader through the console's consumer; a partition whose record does not
        arrive within the deadline is left out."""
        if not positions:
            return {}
        consumer = self.consumer
        assert consumer is not None
        found: dict[TopicPartition, int] = {}
        async with self._peek:
            consumer.assign(list(positions))
            try:
                for tp, offset in positions.items():
                    consumer.seek(tp, offset)
                pending = set(positions)
                deadline = time.monotonic() + PEEK_DEADLINE_S
                while pending and time.monotonic() < deadline:
                    batches = await consumer.getmany(*pending, timeout_ms=500)
                    for tp, records in batches.items():
                        if records and tp in pending:
                            found[tp] = records[0].timestamp
                            pending.discard(tp)
            finally:
                consumer.assign([])  # no fetching in the background between views
        return found

    async def plan_reset(self, group_id: str, scenario: str, value: int | None
                         ) -> list[dict[str, Any]]:
        """The new offset of each partition the group has committed, as kafka-consumer-groups.sh
        --reset-offsets computes them (--to-earliest/--to-latest/--to-offset/--shift-by/
        --to-datetime as epoch ms), clamped into [log start, log end]. Refused unless the group
        is empty: a live member would overwrite the reset with its next commit."""
        g = await self.group(group_id)
        if g["state"] not in ("Empty", "Dead"):
            raise ConsoleError(f"group {group_id!r} is {g['state']}: offsets can be reset only "
                               "while it has no members (stop its consumers first)")
        tps = [TopicPartition(p["topic"], p["partition"]) for p in g["partitions"]
               if p["end"] is not None]
        starts, ends = await self._offsets(tps)
        current = {TopicPartition(p["topic"], p["partition"]): p["committed"]
                   for p in g["partitions"]}
        by_time: dict[TopicPartition, Any] = {}
        if scenario == "to-datetime":
            assert self.consumer is not None
            by_time = await self.consumer.offsets_for_times({tp: value for tp in tps})
        plan = []
        for tp in tps:
            if scenario == "to-earliest":
                target = starts[tp]
            elif scenario == "to-latest":
                target = ends[tp]
            elif scenario == "to-offset" and value is not None:
                target = value
            elif scenario == "shift-by" and value is not None:
                target = (current[tp] if current[tp] is not None else ends[tp]) + value
            elif scenario == "to-datetime" and value is not None:
                found = by_time.get(tp)
                target = found.offset if found else ends[tp]
            else:
                raise ConsoleError(f"unknown reset {scenario!r} or missing value")
            plan.append({"topic": tp.topic, "partition": tp.partition,
                         "current": current[tp],
                         "new": min(max(target, starts[tp]), ends[tp])})
        return plan

    async def reset_offsets(self, group_id: str, plan: list[dict[str, Any]]) -> None:
        assert self.admin is not None
        codes = await kadmin.commit_offsets(self.admin, group_id, {
            TopicPartition(p["topic"], p["partition"]): p["new"] for p in plan})
        failed = {f"{tp.topic}-{tp.partition}": error_message(code)
                  for tp, code in codes.items() if code}
        if failed:
            raise ConsoleError(f"cannot reset offsets of group {group_id!r}: {failed}")

    async def delete_group(self, group_id: str) -> None:
        assert self.admin is not None
        code = await kadmin.delete_group(self.admin, group_id)
        if code:
            raise ConsoleError(f"cannot delete group {group_id!r}: {error_message(code)}")
