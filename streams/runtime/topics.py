"""Internal topics: how many partitions each topic needs, co-partitioning, creation via Admin.

Kafka Streams' rules (reference §3.3, §3.4): a sub-topology has as many tasks as the largest
partition count among its source topics; a repartition topic gets the largest count among the
sources of the sub-topology that writes it (unless fixed); a changelog gets one partition per
task of the sub-topology owning the store; topics in one co-partition group must agree.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from ..topology.topology import SubTopology, Topology

log = logging.getLogger(__name__)

CREATE_TIMEOUT_S = 30.0

REPARTITION_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "-1",
                       "segment.bytes": "52428800"}
TOPIC_ALREADY_EXISTS = 36


class MissingSourceTopicError(RuntimeError):
    """A user topic the topology reads does not exist (Kafka: MissingSourceTopicException)."""


class CopartitionError(RuntimeError):
    """Topics that must be co-partitioned (joins) have different partition counts."""


@dataclass
class TopicLayout:
    """Resolved topic names and partition counts for one application."""

    sub_topologies: list[SubTopology]
    partitions: dict[str, int] = field(default_factory=dict)
    sources: dict[int, list[str]] = field(default_factory=dict)  # sub id -> resolved topics
    tasks: dict[int, int] = field(default_factory=dict)  # sub id -> number of tasks
    topic_to_sub: dict[str, int] = field(default_factory=dict)
    internal: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # kind, cfg
    repartition_topics: set[str] = field(default_factory=set)

    def source_topics(self) -> list[str]:
        return sorted(self.topic_to_sub)


def plan_layout(topology: Topology, app_id: str, existing: dict[str, int]) -> TopicLayout:
    """Work out every partition count from the existing user topics; raise on conflicts."""
    def resolve(name: str) -> str:
        return topology.resolve_topic(name, app_id)

    layout = TopicLayout(topology.sub_topologies())
    internal = {resolve(name): it for name, it in topology.internal_topics.items()}
    writers: dict[str, list[int]] = {}
    for sub in layout.sub_topologies:
        layout.sources[sub.id] = [resolve(t) for t in sub.source_topics]
        for topic in layout.sources[sub.id]:
            layout.topic_to_sub[topic] = sub.id
        for topic in sub.sink_topics:
            writers.setdefault(resolve(topic), []).append(sub.id)

    counts: dict[str, int] = {}
    missing = []
    for sub in layout.sub_topologies:
        for topic in layout.sources[sub.id]:
            if topic in internal:
                continue
            if topic not in existing:
                missing.append(topic)
            else:
                counts[topic] = existing[topic]
    if missing:
        raise MissingSourceTopicError(
            f"source topic(s) {', '.join(sorted(set(missing)))} do not exist; create them first "
            "(streams topics create NAME --partitions N)")
    for topic, spec in internal.items():
        if spec.kind != "changelog" and spec.partitions:
            counts[topic] = spec.partitions

    def sub_tasks(sub_id: int) -> int | None:
        known = [counts[t] for t in layout.sources[sub_id] if t in counts]
        return max(known) if known else None

    # Repartition topics take the count of the sub-topology writing them; chains of
    # repartition topics need several passes.
    for _ in range(len(internal) + 1):
        changed = False
        for topic, spec in internal.items():
            if spec.kind == "changelog" or topic in counts:
                continue
            found = [n for s in writers.get(topic, []) if (n := sub_tasks(s)) is not None]
            if found:
                counts[topic] = max(found)
                changed = True
        if not changed:
            break
    _copartition(topology, resolve, counts, internal)
    for sub in layout.sub_topologies:
        tasks = sub_tasks(sub.id)
        if tasks is None:
            raise RuntimeError(f"cannot work out the partition count of sub-topology {sub.id} "
                               f"(sources {layout.sources[sub.id]})")
        layout.tasks[sub.id] = tasks
        for store in sub.stores:
            changelog = resolve(f"{store}-changelog")
            if changelog in internal:
                counts[changelog] = tasks
    for topic, spec in internal.items():
        if topic not in counts:
            raise RuntimeError(f"cannot work out the partition count of internal topic {topic}")
        configs = dict(spec.configs)
        if spec.kind != "changelog":
            configs = {**REPARTITION_CONFIGS, **configs}
            layout.repartition_topics.add(topic)
        configs.setdefault("message.timestamp.type", "CreateTime")
        layout.internal[topic] = (spec.kind, configs)
    layout.partitions = counts
    return layout


def _copartition(topology: Topology, resolve: Any, counts: dict[str, int],
                 internal: dict[str, Any]) -> None:
    """Kafka's CopartitionedTopicsEnforcer, per co-partition group (each join, each cogroup).

    User topics and repartition topics with a fixed count must agree, else the app fails at
    start with Kafka's message; the other repartition topics of the group are given that
    count (or, with no user topic in the group, the largest among them).
    """
    for group in topology.copartition_groups:
        topics = sorted(resolve(t) for t in group)
        fixed = {t: counts[t] for t in topics
                 if t in counts and (t not in internal or internal[t].partitions)}
        if len(set(fixed.values())) > 1:
            detail = ", ".join(f"{t}={n}" for t, n in sorted(fixed.items()))
            operator = getattr(group, "operator", None) or "a join"
            raise CopartitionError(
                f"Following topics do not have the same number of partitions: [{{{detail}}}]. "
                f"They are co-partitioned for {operator}, which reads partition p of each in "
                "one task: create them with the same number of partitions, or repartition "
                "one side (repartition(partitions=N)) before the join")
        target = next(iter(fixed.values()), None) or max(
            (counts.get(t, 0) for t in topics), default=0)
        for topic in topics:
            if topic not in fixed and target:
                counts[topic] = target


async def ensure_internal_topics(admin: Any, topology: Topology, app_id: str,
                                 replication_factor: int = -1) -> TopicLayout:
    """Create the application's missing internal topics; check the existing ones."""
    from aiokafka.admin import NewTopic

    existing = await describe_partitions(admin)
    layout = plan_layout(topology, app_id, existing)
    to_create = []
    rf = replication_factor
    if rf <= 0 and any(topic not in existing for topic in layout.internal):
        rf = await broker_default_replication(admin)
    for topic, (_kind, configs) in sorted(layout.internal.items()):
        wanted = layout.partitions[topic]
        if topic in existing:
            if existing[topic] != wanted:
                raise CopartitionError(
                    f"internal topic {topic} has {existing[topic]} partitions but the topology "
                    f"needs {wanted}; delete it (application reset) or restore the input topics")
            continue
        to_create.append(NewTopic(topic, wanted, rf, topic_configs=configs))
    if to_create:
        response = await admin.create_topics(to_create)
        for item in response.topic_errors:
            name, code = item[0], item[1]
            if code not in (0, TOPIC_ALREADY_EXISTS):
                raise RuntimeError(f"cannot create internal topic {name}: error code {code}")
        log.info("created internal topics %s", ", ".join(t.name for t in to_create))
        await _wait_until_listed(admin, layout)
    return layout


async def broker_default_replication(admin: Any) -> int:
    """The cluster's ``default.replication.factor``: what ``replication.factor=-1`` (Kafka
    Streams' default) means. CreateTopics v3, aiokafka's newest, cannot say "the broker's
    default" (-1 came in v4), so we ask a broker for it; 1 if it will not tell."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    try:
        node = (await admin.describe_cluster())["brokers"][0]["node_id"]
        responses = await admin.describe_configs([ConfigResource(
            ConfigResourceType.BROKER, str(node), {"default.replication.factor": None})])
        for response in responses:
            for resource in response.to_object()["resources"]:
                for entry in resource["config_entries"]:
                    if entry["config_names"] == "default.replication.factor":
                        return max(1, int(entry["config_value"]))
    except Exception as exc:  # an old or restricted broker: Kafka's own default
        log.info("cannot read the brokers' default.replication.factor (%r); using 1", exc)
    return 1


async def _wait_until_listed(admin: Any, layout: TopicLayout,
                             timeout_s: float = CREATE_TIMEOUT_S) -> None:
    """Wait until the cluster lists every internal topic with its partition count.

    Apache Kafka answers CreateTopics before its metadata lists the new topics (tens of ms
    later); Kafka Streams' InternalTopicManager re-checks until they are ready, as here. A
    topic listed with another count is an error at once."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        existing = await describe_partitions(admin)
        missing = []
        for topic in layout.internal:
            count = existing.get(topic)
            if count is None:
                missing.append(topic)
            elif count != layout.partitions[topic]:
                raise RuntimeError(f"internal topic {topic} has {count} partitions, expected "
                                   f"{layout.partitions[topic]}")
        if not missing:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"internal topics {', '.join(sorted(missing))} were created but "
                               f"are still not listed after {timeout_s:.0f} s")
        await asyncio.sleep(0.05)


async def describe_partitions(admin: Any) -> dict[str, int]:
    """Partition count of every existing topic."""
    result: dict[str, int] = {}
    for item in await admin.describe_topics(None):
        if item.get("error_code", 0) == 0:
            result[item["topic"]] = len(item["partitions"])
    return result
