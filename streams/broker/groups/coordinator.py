"""The group coordinator: classic consumer-group membership and rebalances (offset-side
operations live in ``offset_ops``, mixed in), and the host of the other group types
(``protocols``: KIP-848 consumer groups, KIP-932 share groups plug in there).

Everything runs on the broker's event loop. A JoinGroup or SyncGroup that has to wait for other
members parks on a future owned by its Member; timers (``loop.call_later``) end rebalances that
take too long, and one background task expires members whose session lapsed. Semantics follow
Kafka's ``GroupCoordinator`` (classic protocol); see reference/kafka-semantics.md §6.5.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import consumer_classic, errors
from .consumer import ConsumerGroup, ConsumerGroups
from .group import Group, GroupState
from .group_configs import GroupConfigs
from .group_store import decode_classic, encode_classic
from .member import SYNC_REBALANCING, JoinResult, Member, Protocols, SyncResult, join_error
from .offset_ops import OffsetOperations
from .offsets import OffsetStore
from .offsets_codec import GROUP_METADATA_KEY_VERSION, CorruptOffsetRecord
from .protocols import GroupListing, GroupProtocol, GroupType
from .share import ShareGroupProtocol

if TYPE_CHECKING:
    from ..server import Broker

log = logging.getLogger(__name__)

OFFSETS_RETENTION_CHECK_INTERVAL_S = 600.0  # Kafka's offsets.retention.check.interval.ms
EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD


@dataclass(slots=True)
class JoinRequest:
    """A JoinGroup, version differences already resolved by the handler."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True
    reason: str | None = None


@dataclass(slots=True, frozen=True)
class GroupSummary:
    """DescribeGroups' view of a group (metadata and assignments only while Stable)."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    members: tuple[tuple[str, str | None, str, str, bytes, bytes], ...]


class GroupCoordinator(OffsetOperations):
    """Owns every group of this (single) broker and the ``__consumer_offsets`` topic."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore(broker.topics, self.config.offsets_topic_num_partitions)
        self.protocols: dict[GroupType, GroupProtocol] = {}
        # Per-group overrides of group.* broker settings (GROUP config resources).
        self.configs = GroupConfigs(self.config, broker.topics.data_dir)
        self._ticker: asyncio.Task[None] | None = None
        # Non-classic group types plug in here: self.register_protocol(SomeProtocol(self)).
        self.register_protocol(ShareGroupProtocol(self))
        self.register_protocol(ConsumerGroups(self))

    # -- group types (see protocols.py) ---------------------------------------------------------

    def register_protocol(self, protocol: GroupProtocol) -> None:
        """Plug in a non-classic group type (before ``start``)."""
        if protocol.group_type in self.protocols or protocol.group_type is GroupType.CLASSIC:
            raise ValueError(f"group type {protocol.group_type.value} registered twice")
        self.protocols[protocol.group_type] = protocol

    def protocol(self, group_type: GroupType) -> GroupProtocol | None:
        return self.protocols.get(group_type)

    def owner(self, group_id: str) -> GroupProtocol | None:
        """The non-classic protocol owning this group id, if any."""
        for protocol in self.protocols.values():
            if protocol.has_group(group_id):
                return protocol
        return None

    def group_type(self, group_id: str) -> GroupType | None:
        """The type of the live group with this id (None: no such group)."""
        owner = self.owner(group_id)
        if owner is not None:
            return owner.group_type
        group = self.groups.get(group_id)
        return GroupType.CLASSIC if group is not None and not group.is_(DEAD) else None

    def claim_group_id(self, group_id: str, group_type: GroupType) -> bool:
        """May a group of ``group_type`` use this id? True when the id is free, already of that
        type, or an empty classic group (dropped here; its committed offsets stay, as Kafka
        converts an empty classic group). False when another type holds it."""
        owner = self.owner(group_id)
        if owner is not None:
            return owner.group_type is group_type
        group = self.groups.get(group_id)
        if group is None or group.is_(DEAD):
            return True
        if group.is_(EMPTY) and not group.pending_members:
            group.transition_to(DEAD)
            group.cancel_join_timer()
            del self.groups[group_id]
            self.offsets.write_group_record(group_id, GROUP_METADATA_KEY_VERSION, None)
            log.info("group %s: empty classic group becomes a %s group", group_id,
                     group_type.value)
            return True
        return False

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Replay committed offsets and group metadata (group_store): classic groups come back
        in their generation, with their members; groups that only have offsets come back
        Empty."""
        self.offsets.load()
        self.configs.load()
        now = self._now()
        classic = self.offsets.group_records[GROUP_METADATA_KEY_VERSION]
        for group_id, (_, value) in classic.items():
            if self.offsets.latest_group_record(group_id) != GROUP_METADATA_KEY_VERSION:
                continue  # it became a consumer group afterwards
            try:
                group = decode_classic(group_id, value, now)
            except (CorruptOffsetRecord, UnicodeDecodeError) as exc:
                log.warning("group %s: unreadable group metadata (%s); starting it afresh",
                            group_id, exc)
                continue
            group.state_since_ms = 0  # Empty since an unknown time (see below)
            self.groups[group_id] = group
        for protocol in self.protocols.values():
            await protocol.start()
        for group_id in self.offsets.group_ids():
            if self.owner(group_id) is None and group_id not in self.groups:
                # Empty since an unknown time: offset expiry counts from each commit instead.
                self._get_or_create(group_id).state_since_ms = 0
        self._ticker = self.broker.spawn(self._expiry_loop())

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._release_waiters()
        for protocol in self.protocols.values():
            await protocol.stop()

    def _release_waiters(self) -> None:
        """Answer every parked Join/SyncGroup so connections can close (clients rediscover)."""
        for group in self.groups.values():
            group.cancel_join_timer()
            for member in group.members.values():
                member.complete_join(join_error(errors.NOT_COORDINATOR, member.member_id))
                member.complete_sync(SyncResult(errors.NOT_COORDINATOR))

    async def _expiry_loop(self) -> None:
        # Broker.stop cancels background tasks before it waits for connections, so releasing
        # parked requests here keeps shutdown from waiting on a rebalance timeout.
        tick = max(0.01, min(0.25, self.config.group_min_session_timeout_ms / 20_000))
        next_cleanup = self._now() + OFFSETS_RETENTION_CHECK_INTERVAL_S
        try:
            while True:
                await asyncio.sleep(tick)
                self.expire_sessions(self._now())
                for protocol in self.protocols.values():
                    protocol.tick(self._now())
                if self._now() >= next_cleanup:
                    next_cleanup = self._now() + OFFSETS_RETENTION_CHECK_INTERVAL_S
                    try:
                        await self.expire_offsets(int(time.time() * 1000))
                    except Exception:
                        log.exception("expiring committed offsets failed")
        finally:
            self._release_waiters()

    # -- JoinGroup ----------------------------------------------------------------------------

    async def join_group(self, req: JoinRequest) -> JoinResult:
        if not req.group_id:
            return join_error(errors.INVALID_GROUP_ID, req.member_id)
        low = self.config.group_min_session_timeout_ms
        high = self.config.group_max_session_timeout_ms
        if not low <= req.session_timeout_ms <= high:
            return join_error(errors.INVALID_SESSION_TIMEOUT, req.member_id)
        owner = self.owner(req.group_id)
        migrated = self._classic_members_of(req.group_id)
        if migrated is not None:
            # KIP-848 migration: a non-empty consumer group takes classic members.
            return consumer_classic.join(migrated[0], migrated[1], req)
        if owner is not None and not owner.yield_to_classic(req.group_id):
            # Kafka: a classic member cannot join a share group (nor a non-empty consumer group
            # without the migration policy): INCONSISTENT_GROUP_PROTOCOL.
            return join_error(errors.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        group = self.groups.get(req.group_id)
        if req.member_id:
            if group is None:
                return join_error(errors.UNKNOWN_MEMBER_ID, req.member_id)
            return await self._join_known_member(group, req)
        if group is None:
            if not req.protocol_type or not req.protocols:
                return join_error(errors.INCONSISTENT_GROUP_PROTOCOL)
            group = self._get_or_create(req.group_id)
        return await self._join_new_member(group, req)

    async def _join_new_member(self, group: Group, req: JoinRequest) -> JoinResult:
        if group.is_(DEAD):
            return join_error(errors.COORDINATOR_NOT_AVAILABLE)
        instance = req.group_instance_id
        replaced = group.static_members.get(instance) if instance is not None else None
        names = [name for name, _ in req.protocols]
        if not group.supports(req.protocol_type, names, member_id=replaced):
            return join_error(errors.INCONSISTENT_GROUP_PROTOCOL)
        if replaced is not None:
            return await self._rejoin_static_member(group, req)
        if group.size >= self.config.group_max_size:
            return join_error(errors.GROUP_MAX_SIZE_REACHED)
        member_id = f"{instance or req.client_id}-{uuid.uuid4()}"
        if req.require_known_member_id and instance is None:
            # KIP-394: hand out the id first, so a client that dies mid-join leaves no member.
            group.pending_members[member_id] = self._now() + req.session_timeout_ms / 1000
            return join_error(errors.MEMBER_ID_REQUIRED, member_id)
        return await self._add_member_and_rebalance(group, member_id, req)

    async def _join_known_member(self, group: Group, req: JoinRequest) -> JoinResult:
        if group.is_(DEAD):
            return join_error(errors.COORDINATOR_NOT_AVAILABLE, req.member_id)
        names = [name for name, _ in req.protocols]
        if not group.supports(req.protocol_type, names, member_id=req.member_id):
            return join_error(errors.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if req.member_id in group.pending_members:
            return await self._add_member_and_rebalance(group, req.member_id, req)
        error = group.validate_member(req.member_id, req.group_instance_id)
        if error:
            return join_error(error, req.member_id)
        member = group.members[req.member_id]
        if group.is_(PREPARING):
            return await self._update_member_and_rebalance(group, member, req)
        if group.is_(COMPLETING):
            if member.protocols == req.protocols:  # the member lost our answer: repeat it
                return group.join_result_for(member)
            return await self._update_member_and_rebalance(group, member, req)
        if group.is_(STABLE):
            if group.is_leader(member.member_id) or member.protocols != req.protocols:
                return await self._update_member_and_rebalance(group, member, req)
            return group.join_result_for(member)
        return join_error(errors.UNKNOWN_MEMBER_ID, req.member_id)

    async def _add_member_and_rebalance(self, group: Group, member_id: str, req: JoinRequest
                                        ) -> JoinResult:
        member = Member(
            member_id, req.group_instance_id, req.client_id, req.client_host,
            req.session_timeout_ms, req.rebalance_timeout_ms, req.protocol_type, req.protocols,
            last_heartbeat=self._now(),
        )
        waiter = self._park_join(member)
        group.add(member)
        if group.is_(PREPARING) and group.initial_delay_remaining_ms is not None:
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")
        self._try_complete_join(group)
        return await waiter

    async def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest
                                           ) -> JoinResult:
        group.update_member(member, req.protocols, req.session_timeout_ms,
                            req.rebalance_timeout_ms, req.client_id)
        waiter = self._park_join(member)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")
        self._try_complete_join(group)
        return await waiter

    async def _rejoin_static_member(self, group: Group, req: JoinRequest) -> JoinResult:
        """KIP-345: a known group.instance.id comes back with a new member id."""
        assert req.group_instance_id is not None
        member = group.members[group.static_members[req.group_instance_id]]
        old_protocols = member.protocols
        member.complete_join(join_error(errors.FENCED_INSTANCE_ID, member.member_id))
        member.complete_sync(SyncResult(errors.FENCED_INSTANCE_ID))
        new_id = f"{req.group_instance_id}-{uuid.uuid4()}"
        old_id = group.replace_static_member(member, new_id)
        group.update_member(member, req.protocols, req.session_timeout_ms,
                            req.rebalance_timeout_ms, req.client_id)
        member.last_heartbeat = self._now()
        log.info("group %s: static member %s replaced %s by %s", group.group_id,
                 req.group_instance_id, old_id, new_id)
        if group.is_(STABLE) and old_protocols == req.protocols:
            # Same subscription: keep the generation and assignment, no rebalance.
            return group.join_result_for(member, skip_assignment=True)
        waiter = self._park_join(member)
        if group.is_(STABLE, COMPLETING):
            # In CompletingRebalance the leader may already be assigning to the old id.
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")
        self._try_complete_join(group)
        return await waiter

    def _classic_members_of(self, group_id: str) -> tuple[ConsumerGroups, ConsumerGroup] | None:
        """The non-empty consumer group answering classic requests for this id, if any."""
        consumer = self.protocols.get(GroupType.CONSUMER)
        if not isinstance(consumer, ConsumerGroups):
            return None
        group = consumer.groups.get(group_id)
        return (consumer, group) if group is not None and group.members else None

    def store_classic(self, group: Group) -> None:
        """Write the group's generation and members to __consumer_offsets (group_store)."""
        self.offsets.write_group_record(group.group_id, GROUP_METADATA_KEY_VERSION,
                                        encode_classic(group))

    def rebalance_downgraded(self, group: Group, rebalance: bool = True) -> None:
        """A consumer group just became this classic group (migration.downgrade): store it,
        start its members' sessions, and rebalance unless told not to."""
        self.store_classic(group)
        now = self._now()
        for member in group.members.values():
            member.last_heartbeat = now
        if not rebalance:
            return
        self._prepare_rebalance(group, f"group {group.group_id} downgraded from consumer to "
                                       "classic")

    def _park_join(self, member: Member) -> asyncio.Future[JoinResult]:
        member.complete_join(join_error(errors.REBALANCE_IN_PROGRESS, member.member_id))
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        return waiter

    # -- rebalance ----------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(STABLE, COMPLETING, EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(COMPLETING):
            for member in group.members.values():
                member.assignment = b""
                member.complete_sync(SYNC_REBALANCING)
        was_empty = group.is_(EMPTY)
        group.transition_to(PREPARING)
        group.cancel_join_timer()
        loop = asyncio.get_running_loop()
        timeout_ms = group.rebalance_timeout_ms()
        if was_empty:
            # group.initial.rebalance.delay.ms: let a starting fleet join in one rebalance.
            configured = self.config.group_initial_rebalance_delay_ms
            group.initial_delay_remaining_ms = max(timeout_ms - configured, 0)
            group.new_member_added = False
            delay = min(configured, timeout_ms)
            group.join_timer = loop.call_later(delay / 1000, self._on_initial_delay, group)
        else:
            group.join_timer = loop.call_later(timeout_ms / 1000, self._on_join_timeout, group)
        log.info("group %s: preparing rebalance (generation %d): %s", group.group_id,
                 group.generation_id, reason)

    def _on_initial_delay(self, group: Group) -> None:
        group.join_timer = None
        remaining = group.initial_delay_remaining_ms
        if not group.is_(PREPARING) or remaining is None:
            return
        configured = self.config.group_initial_rebalance_delay_ms
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            group.initial_delay_remaining_ms = max(remaining - configured, 0)
            group.join_timer = asyncio.get_running_loop().call_later(
                min(configured, remaining) / 1000, self._on_initial_delay, group)
            return
        self._complete_join(group)

    def _on_join_timeout(self, group: Group) -> None:
        group.join_timer = None
        if group.is_(PREPARING):
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if (group.is_(PREPARING) and group.initial_delay_remaining_ms is None
                and group.all_members_joined()):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation. Static members that did not rejoin stay (KIP-345: their group.instance.id
        keeps its place until the session ends), as in Kafka's completeClassicGroupJoin."""
        group.cancel_join_timer()
        group.initial_delay_remaining_ms = None
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                log.info("group %s: member %s did not rejoin in time", group.group_id,
                         member.member_id)
                group.remove(member.member_id)
        if group.is_(DEAD):
            return
        if group.members and not group.elect_joined_leader():
            # Only static members that did not rejoin are left: wait another rebalance timeout
            # for one of them (or for their sessions to end).
            log.warning("group %s: no member rejoined; waiting again", group.group_id)
            group.join_timer = asyncio.get_running_loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._on_join_timeout, group)
            return
        group.init_next_generation()
        if group.is_(EMPTY):
            self.store_classic(group)  # the generation goes on after a restart
        now = self._now()
        for member in group.members.values():
            member.last_heartbeat = now
            member.complete_join(group.join_result_for(member))
        if group.members:
            group.pending_sync = set(group.members)
            group.sync_timer = asyncio.get_running_loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._on_sync_timeout, group,
                group.generation_id)
        log.info("group %s: generation %d with %d member(s), protocol %s, leader %s",
                 group.group_id, group.generation_id, len(group.members), group.protocol_name,
                 group.leader_id)

    def _on_sync_timeout(self, group: Group, generation_id: int) -> None:
        """Kafka's expirePendingSync: members that sent no SyncGroup within the rebalance
        timeout are removed, and the group rebalances without them."""
        group.sync_timer = None
        if generation_id != group.generation_id or not group.is_(COMPLETING, STABLE):
            return
        missing = [mid for mid in group.pending_sync if mid in group.members]
        group.pending_sync.clear()
        if not missing:
            return
        for member_id in missing:
            member = group.members[member_id]
            member.complete_sync(SyncResult(errors.UNKNOWN_MEMBER_ID))
            group.remove(member_id)
        log.info("group %s: removed %s, who sent no SyncGroup in time", group.group_id,
                 ", ".join(missing))
        self._prepare_rebalance(group, f"members {missing} sent no SyncGroup in time")
        self._try_complete_join(group)

    def _remove_member_and_update(self, group: Group, member: Member, reason: str) -> None:
        member.complete_join(join_error(errors.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_(STABLE, COMPLETING):
            self._prepare_rebalance(group, reason)
            self._try_complete_join(group)
        elif group.is_(PREPARING):
            self._try_complete_join(group)

    def expire_sessions(self, now: float) -> None:
        """Remove members (and handed-out member ids) whose session timed out."""
        for group in list(self.groups.values()):
            for member_id, deadline in list(group.pending_members.items()):
                if now > deadline:
                    del group.pending_members[member_id]
                    self._try_complete_join(group)
            for member in list(group.members.values()):
                if group.members.get(member.member_id) is member and member.session_expired(now):
                    log.info("group %s: member %s session expired", group.group_id,
                             member.member_id)
                    self._remove_member_and_update(
                        group, member, f"member {member.member_id} session expired")

    # -- SyncGroup, Heartbeat, LeaveGroup -----------------------------------------------------

    async def sync_group(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
        assignments: Mapping[str, bytes], protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult:
        migrated = self._classic_members_of(group_id)
        if migrated is not None:
            return consumer_classic.sync(migrated[0], migrated[1], generation_id, member_id,
                                         group_instance_id, protocol_type, protocol_name)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(errors.UNKNOWN_MEMBER_ID)
        if group.is_(DEAD):
            return SyncResult(errors.COORDINATOR_NOT_AVAILABLE)
        error = group.validate_member(member_id, group_instance_id)
        if error:
            return SyncResult(error)
        if generation_id != group.generation_id:
            return SyncResult(errors.ILLEGAL_GENERATION)
        if ((protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol_name)):
            return SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]
        if group.is_(COMPLETING, STABLE):
            group.pending_sync.discard(member_id)
            if not group.pending_sync and group.sync_timer is not None:
                group.sync_timer.cancel()
                group.sync_timer = None
        if group.is_(PREPARING):
            return SyncResult(errors.REBALANCE_IN_PROGRESS)
        if group.is_(STABLE):
            return self._sync_result(group, member)
        if not group.is_(COMPLETING):
            return SyncResult(errors.UNKNOWN_MEMBER_ID)
        member.last_heartbeat = self._now()
        member.complete_sync(SYNC_REBALANCING)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.sync_waiter = waiter
        if group.is_leader(member_id):
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            group.transition_to(STABLE)
            self.store_classic(group)
            for each in group.members.values():
                each.complete_sync(self._sync_result(group, each))
            log.info("group %s: generation %d is stable", group_id, group.generation_id)
        return await waiter

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(errors.NONE, member.assignment, group.protocol_type, group.protocol_name)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> int:
        migrated = self._classic_members_of(group_id)
        if migrated is not None:
            return consumer_classic.heartbeat(migrated[0], migrated[1], generation_id, member_id,
                                              group_instance_id)
        group = self.groups.get(group_id)
        if group is None:
            return errors.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        if group.is_(EMPTY):
            return errors.UNKNOWN_MEMBER_ID
        group.members[member_id].last_heartbeat = self._now()
        if group.is_(PREPARING):
            return errors.REBALANCE_IN_PROGRESS
        return errors.NONE

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[int, list[int]]:
        """Remove members (by member id, or by group.instance.id for static members).

        Returns the top-level error and one error per requested member.
        """
        migrated = self._classic_members_of(group_id)
        if migrated is not None:
            return errors.NONE, consumer_classic.leave(migrated[0], migrated[1], members)
        group = self.groups.get(group_id)
        if group is None:
            return errors.NONE, [errors.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE, [errors.COORDINATOR_NOT_AVAILABLE] * len(
                members)
        return errors.NONE, [self._leave_one(group, mid, iid) for mid, iid in members]

    def _leave_one(self, group: Group, member_id: str, group_instance_id: str | None) -> int:
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                return errors.UNKNOWN_MEMBER_ID
            if member_id and member_id != current:
                return errors.FENCED_INSTANCE_ID
            member_id = current
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            self._try_complete_join(group)
            return errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        self._remove_member_and_update(group, member, f"member {member_id} left the group")
        return errors.NONE

    # -- admin --------------------------------------------------------------------------------

    def describe(self, group_id: str) -> GroupSummary:
        group = self.groups.get(group_id)
        if group is None:
            return GroupSummary(group_id, DEAD.value, "", "", ())
        stable = group.is_(STABLE)
        members = tuple(
            (m.member_id, m.group_instance_id, m.client_id, m.client_host,
             m.metadata_for(group.protocol_name) if stable else b"",
             m.assignment if stable else b"")
            for m in group.members.values()
        )
        return GroupSummary(group_id, group.state.value, group.protocol_type or "",
                            (group.protocol_name or "") if stable else "", members)

    def list_groups(self) -> list[GroupListing]:
        """Every live group of every type."""
        listed = [GroupListing(g.group_id, g.protocol_type or "", g.state.value, GroupType.CLASSIC)
                  for g in self.groups.values() if not g.is_(DEAD)]
        for protocol in self.protocols.values():
            listed.extend(protocol.listings())
        return listed
