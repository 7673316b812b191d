"""The group assignor (protocol "stream"): partitions are handed out as whole tasks.

A task is sub-topology x partition; all source topics' partition p of one sub-topology go to the
same member, so co-partitioned inputs meet in one task. Stateful and stateless tasks are
balanced separately (each member gets at most ceil(tasks / members) of each kind); within that
bound a task stays with the member running it, else goes to a member that has its state on
disk (a fast restore), else to the least-loaded member. Members describe what they own in the
JoinGroup metadata's user data.

With ``num.standby.replicas`` = n, each stateful task also gets up to n standby tasks, on
members of other processes than its active and than each other (Kafka never puts a standby in
the process of its active: it would die with it); a member that has the task's state on disk
is preferred, then the one with the fewest standbys. A member's assignment lists its standby
tasks; they own no partitions.

As in Kafka Streams (SubscriptionInfo's user end point, AssignmentInfo's partitionsByHost and
standbyPartitionByHost), each member also reports its ``application.server``, and every member's
assignment carries the whole map host -> active tasks and host -> standby tasks, so any
instance can say which instances hold a key (queries.py).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from ..processor.api import TaskId
from .topics import TopicLayout

log = logging.getLogger(__name__)

VERSION = 0


@dataclass
class MemberInfo:
    """What a member reports when joining: running tasks, tasks with local state, and its
    ``application.server`` end point ("" when it has none)."""

    process_id: str = ""
    active: set[TaskId] = field(default_factory=set)
    state: set[TaskId] = field(default_factory=set)
    endpoint: str = ""
    shutdown: bool = False  # SHUTDOWN_APPLICATION requested (Kafka's SubscriptionInfo flag)

    def encode(self) -> bytes:
        return json.dumps({"process": self.process_id,
                           "active": sorted(str(t) for t in self.active),
                           "state": sorted(str(t) for t in self.state),
                           "endpoint": self.endpoint, "shutdown": self.shutdown}).encode()

    @classmethod
    def decode(cls, data: bytes | None) -> MemberInfo:
        if not data:
            return cls()
        try:
            raw = json.loads(data)
            return cls(raw.get("process", ""), {TaskId.parse(t) for t in raw.get("active", [])},
                       {TaskId.parse(t) for t in raw.get("state", [])},
                       str(raw.get("endpoint") or ""), bool(raw.get("shutdown", False)))
        except (ValueError, AttributeError, TypeError):
            return cls()


@dataclass
class AssignmentInfo:
    """One member's assignment user data: its own tasks, and for the whole group which end
    point runs which tasks (active and standby) with the source partition counts the tasks
    were made from (Kafka's AssignmentInfo.partitionsByHost)."""

    tasks: list[TaskId] = field(default_factory=list)
    hosts: dict[str, list[TaskId]] = field(default_factory=dict)
    standby_hosts: dict[str, list[TaskId]] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    shutdown: bool = False  # a member asked for the application's shutdown: everyone stops
    standby: list[TaskId] = field(default_factory=list)  # this member's standby tasks

    def encode(self) -> bytes:
        def tids(ts: Iterable[TaskId]) -> list[str]:
            return sorted(str(t) for t in ts)
        return json.dumps({"shutdown": self.shutdown, "tasks": tids(self.tasks),
                           "standby": tids(self.standby),
                           "hosts": {h: tids(ts) for h, ts in sorted(self.hosts.items())},
                           "standby_hosts": {h: tids(ts) for h, ts
                                             in sorted(self.standby_hosts.items())},
                           "partitions": dict(sorted(self.partitions.items()))}).encode()

    @classmethod
    def decode(cls, data: bytes | None) -> AssignmentInfo:
        if not data:
            return cls()
        try:
            raw = json.loads(data)
            if isinstance(raw, list):  # the first format: the member's task ids only
                return cls([TaskId.parse(t) for t in raw])

            def hosts(key: str) -> dict[str, list[TaskId]]:
                return {str(h): [TaskId.parse(t) for t in ts]
                        for h, ts in (raw.get(key) or {}).items()}
            return cls([TaskId.parse(t) for t in raw.get("tasks", [])], hosts("hosts"),
                       hosts("standby_hosts"),
                       {str(t): int(n) for t, n in (raw.get("partitions") or {}).items()},
                       bool(raw.get("shutdown", False)),
                       [TaskId.parse(t) for t in raw.get("standby", [])])
        except (ValueError, AttributeError, TypeError):
            return cls()



class StreamsPartitionAssignor(AbstractPartitionAssignor):
    """An instance per KafkaStreams: it knows the topology layout and the local state."""

    name = "stream"
    version = VERSION

    def __init__(self, layout: TopicLayout, local_info: Callable[[], MemberInfo],
                 on_info: Callable[[AssignmentInfo], None] | None = None,
                 num_standby_replicas: int = 0) -> None:
        self.layout = layout
        self.local_info = local_info
        self.on_info = on_info  # told every new assignment's host map (KafkaStreams' metadata)
        self.num_standby_replicas = num_standby_replicas
        self.stateful = {sub.id for sub in layout.sub_topologies if sub.stores}
        self.assigned = AssignmentInfo()  # this member's latest assignment (its standbys)

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:  # type: ignore[override]
        return ConsumerProtocolMemberMetadata(VERSION, sorted(topics), self.local_info().encode())

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:  # type: ignore[override]
        self.assigned = AssignmentInfo.decode(assignment.user_data)
        if self.on_info is not None:
            try:
                self.on_info(AssignmentInfo.decode(assignment.user_data))
            except Exception:  # never fail the join over metadata for queries
                log.exception("could not read the assignment's host map")

    def assign(self, cluster: object,  # type: ignore[override]
               members: Mapping[str, ConsumerProtocolMemberMetadata]
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        tasks = self.tasks(cluster)
        infos = {m: MemberInfo.decode(md.user_data) for m, md in members.items()}
        if any(info.shutdown for info in infos.values()):
            log.error("a member requested the application's shutdown: assigning nothing")
            stop = AssignmentInfo(shutdown=True).encode()
            return {m: ConsumerProtocolMemberAssignment(VERSION, [], stop) for m in members}
        plan = balance(tasks, infos, self.stateful)
        standby_plan = place_standbys([t for t in tasks if t.subtopology in self.stateful],
                                      plan, infos, self.num_standby_replicas)
        hosts: dict[str, list[TaskId]] = {}
        standby_hosts: dict[str, list[TaskId]] = {}
        for member, info in infos.items():
            if info.endpoint:
                hosts.setdefault(info.endpoint, []).extend(plan.get(member, []))
                if standby_plan.get(member):
                    standby_hosts.setdefault(info.endpoint, []).extend(standby_plan[member])
        partitions = {topic: self._count(cluster, topic)
                      for topics in self.layout.sources.values() for topic in topics}
        result = {}
        for member in members:
            by_topic: dict[str, list[int]] = {}
            for task in sorted(plan.get(member, [])):
                for topic in self.layout.sources[task.subtopology]:
                    if task.partition < self._count(cluster, topic):
                        by_topic.setdefault(topic, []).append(task.partition)
            info = AssignmentInfo(sorted(plan.get(member, [])), hosts, standby_hosts, partitions,
                                  standby=sorted(standby_plan.get(member, [])))
            result[member] = ConsumerProtocolMemberAssignment(
                VERSION, sorted(by_topic.items()), info.encode())
        log.info("assigned %d tasks to %d members: %s; standbys: %s", len(tasks), len(members),
                 {m: sorted(str(t) for t in ts) for m, ts in plan.items()},
                 {m: sorted(str(t) for t in ts) for m, ts in standby_plan.items() if ts})
        return result

    def _count(self, cluster: object, topic: str) -> int:
        parts = cluster.partitions_for_topic(topic)  # type: ignore[attr-defined]
        return len(parts) if parts else self.layout.partitions.get(topic, 0)

    def tasks(self, cluster: object) -> list[TaskId]:
        result = []
        for sub in self.layout.sub_topologies:
            counts = [self._count(cluster, t) for t in self.layout.sources[sub.id]]
            result.extend(TaskId(sub.id, p) for p in range(max(counts, default=0)))
        return result


def balance(tasks: list[TaskId], infos: Mapping[str, MemberInfo],
            stateful: set[int]) -> dict[str, list[TaskId]]:
    """Sticky, state-aware, balanced: see the module docstring."""
    members = sorted(infos)
    plan: dict[str, list[TaskId]] = {m: [] for m in members}
    if not members:
        return plan
    for group in ([t for t in tasks if t.subtopology in stateful],
                  [t for t in tasks if t.subtopology not in stateful]):
        cap = math.ceil(len(group) / len(members)) if group else 0
        count = dict.fromkeys(members, 0)
        pending = []
        for task in group:  # 1: keep running tasks where they are
            owner = next((m for m in members if task in infos[m].active), None)
            if owner is not None and count[owner] < cap:
                plan[owner].append(task)
                count[owner] += 1
            else:
                pending.append(task)
        rest = []
        for task in pending:  # 2: a member with the task's state on disk
            holders = [m for m in members if task in infos[m].state and count[m] < cap]
            if holders:
                chosen = min(holders, key=lambda m: (count[m], len(plan[m]), m))
                plan[chosen].append(task)
                count[chosen] += 1
            else:
                rest.append(task)
        for task in rest:  # 3: the least-loaded member
            chosen = min(members, key=lambda m: (count[m], len(plan[m]), m))
            plan[chosen].append(task)
            count[chosen] += 1
    return plan


def place_standbys(stateful: list[TaskId], plan: Mapping[str, list[TaskId]],
                   infos: Mapping[str, MemberInfo], replicas: int) -> dict[str, list[TaskId]]:
    """Up to ``replicas`` standbys per stateful task, each in a process other than the
    active's and the other standbys' (see the module docstring); warm members first."""
    standbys: dict[str, list[TaskId]] = {m: [] for m in sorted(infos)}
    if replicas <= 0:
        return standbys
    owner = {task: member for member, tasks in plan.items() for task in tasks}

    def process(member: str) -> str:
        return infos[member].process_id or member

    for task in stateful:
        active = owner.get(task)
        taken = {process(active)} if active is not None else set()
        for _ in range(replicas):
            candidates = [m for m in standbys if process(m) not in taken]
            if not candidates:
                break  # fewer processes than replicas + 1: as many as there can be
            chosen = min(candidates, key=lambda m: (task not in infos[m].state,
                                                    len(standbys[m]), m))
            standbys[chosen].append(task)
            taken.add(process(chosen))
    return standbys
