"""``streams connect distributed``: workers sharing a ``group.id`` share connectors and tasks.

* Membership: each worker joins the consumer group ``group.id`` through the broker's classic group
  protocol (an aiokafka consumer with our own assignor). Member metadata carries the worker's REST
  URL; the leader's assignor spreads connectors and tasks round-robin over the members and tells
  everyone who the leader is. A worker that joins or dies (session timeout) triggers a rebalance.
* State: connector configs, target states and task configs live in ``config.storage.topic`` (one
  partition, so every worker applies them in the same order), source offsets in
  ``offset.storage.topic``, statuses in ``status.storage.topic``; all compacted, read by every
  worker from the beginning.
* Writes that change the cluster's connectors are made by the leader; other workers' REST layer
  forwards those requests to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.structs import TopicPartition

from connect.rest.server import NotLeader
from connect.runtime import assignment, clients, session_key
from connect.runtime.config import WorkerConfig
from connect.runtime.config_writer import (
    FencedConfigWriter,
    PrivilegedWriteError,
    forward_task_configs,
)
from connect.runtime.exactly_once import ZombieFencing, request_fencing
from connect.runtime.herder import BadRequest, Herder, HerderError
from connect.runtime.kafka_log import KafkaLog, KafkaOffsetStore
from connect.runtime.standalone import ConnectProcess
from connect.runtime.status import State, Status, TargetState, TaskId
from streams.config import ConfigError
from streams.kafka import clients as kafka_clients
from streams.kafka.internals import group_generation, member_id, request_rejoin

log = logging.getLogger("connect.distributed")

COMPACT = {"cleanup.policy": "compact"}


def _user_data(meta: ConsumerProtocolMemberMetadata) -> dict[str, Any]:
    try:
        data = json.loads(meta.user_data or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class EagerAssignor(AbstractPartitionAssignor):
    """``connect.protocol=eager``: round-robin of connectors, then of tasks, over the members
    sorted by URL, recomputed from scratch each round (Kafka's protocol ``default``)."""

    name = "default"  # type: ignore[assignment]

    def __init__(self, herder: DistributedHerder) -> None:
        self.herder = herder

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:  # type: ignore[override]
        user = json.dumps(self.member_data()).encode()
        return ConsumerProtocolMemberMetadata(0, sorted(topics), user)

    def member_data(self) -> dict[str, Any]:
        self.herder.owned()  # notices a lost assignment
        return {"url": self.herder.url}

    def assign(self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]  # type: ignore[override]
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        data = {m: _user_data(meta) for m, meta in members.items()}
        urls = {m: str(d.get("url", "")) for m, d in data.items()}
        connectors, tasks = self.herder.assignment_basis()
        self.herder.last_basis = (connectors, tasks)
        plan = self.plan(urls, data, connectors, tasks)
        out = {}
        for member in members:
            user = json.dumps({"leader_url": self.herder.url, **plan[member]}).encode()
            out[member] = ConsumerProtocolMemberAssignment(0, [], user)
        return out

    def plan(self, urls: dict[str, str], data: dict[str, dict[str, Any]], connectors: list[str],
             tasks: list[TaskId]) -> dict[str, dict[str, Any]]:
        order = sorted(urls, key=lambda m: (urls[m], m))
        plan: dict[str, dict[str, Any]] = {m: {"connectors": [], "tasks": []} for m in order}
        for i, name in enumerate(connectors):
            plan[order[i % len(order)]]["connectors"].append(name)
        for i, task in enumerate(tasks):
            plan[order[i % len(order)]]["tasks"].append([task.connector, task.task])
        log.info("assigned %d connectors and %d tasks over %d workers", len(connectors),
                 len(tasks), len(order))
        return plan

    #: Whether the group's protocol signs internal requests (KIP-507).
    signs = False

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:  # type: ignore[override]
        data = json.loads(assignment.user_data or b"{}")
        self.herder.protocol = self.name
        self.herder.assignment_received(data, sessioned=self.signs)


class _BeforeJoin(ConsumerRebalanceListener):
    """Runs before every (re)join of the worker group. Under the eager protocol the worker
    first stops everything it runs, as Kafka's WorkerCoordinator revokes the whole assignment
    in onJoinPrepare; the cooperative protocols revoke only what the leader says."""

    def __init__(self, herder: DistributedHerder) -> None:
        self.herder = herder

    async def on_partitions_revoked(self, revoked: Any) -> None:
        if self.herder.protocol == EagerAssignor.name:
            await self.herder.revoke_everything()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        pass


class CooperativeAssignor(EagerAssignor):
    """``connect.protocol=compatible``: incremental cooperative rebalancing (KIP-415, see
    ``assignment``). Members report what they run; the leader moves only what balance needs."""

    name = "compatible"  # type: ignore[assignment]

    def __init__(self, herder: DistributedHerder) -> None:
        super().__init__(herder)
        self.connector_delay = assignment.Delay()
        self.task_delay = assignment.Delay()

    def member_data(self) -> dict[str, Any]:
        connectors, tasks = self.herder.owned()
        return {"url": self.herder.url, "connectors": sorted(connectors),
                "tasks": [[t.connector, t.task] for t in sorted(tasks)]}

    def plan(self, urls: dict[str, str], data: dict[str, dict[str, Any]], connectors: list[str],
             tasks: list[TaskId]) -> dict[str, dict[str, Any]]:
        loop = asyncio.get_running_loop()
        max_delay = self.herder.config.scheduled_rebalance_max_delay_ms / 1000
        owned_connectors = {m: [str(c) for c in d.get("connectors", [])] for m, d in data.items()}
        owned_tasks = {m: [TaskId(str(c), int(t)) for c, t in d.get("tasks", [])]
                       for m, d in data.items()}
        by_connector = assignment.plan(urls, owned_connectors, connectors, self.connector_delay,
                                       loop.time(), max_delay)
        by_task = assignment.plan(urls, owned_tasks, tasks, self.task_delay, loop.time(),
                                  max_delay)
        plan: dict[str, dict[str, Any]] = {}
        for member in urls:
            plan[member] = {
                "connectors": by_connector.assigned[member],
                "tasks": [[t.connector, t.task] for t in by_task.assigned[member]],
                "revoked": {"connectors": by_connector.revoked[member],
                            "tasks": [[t.connector, t.task] for t in by_task.revoked[member]]}}
        moved = sum(len(r) for r in by_task.revoked.values())
        held = len(by_connector.held) + len(by_task.held)
        delay = max(by_connector.delay_s, by_task.delay_s)
        log.info("assigned %d connectors and %d tasks over %d workers: %d tasks revoked to "
                 "move%s", len(connectors), len(tasks), len(urls), moved,
                 f"; {held} lost connectors and tasks wait {delay:.1f}s "
                 "(scheduled.rebalance.max.delay.ms) for their worker to return" if held else "")
        if delay > 0:
            self.herder.schedule_rebalance(delay)
        return plan


class SessionedAssignor(CooperativeAssignor):
    """``connect.protocol=sessioned`` (KIP-507): cooperative, and the leader distributes a
    session key with which workers sign their internal requests to each other."""

    name = "sessioned"  # type: ignore[assignment]
    signs = True


PROTOCOLS: dict[str, tuple[type[EagerAssignor], ...]] = {
    # The group picks the first protocol every member offers, as Kafka's ConnectProtocol does.
    "eager": (EagerAssignor,),
    "compatible": (CooperativeAssignor, EagerAssignor),
    "sessioned": (SessionedAssignor, CooperativeAssignor, EagerAssignor),
}


class DistributedHerder(Herder):
    distributed = True

    def __init__(self, config: WorkerConfig, worker_id: str, url: str) -> None:
        super().__init__(config, worker_id, KafkaOffsetStore(config,
                                                             config.offset_storage_topic or ""))
        self.url = url
        self.fencing = ZombieFencing(config)
        self._generation = -1
        self._assignment_lost = False
        if config.exactly_once_source_enabled:
            self.worker.fencing = self._fence_before_task
            self.worker.task_current = self._task_current
        self.leader_url: str | None = None
        self.my_connectors: set[str] = set()
        self.my_tasks: set[TaskId] = set()
        self.last_basis: tuple[list[str], list[TaskId]] | None = None
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self._pending_targets: dict[str, TargetState] = {}
        self._caught_up = False
        # KIP-618: with exactly-once source support the config topic is read committed and the
        # leader writes it transactionally, so a zombie leader's writes never count.
        self.config_log = KafkaLog(config, config.config_storage_topic or "",
                                   self._apply_config_records,
                                   "read_committed" if config.exactly_once_source_enabled
                                   else "read_uncommitted")
        self.config_writer: FencedConfigWriter | None = FencedConfigWriter(
            config, config.config_storage_topic or "") \
            if config.exactly_once_source_support in ("preparing", "enabled") else None
        self.status_log = KafkaLog(config, config.status_storage_topic or "",
                                   self._apply_status_records)
        self.member: AIOKafkaConsumer | None = None
        self._member_task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._reconciler: asyncio.Task | None = None
        self._status_sends: set[asyncio.Task] = set()
        self._rejoin_after_reconcile = False
        self.sessioned = False  # the group's protocol is sessioned (KIP-507)
        self.protocol: str | None = None  # the protocol of the group's last assignment
        self.session_key: session_key.SessionKey | None = None
        self._key_timer: asyncio.TimerHandle | None = None
        self._key_written = False  # a new key is on its way to the config topic
        self._scheduled: asyncio.TimerHandle | None = None

    # -- startup -------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        partitions = await clients.ensure_topic(cfg, cfg.config_storage_topic or "", 1,
                                                cfg.config_storage_replication_factor, COMPACT)
        if partitions != 1:
            raise ConfigError(
                f"Topic '{cfg.config_storage_topic}' supplied via the 'config.storage.topic' "
                "property is required to have a single partition in order to guarantee "
                f"consistency of connector configurations, but found {partitions} partitions.")
        await clients.ensure_topic(cfg, cfg.offset_storage_topic or "",
                                   cfg.offset_storage_partitions,
                                   cfg.offset_storage_replication_factor, COMPACT)
        await clients.ensure_topic(cfg, cfg.status_storage_topic or "",
                                   cfg.status_storage_partitions,
                                   cfg.status_storage_replication_factor, COMPACT)
        await super().start()
        self.ready = False  # until the group gave us an assignment
        await self.status_log.start()
        await self.config_log.start()
        self._caught_up = True
        self._reconciler = asyncio.get_running_loop().create_task(self._reconcile_loop())
        self.member = kafka_clients.consumer(
            clients.base_kwargs(cfg), group_id=cfg.group_id,
            enable_auto_commit=False, partition_assignment_strategy=tuple(
                cls(self) for cls in PROTOCOLS[cfg.connect_protocol]),
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            rebalance_timeout_ms=cfg.rebalance_timeout_ms, max_poll_interval_ms=2**31 - 1,
            client_id=f"connect-{self.worker_id}")
        self.member.subscribe([cfg.config_storage_topic or ""], listener=_BeforeJoin(self))
        await self.member.start()
        self._member_task = asyncio.get_running_loop().create_task(self._member_loop())

    async def stop(self) -> None:
        self.ready = False
        if self._scheduled is not None:
            self._scheduled.cancel()
        if self._key_timer is not None:
            self._key_timer.cancel()
        for task in (self._member_task, self._reconciler):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        await super().stop()
        if self._status_sends:  # the UNASSIGNED of what this worker stopped reaches the others
            await asyncio.wait(set(self._status_sends), timeout=5)
        if self.member is not None:
            await self.member.stop()  # leave the group
        if self.config_writer is not None:
            await self.config_writer.relinquish()
        await self.config_log.stop()
        await self.status_log.stop()

    async def _member_loop(self) -> None:
        """Keep the membership consumer polled (its background task does the group protocol)."""
        assert self.member is not None
        while True:
            try:
                await self.member.getmany(timeout_ms=500)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("group membership poll failed: %s", exc)
                await asyncio.sleep(0.5)

    # -- assignment ----------------------------------------------------------------------------
    def assignment_basis(self) -> tuple[list[str], list[TaskId]]:
        connectors = sorted(self.configs)
        tasks = [TaskId(n, i) for n in connectors
                 if self.targets.get(n) is not TargetState.STOPPED
                 for i in range(len(self.task_configs.get(n, [])))]
        return connectors, tasks

    def assignment_received(self, data: dict[str, Any], sessioned: bool = False) -> None:
        generation = group_generation(self.member) if self.member is not None else -1
        self._generation = generation
        self.leader_url = data.get("leader_url")
        self.sessioned = sessioned
        if self.config_writer is not None:
            # As Kafka's leader after each rebalance: claim the config topic (fencing an older
            # leader's producer); a worker that is no longer leader gives its claim up.
            self._spawn(self.config_writer.claim() if self.is_leader
                        else self.config_writer.relinquish())
        self._check_key_rotation()
        self.my_connectors = set(data.get("connectors", []))
        self.my_tasks = {TaskId(c, int(t)) for c, t in data.get("tasks", [])}
        self.worker.hold(max(generation, 0), self.my_connectors, self.my_tasks)
        revoked = data.get("revoked") or {}
        if revoked.get("connectors") or revoked.get("tasks"):
            # KIP-415: stop what was revoked, then rejoin at once so it can be reassigned.
            self._rejoin_after_reconcile = True
        if not self.ready and self._caught_up:
            self.ready = True
        log.info("worker %s assigned connectors %s, tasks %s (leader %s)", self.worker_id,
                 sorted(self.my_connectors), sorted(map(str, self.my_tasks)), self.leader_url)
        self._wake.set()

    def owned(self) -> tuple[set[str], set[TaskId]]:
        """What this worker runs or is to run (reported when it joins, for KIP-415).

        A worker the group dropped (paused past its session timeout: it rejoins without a
        member id) lost its assignment: its work ran elsewhere meanwhile, so what it still runs
        is a zombie. It reports nothing and restarts what it is given (Kafka's lost
        assignment); exactly-once tasks were fenced by their new owners."""
        if self.member is not None and self._generation >= 0 and not member_id(self.member):
            self._assignment_lost = True
            self.my_connectors, self.my_tasks = set(), set()
            return set(), set()
        return (self.my_connectors | set(self.worker.connectors),
                self.my_tasks | set(self.worker.tasks))

    async def revoke_everything(self) -> None:
        """Eager protocol, before rejoining: stop every task and connector of this worker
        (their offsets are committed as they stop; their statuses become UNASSIGNED)."""
        async with self._lock:
            tasks, connectors = list(self.worker.tasks), list(self.worker.connectors)
            if tasks or connectors:
                log.info("eager rebalance: stopping %d tasks and %d connectors before rejoining",
                         len(tasks), len(connectors))
            await self.worker.stop_tasks(tasks)
            for name in connectors:
                await self.worker.stop_connector(name)
            self.my_connectors, self.my_tasks = set(), set()

    async def drop_lost_assignment(self) -> None:
        """Stop every connector and task of a worker the group dropped; reconcile restarts what
        it is assigned now. Kafka's WorkerCoordinator treats a lost assignment as revoked
        whole, connectors too: one kept running would, when assigned here again, write no new
        status, and the UNASSIGNED its interim owner wrote on giving it up would stand for good
        (fault soak seeds 7020 and 7032)."""
        log.warning("worker %s missed rebalances: restarting its connectors and tasks",
                    self.worker_id)
        async with self._lock:
            await self.worker.stop_tasks(list(self.worker.tasks))
            for name in list(self.worker.connectors):
                await self.worker.stop_connector(name)

    def schedule_rebalance(self, delay_s: float) -> None:
        """Leader: rebalance again once lost work may move (scheduled.rebalance.max.delay.ms)."""
        if self._scheduled is not None:
            self._scheduled.cancel()

        def rejoin() -> None:
            self._scheduled = None
            if self.member is not None:
                request_rejoin(self.member)

        self._scheduled = asyncio.get_running_loop().call_later(delay_s + 0.05, rejoin)

    def assigned_connectors(self) -> set[str]:
        return set(self.my_connectors)

    def assigned_tasks(self) -> set[TaskId]:
        return set(self.my_tasks)

    @property
    def is_leader(self) -> bool:
        return self.leader_url == self.url

    async def ensure_leader(self) -> None:
        if not self.is_leader:
            raise NotLeader(self.leader_url)

    async def _reconcile_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            revoked, self._rejoin_after_reconcile = self._rejoin_after_reconcile, False
            try:
                if self._assignment_lost:
                    self._assignment_lost = False
                    await self.drop_lost_assignment()
                await self.reconcile()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reconciling the worker with its assignment failed")
            # Rejoin after stopping what was revoked (KIP-415), or, as leader, when the
            # connectors or tasks to assign changed.
            if self.member is not None and (revoked or (
                    self.is_leader and self.assignment_basis() != self.last_basis)):
                request_rejoin(self.member)

    async def _changed(self) -> None:
        self._wake.set()

    # -- the config topic ----------------------------------------------------------------------
    def _apply_config_records(self, records: list[Any]) -> None:
        for record in records:
            key = (record.key or b"").decode()
            try:
                value = None if record.value is None else json.loads(record.value)
            except ValueError:
                log.warning("ignoring a malformed config record %s", key)
                continue
            self._apply_config(key, value)
        self._wake.set()

    def _apply_config(self, key: str, value: Any) -> None:
        self.fencing.apply(key, value)
        if key == session_key.CONFIG_KEY:
            self.session_key = session_key.SessionKey.from_record(value)
            self._key_written = False
            if self._caught_up:
                log.info("Session key updated")
                self._check_key_rotation()
            return
        if key.startswith("connector-"):
            name = key[len("connector-"):]
            if value is None:
                self.configs.pop(name, None)
                self.targets.pop(name, None)
                self.task_configs.pop(name, None)
            else:
                self.configs[name] = dict(value.get("properties", {}))
                pending = self._pending_targets.pop(name, None)
                if pending is not None:
                    self.targets[name] = pending
                self.targets.setdefault(name, TargetState.STARTED)
        elif key.startswith("target-state-"):
            name = key[len("target-state-"):]
            if value is not None:
                target = TargetState(value.get("state", "STARTED"))
                if name in self.configs:
                    self.targets[name] = target
                else:  # the initial state of a connector whose config comes next
                    self._pending_targets[name] = target
        elif key.startswith("task-"):
            name, _, index = key[len("task-"):].rpartition("-")
            if value is not None and index.isdigit():
                self._pending_tasks.setdefault(name, {})[int(index)] = dict(
                    value.get("properties", {}))
        elif key.startswith("commit-"):
            name = key[len("commit-"):]
            count = int((value or {}).get("tasks", 0))
            pending = self._pending_tasks.pop(name, {})
            if name in self.configs and all(i in pending for i in range(count)):
                self.task_configs[name] = [pending[i] for i in range(count)]
        elif key.startswith("restart-connector-") and self._caught_up and value is not None:
            name = key[len("restart-connector-"):]
            if name in self.configs:
                self._spawn(self._handle_restart(name, value))

    async def _write_privileged(self, records: list[tuple[str, Any]]) -> None:
        """The leader's writes (Kafka's sendPrivileged): one transaction of the fenceable
        producer under exactly-once source support, else plain sends; read back either way."""
        if self.config_writer is None:
            for key, value in records[:-1]:
                await self.config_log.send(key, value, wait=False)
            key, value = records[-1]
            await self.config_log.send(key, value)
            return
        try:
            if not self.config_writer.claimed:
                await self.ensure_leader()
                await self.config_writer.claim()
            meta = await self.config_writer.send(records)
        except PrivilegedWriteError as exc:
            log.warning("Failed to write to config topic as leader; will rejoin group if "
                        "necessary and, if still leader, attempt to reclaim write privileges "
                        "for the config topic: %s", exc)
            if self.member is not None:
                request_rejoin(self.member)
            raise HerderError("Failed to write to config topic; this may be due to a transient "
                              "error and the request can be safely retried") from None
        await self.config_log.wait_for(TopicPartition(meta.topic, meta.partition),
                                       meta.offset + 1)

    async def _store_config(self, name: str, config: dict[str, str] | None,
                            target: TargetState | None = None) -> None:
        if config is None:
            await self._write_privileged([(f"connector-{name}", None)])
            return
        if target is not None:  # first, so the connector never starts in the wrong state
            await self.config_log.send(f"target-state-{name}", {"state": target.value},
                                       wait=False)
        await self._write_privileged([(f"connector-{name}", {"properties": config})])

    async def _store_target(self, name: str, target: TargetState) -> None:
        # Not privileged, as Kafka's putTargetState (any worker may pause or resume).
        await self.config_log.send(f"target-state-{name}", {"state": target.value})
        if target is TargetState.STOPPED:
            await self._store_task_configs(name, [])

    async def _store_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Task configs come from the worker running the connector; only the leader writes
        them (fenceably under exactly-once source support): another worker forwards them to
        the leader over Kafka's internal ``POST /connectors/{name}/tasks`` (signed under
        ``sessioned``), in every mode, as Kafka's DistributedHerder.reconfigureConnector."""
        if not self.is_leader:
            log.info("forwarding %d task configs of connector %s to the leader %s",
                     len(configs), name, self.leader_url)
            await forward_task_configs(lambda: self.leader_url, name, configs,
                                       headers=self._signature)
            return
        await self._write_privileged(
            [(f"task-{name}-{i}", {"properties": cfg}) for i, cfg in enumerate(configs)]
            + [(f"commit-{name}", {"tasks": len(configs)})])

    async def put_task_configs(self, name: str, configs: Any) -> None:
        """Internal: a worker hands the leader the task configs its connector generated."""
        self._require(name)
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            raise BadRequest("Task configs must be a JSON array of objects")
        await self.ensure_leader()
        if configs and self.targets.get(name) is TargetState.STOPPED:
            raise BadRequest(f"Cannot submit non-empty set of task configs for stopped "
                             f"connector {name}")
        log.info("writing %d task configs of connector %s forwarded by another worker",
                 len(configs), name)
        await self._write_privileged(
            [(f"task-{name}-{i}", {"properties": {str(k): str(v) for k, v in cfg.items()}})
             for i, cfg in enumerate(configs)] + [(f"commit-{name}", {"tasks": len(configs)})])

    # -- zombie fencing (KIP-618) --------------------------------------------------------------
    async def fence_zombies(self, name: str) -> None:
        self._require(name)
        await self.ensure_leader()
        if self.connector_type(name) != "source":
            raise BadRequest(f"Connector {name} is not a source connector")
        await self.fencing.fence(name, len(self.task_configs.get(name, [])),
                                 self.config_log.read_to_end,
                                 lambda key, value: self._write_privileged([(key, value)]),
                                 self.worker._resolve(self.configs.get(name, {})))

    def _task_current(self, tid: TaskId) -> bool:
        """Still assigned here, with the configs it was started with (a newer generation of the
        connector's tasks may have been fenced for and started elsewhere meanwhile)."""
        configs = self.task_configs.get(tid.connector, [])
        return tid in self.my_tasks and tid.task < len(configs) and \
            self.worker.task_snapshots.get(tid) == (self.configs.get(tid.connector),
                                                    configs[tid.task])

    async def _fence_before_task(self, name: str) -> None:
        """Before an exactly-once task's producer starts: the leader's fencing round, unless the
        latest task configs of ``name`` were fenced for already."""
        if name not in self.fencing.pending:
            return
        if self.is_leader:
            await self.fence_zombies(name)
        else:
            deadline = asyncio.get_running_loop().time() + 30
            while self.sessioned and self.session_key is None \
                    and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)  # the leader's key is on its way through the topic
            await request_fencing(lambda: self.leader_url, name, headers=self._signature)

    # -- session keys (KIP-507) ----------------------------------------------------------------
    def _check_key_rotation(self) -> None:
        """Leader of a sessioned group: write a session key if there is none, the current one
        is ``inter.worker.key.ttl.ms`` old, or it was generated with other settings; otherwise
        come back when it expires (Kafka's checkForKeyRotation, run from the herder's tick)."""
        if self._key_timer is not None:
            self._key_timer.cancel()
            self._key_timer = None
        if not (self.sessioned and self.is_leader) or self._key_written:
            return
        cfg = self.config
        key = self.session_key
        now_ms = time.time() * 1000
        if key is None or key.expires_ms(cfg.inter_worker_key_ttl_ms) <= now_ms or not key.matches(
                cfg.inter_worker_key_generation_algorithm, cfg.inter_worker_key_size):
            log.info("writing a new session key to the config topic (%s)",
                     "none yet" if key is None else "the current one expired or was generated "
                     "with other settings")
            self._key_written = True  # until it is read back (then checked again)
            new_key = session_key.SessionKey.generate(cfg.inter_worker_key_generation_algorithm,
                                                      cfg.inter_worker_key_size)
            self._spawn(self._write_session_key(new_key))
            return
        delay_s = (key.expires_ms(cfg.inter_worker_key_ttl_ms) - now_ms) / 1000
        if delay_s < 2**31 / 1000:
            self._key_timer = asyncio.get_running_loop().call_later(
                delay_s, self._check_key_rotation)

    async def _write_session_key(self, key: session_key.SessionKey) -> None:
        try:
            await self._write_privileged([(session_key.CONFIG_KEY, key.to_record())])
        except Exception:
            self._key_written = False  # the next assignment or expiry check tries again
            raise

    def _signature(self, body: bytes) -> dict[str, str]:
        """Headers that sign an internal request (KIP-507; none unless sessioned)."""
        if not self.sessioned or self.session_key is None:
            return {}
        return self.session_key.sign(body, self.config.inter_worker_signature_algorithm)

    def verify_internal(self, body: bytes, headers: Any) -> None:
        """Refuse an internal request whose signature is missing or wrong (sessioned only)."""
        if not self.sessioned:
            return
        try:
            session_key.verify(self.session_key, body, headers,
                               self.config.verification_algorithms)
        except session_key.SignatureError as exc:
            raise HerderError(str(exc), exc.status) from None

    # -- restarts go through the config topic so the owning worker acts ------------------------
    async def _request_restart(self, name: str, connector: bool, tasks: list[TaskId]) -> None:
        await self._write_privileged([(f"restart-connector-{name}", {
            "connector": connector, "tasks": [t.task for t in tasks]})])

    async def _restart_task(self, tid: TaskId) -> None:
        await self._request_restart(tid.connector, False, [tid])

    async def restart_connector(self, name: str, include_tasks: bool = False,
                                only_failed: bool = False) -> dict[str, Any] | None:
        self._require(name)
        await self.ensure_leader()
        if not include_tasks and not only_failed:
            await self._request_restart(name, True, [])
            return None
        return await super().restart_connector(name, include_tasks, only_failed)

    async def _handle_restart(self, name: str, request: dict[str, Any]) -> None:
        tasks = [TaskId(name, int(t)) for t in request.get("tasks", [])]
        connector = bool(request.get("connector")) and name in self.worker.connectors
        await self._restart_local(name, connector, tasks)

    # -- statuses ------------------------------------------------------------------------------
    def _status_changed(self, name: str, task: TaskId | None, status: Status) -> None:
        key = f"status-connector-{name}" if task is None else f"status-task-{name}-{task.task}"
        value = {"state": status.state.value, "trace": status.trace,
                 "worker_id": status.worker_id, "generation": status.generation,
                 "version": status.version}
        send = asyncio.get_running_loop().create_task(self.status_log.send(key, value,
                                                                            wait=False))
        self._status_sends.add(send)
        send.add_done_callback(self._status_sends.discard)

    def _apply_status_records(self, records: list[Any]) -> None:
        """Every worker applies every status record by the same rule (status.supersedes), in
        the topic's order, so all of them answer the same status; this worker's own records
        come back here too."""
        for record in records:
            key = (record.key or b"").decode()
            if record.value is None:
                continue
            try:
                value = json.loads(record.value)
                status = Status(State(value["state"]), value.get("worker_id", ""),
                                value.get("trace"), int(value.get("generation") or 0),
                                value.get("version"))
            except (ValueError, KeyError, TypeError):
                continue
            if key.startswith("status-connector-"):
                self.statuses.put_connector(key[len("status-connector-"):], status)
            elif key.startswith("status-task-"):
                name, _, index = key[len("status-task-"):].rpartition("-")
                if index.isdigit():
                    self.statuses.put_task(TaskId(name, int(index)), status)


class DistributedWorker(ConnectProcess):
    def __init__(self, config: WorkerConfig) -> None:
        missing = [key for key in ("group_id", "config_storage_topic", "offset_storage_topic",
                                   "status_storage_topic") if not getattr(config, key)]
        if missing:
            raise ConfigError("distributed mode needs " + ", ".join(
                f"'{k.replace('_', '.')}'" for k in missing) + " in the worker config")
        super().__init__(config)

    def make_herder(self) -> Herder:
        return DistributedHerder(self.config, self.worker_id, self.url)

    async def start(self) -> None:
        await super().start()
        # Ready once the first assignment arrived (health says 503 until then).
