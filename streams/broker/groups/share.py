"""KIP-932 share groups: membership (ShareGroupHeartbeat), share sessions and share-partitions.

A share group's members all read the partitions of the topics they subscribe to; the broker
hands out records one lock at a time (``share_partition``). Assignment here gives every member
every partition of its subscribed topics: KIP-932 allows a partition to be shared by any number
of members, and record locks (not partition ownership) keep deliveries apart.

Member epochs follow KIP-932's heartbeat: epoch 0 joins (the client chose its member id), -1
leaves, any other epoch must equal the member's current one (else FENCED_MEMBER_EPOCH). A
member silent for ``group.share.session.timeout.ms`` is removed and its locks are released.

Share sessions (ShareFetch/ShareAcknowledge ``ShareSessionEpoch``): 0 opens a session with the
request's partitions, each later request carries the next epoch and adds or forgets partitions,
-1 closes it and releases the member's records.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import errors
from .protocols import GroupListing, GroupProtocol, GroupType
from .share_partition import ShareConfig, SharePartition
from .share_state import ShareKey, ShareStateStore

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger(__name__)

SHARE_STATE_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions (Kafka's default)

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    epoch: int
    subscribed: frozenset[str]
    last_seen: float
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None


@dataclass(slots=True)
class ShareSession:
    """A member's share session: the partitions it fetches from and the epoch expected next."""

    next_epoch: int
    partitions: set[TopicPartition] = field(default_factory=set)


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    sessions: dict[str, ShareSession] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}


@dataclass(slots=True, frozen=True)
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    epoch: int = -1
    assignment: dict[str, list[int]] | None = None


class ShareGroupProtocol(GroupProtocol):
    """Share groups behind the group coordinator's seam."""

    group_type = GroupType.SHARE

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.topics = coordinator.broker.topics
        self.groups: dict[str, ShareGroup] = {}
        self.state = ShareStateStore(self.topics, SHARE_STATE_PARTITIONS)
        self.partitions: dict[ShareKey, SharePartition] = {}
        self.unsaved: set[ShareKey] = set()  # initialized, not yet in __share_group_state
        conf = coordinator.config
        self.config = ShareConfig(
            conf.group_share_record_lock_duration_ms,
            conf.group_share_delivery_count_limit,
            conf.group_share_partition_max_record_locks,
        )
        self.session_timeout_ms = conf.group_share_session_timeout_ms
        self.heartbeat_interval_ms = conf.group_share_heartbeat_interval_ms

    # -- seam ----------------------------------------------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def listings(self) -> Iterable[GroupListing]:
        for group in self.groups.values():
            yield GroupListing(group.group_id, "share", group.state, GroupType.SHARE)

    def is_empty(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is None or not group.members

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        for key in [k for k in self.partitions if k.group_id == group_id]:
            del self.partitions[key]

    async def start(self) -> None:
        self.state.load()
        for key in self.state.snapshots:
            self.groups.setdefault(key.group_id, ShareGroup(key.group_id))

    def tick(self, now: float) -> None:
        for group in self.groups.values():
            for member in list(group.members.values()):
                if now - member.last_seen > self.session_timeout_ms / 1000:
                    log.info("share group %s: member %s session expired", group.group_id,
                             member.member_id)
                    self._remove_member(group, member.member_id)
        now_ms = int(now * 1000)
        for part in self.partitions.values():
            part.expire_locks(now_ms)

    # -- membership ----------------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, member_epoch: int,
        subscribed: Iterable[str] | None, now: float, client_id: str = "",
        client_host: str = "", rack_id: str | None = None,
    ) -> HeartbeatResult:
        """ShareGroupHeartbeat (KIP-932) for one member."""
        if not group_id:
            return HeartbeatResult(errors.INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return HeartbeatResult(errors.INVALID_REQUEST)  # Kafka 4.4 sends no message
        if member_epoch == 0 and not subscribed:
            return HeartbeatResult(
                errors.INVALID_REQUEST,
                "SubscribedTopicNames must be set in first request.",
            )
        group = self.groups.get(group_id)
        if group is None:
            # Kafka never turns another type's group (even an empty classic one) into a
            # share group.
            if self.coordinator.group_type(group_id) not in (None, GroupType.SHARE):
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND,
                                       f"Group {group_id} is not a share group.")
            if member_epoch != 0:
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND,
                                       f"Share group {group_id} not found.")
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member_epoch == -1:
            if member is not None:
                self._remove_member(group, member_id, leaving=True)
            return HeartbeatResult(errors.NONE, member_id=member_id, epoch=-1)
        if member is None:
            if member_epoch != 0:
                return HeartbeatResult(
                    errors.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            group.epoch += 1
            member = ShareMember(member_id, group.epoch, frozenset(subscribed or ()), now,
                                 client_id, client_host, rack_id)
            group.members[member_id] = member
        elif member_epoch not in (0, member.epoch):
            which = "greater" if member_epoch > member.epoch else "smaller"
            return HeartbeatResult(
                errors.FENCED_MEMBER_EPOCH,
                f"The share group member has a {which} member epoch ({member_epoch}) than "
                f"the one known by the group coordinator ({member.epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        member.last_seen = now
        if subscribed is not None and frozenset(subscribed) != member.subscribed:
            member.subscribed = frozenset(subscribed)
            group.epoch += 1
        if member.epoch != group.epoch:
            member.epoch = group.epoch
        assignment = self.assignment(member)
        for topic, partitions in assignment.items():  # Kafka initializes on assignment
            for partition in partitions:
                self.share_partition(group_id, topic, partition)
        return HeartbeatResult(errors.NONE, member_id=member_id, epoch=member.epoch,
                               assignment=assignment)

    def assignment(self, member: ShareMember) -> dict[str, list[int]]:
        """Every existing partition of every subscribed topic."""
        out: dict[str, list[int]] = {}
        for name in sorted(member.subscribed):
            topic = self.topics.topics.get(name)
            if topic is not None:
                out[name] = list(range(len(topic.partitions)))
        return out

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def _remove_member(self, group: ShareGroup, member_id: str, leaving: bool = False) -> None:
        """A member that leaves keeps its share session: clients send the final
        ShareAcknowledge (session epoch -1) alongside the leave heartbeat, and its records are
        released when that session closes (or their locks expire). An expired member loses
        both at once."""
        group.members.pop(member_id, None)
        group.epoch += 1
        if leaving and member_id in group.sessions:
            return
        group.sessions.pop(member_id, None)
        self.release(group.group_id, member_id)

    def has_session(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.sessions

    def release(self, group_id: str, member_id: str) -> None:
        """Give back every record the member holds (it left, or closed its session)."""
        for key, part in self.partitions.items():
            if key.group_id == group_id:
                part.release_member(member_id)

    # -- share-partitions ----------------------------------------------------------------------

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition:
        """The share-partition, restored from ``__share_group_state`` or initialized at the
        log end (share.auto.offset.reset=latest, Kafka's default)."""
        key = ShareKey(group_id, topic, partition)
        part = self.partitions.get(key)
        plog = self.topics.partition(topic, partition)
        if part is None:
            part = self.state.restore(key, self.config)
            if part is None:
                part = SharePartition(plog.next_offset, self.config)
                self.unsaved.add(key)  # the start offset must survive a restart
            self.partitions[key] = part
        if part.start_offset < plog.log_start_offset:  # retention deleted the start
            part.reset_start_offset(plog.log_start_offset)
        return part

    async def persist(self, group_id: str, touched: Iterable[TopicPartition]) -> None:
        """Write the touched share-partitions (and any newly initialized one) durably."""
        keys = {ShareKey(group_id, t, p) for t, p in touched} | self.unsaved
        self.unsaved = set()
        for key in sorted(keys, key=lambda k: (k.group_id, k.topic, k.partition)):
            part = self.partitions.get(key)
            if part is not None:
                await self.state.save(key, part)
