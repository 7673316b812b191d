"""KIP-932 share groups: membership (ShareGroupHeartbeat), share sessions and share-partitions.

A share group's members read the partitions of the topics they subscribe to; the broker
hands out records one lock at a time (``share_partition``). The ``simple`` assignor
(``share_assignor``) spreads partitions over members, sharing a partition among several members
only when there are more members than partitions; record locks (not partition ownership) keep
deliveries apart.

Member epochs follow KIP-932's heartbeat: epoch 0 joins (the client chose its member id), -1
leaves, any other epoch must equal the member's current one (else FENCED_MEMBER_EPOCH). A
member silent for ``group.share.session.timeout.ms`` is removed and its locks are released.

Share sessions (ShareFetch/ShareAcknowledge ``ShareSessionEpoch``): 0 opens a session with the
request's partitions, each later request carries the next epoch and adds or forgets partitions,
-1 closes it and releases the member's records.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import errors, share_assignor, share_records
from .group_configs import is_true
from .group_store import decode_share
from .offsets_codec import SHARE_GROUP_KEY_VERSION, CorruptOffsetRecord
from .protocols import GroupListing, GroupProtocol, GroupType
from .record_format import record_changes
from .share_partition import ShareConfig, SharePartition
from .share_state import ShareKey, ShareSnapshot, ShareStateStore

if TYPE_CHECKING:
    from ..storage.log import PartitionLog
    from .coordinator import GroupCoordinator

log = logging.getLogger(__name__)

SHARE_STATE_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions (Kafka's default)
# A share-partition assigned but never fetched: Kafka's coordinator initializes its state with
# start offset -1, and the first ShareFetch resolves it by share.auto.offset.reset.
UNINITIALIZED = -1
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")

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
    previous_epoch: int = 0  # the epoch before the last bump (ShareGroupCurrentMemberAssignment)


@dataclass(slots=True)
class ShareSession:
    """A member's share session: the partitions it fetches from and the epoch expected next."""

    next_epoch: int
    # each partition with the topic id the client named it by: a topic deleted and created
    # again under the same name is another topic, served only once the client asks for it
    partitions: dict[TopicPartition, object] = field(default_factory=dict)


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    sessions: dict[str, ShareSession] = field(default_factory=dict)
    # the simple assignor's last answer, and what it was computed from
    assignment: dict[str, set[TopicPartition]] = field(default_factory=dict)
    assigned_from: object = None

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
        self.topic_ids: dict[ShareKey, str | None] = {}  # the topic each partition is of
        self.configs = coordinator.configs
        # each group's records as last written (share_records): {key: value}
        self._written: dict[str, dict[bytes, bytes]] = {}

    def config_for(self, group_id: str) -> ShareConfig:
        """The share settings of one group: its group configs over the broker's group.share.*"""
        value = self.configs.int_value
        return ShareConfig(value(group_id, "share.record.lock.duration.ms"),
                           value(group_id, "share.delivery.count.limit"),
                           value(group_id, "share.partition.max.record.locks"),
                           is_true(self.configs.value(group_id,
                                                      "share.renew.acknowledge.enable")))

    def read_committed(self, group_id: str) -> bool:
        return self.configs.value(group_id, "share.isolation.level") == "read_committed"

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.configs.int_value(group_id, "share.heartbeat.interval.ms")

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
        self.persist_membership(group_id)  # its tombstone
        for key in [k for k in self.partitions if k.group_id == group_id]:
            del self.partitions[key]

    async def start(self) -> None:
        """Share state from __share_group_state; membership from __consumer_offsets
        (group_store), members' sessions restarting now."""
        self.state.load()
        offsets = self.coordinator.offsets
        now = self.coordinator._now()
        upgraded = []
        for group_id, (_, value) in offsets.group_records[SHARE_GROUP_KEY_VERSION].items():
            if offsets.latest_group_record(group_id) != SHARE_GROUP_KEY_VERSION:
                continue
            try:
                if value[:1] == b"{":  # our JSON record, before Kafka's record types
                    self.groups[group_id] = decode_share(group_id, value, now)
                    self._written[group_id] = {share_records.group_key(
                        share_records.GROUP_METADATA, group_id): value}
                    upgraded.append(group_id)
                    continue
                self.groups[group_id] = self._load_records(group_id, value, now)
            except (CorruptOffsetRecord, UnicodeDecodeError) as exc:
                log.warning("share group %s: %s; starting it afresh", group_id, exc)
                continue
        for group_id in upgraded:  # rewritten as Kafka's records
            self.persist_membership(group_id)
        for key in self.state.snapshots:
            self.groups.setdefault(key.group_id, ShareGroup(key.group_id))

    def _load_records(self, group_id: str, metadata: bytes, now: float) -> ShareGroup:
        """A share group from its Kafka records (share_records), sessions restarting now."""
        offsets = self.coordinator.offsets
        gkey, mkey = share_records.group_key, share_records.member_key
        group_values = {share_records.GROUP_METADATA: metadata}
        written = {gkey(share_records.GROUP_METADATA, group_id): metadata}
        target = offsets.aux_group_records[share_records.TARGET_ASSIGNMENT_METADATA].get(
            group_id)
        if target is not None:
            group_values[share_records.TARGET_ASSIGNMENT_METADATA] = target
            written[gkey(share_records.TARGET_ASSIGNMENT_METADATA, group_id)] = target
        member_values = {}
        for version in share_records.MEMBER_KEYS:
            member_values[version] = dict(offsets.member_records[version].get(group_id, {}))
            for member_id, value in member_values[version].items():
                written[mkey(version, group_id, member_id)] = value
        names = {t.topic_id: t.name for t in self.topics.topics.values()}
        loaded = share_records.decode(group_id, group_values, member_values, names.get)
        group = ShareGroup(group_id, loaded.epoch)
        for m in loaded.members.values():
            group.members[m.member_id] = ShareMember(
                m.member_id, m.epoch, m.subscribed, now, m.client_id, m.client_host, m.rack_id,
                m.previous_epoch)
            group.assignment[m.member_id] = set(m.target)
        self._written[group_id] = written
        return group

    def _records(self, group: ShareGroup) -> dict[bytes, bytes]:
        def topic_id(name: str) -> uuid.UUID | None:
            topic = self.topics.topics.get(name)
            return None if topic is None else topic.topic_id

        members = {}
        for m in group.members.values():
            assigned = set(group.assignment.get(m.member_id, ()))
            members[m.member_id] = share_records.MemberRecord(
                m.member_id, m.epoch, m.previous_epoch, m.subscribed, m.client_id,
                m.client_host, m.rack_id, assigned, assigned)
        return share_records.encode(share_records.GroupRecords(
            group.group_id, group.epoch, group.epoch, members), topic_id)

    def persist_membership(self, group_id: str) -> None:
        """Write the group's records that changed, and tombstones for those of members gone,
        in one batch (before the member's answer); the group's ShareGroupMetadata record goes
        last in every batch, so it stays the group's latest record at the next start."""
        group = self.groups.get(group_id)
        wanted = {} if group is None else self._records(group)
        written = self._written.get(group_id, {})
        metadata = share_records.group_key(share_records.GROUP_METADATA, group_id)
        changes = record_changes(wanted, written, metadata)
        if not changes:
            return
        self.coordinator.offsets.write_records(group_id, changes)
        if wanted:
            self._written[group_id] = wanted
        else:
            self._written.pop(group_id, None)

    def tick(self, now: float) -> None:
        for group in self.groups.values():
            timeout_ms = self.configs.int_value(group.group_id, "share.session.timeout.ms")
            for member in list(group.members.values()):
                if now - member.last_seen > timeout_ms / 1000:
                    log.info("share group %s: member %s session expired", group.group_id,
                             member.member_id)
                    self._remove_member(group, member.member_id)
                    self.persist_membership(group.group_id)
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
        result = self._heartbeat(group_id, member_id, member_epoch, subscribed, now,
                                 client_id, client_host, rack_id)
        if group_id in self.groups or group_id in self._written:
            self.persist_membership(group_id)
        return result

    def _heartbeat(
        self, group_id: str, member_id: str, member_epoch: int,
        subscribed: Iterable[str] | None, now: float, client_id: str,
        client_host: str, rack_id: str | None,
    ) -> HeartbeatResult:
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
        self._reassign(group)
        if member.epoch != group.epoch:
            member.previous_epoch, member.epoch = member.epoch, group.epoch
        assignment = self.assignment(group, member)
        for topic, partitions in assignment.items():  # Kafka initializes on assignment
            for partition in partitions:
                self.initialize(ShareKey(group_id, topic, partition))
        return HeartbeatResult(errors.NONE, member_id=member_id, epoch=member.epoch,
                               assignment=assignment)

    def _reassign(self, group: ShareGroup) -> None:
        """Run the simple assignor when members, subscriptions or partition counts changed
        (a new partition count bumps the group epoch, as Kafka's metadata refresh does)."""
        counts = {}
        for name in sorted(group.subscribed_topics()):
            topic = self.topics.topics.get(name)
            if topic is not None:
                counts[name] = len(topic.partitions)
        members = tuple((m.member_id, m.subscribed) for m in group.members.values())
        basis = (members, tuple(counts.items()))
        if basis == group.assigned_from:
            return
        if group.assigned_from is not None and members == group.assigned_from[0]:  # type: ignore[index]
            group.epoch += 1
        group.assignment = share_assignor.assign(
            {m.member_id: m.subscribed for m in group.members.values()}, counts,
            group.assignment)
        group.assigned_from = basis

    def assignment(self, group: ShareGroup, member: ShareMember) -> dict[str, list[int]]:
        """The member's partitions by topic (topics in name order)."""
        self._reassign(group)
        out: dict[str, list[int]] = {}
        for topic, partition in sorted(group.assignment.get(member.member_id, ())):
            out.setdefault(topic, []).append(partition)
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

    def initialize(self, key: ShareKey) -> None:
        """An assigned share-partition gets state (start offset -1) if it has none yet."""
        if key not in self.partitions and self.state.get(key) is None:
            self.unsaved.add(key)

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition:
        """The share-partition for fetching: restored from ``__share_group_state``, or started
        where the group's share.auto.offset.reset says (latest, Kafka's default) when it never
        had a start offset. Its settings follow the group's configs."""
        key = ShareKey(group_id, topic, partition)
        plog = self.topics.partition(topic, partition)
        topic_id = self._topic_id(topic)
        part = self.partitions.get(key)
        if part is not None and self.topic_ids.get(key) != topic_id:
            part = None  # the topic was deleted and created again: a new share-partition
        config = self.config_for(group_id)
        if part is None:
            self.topic_ids[key] = topic_id
            snap = self.state.get(key)
            if snap is not None and snap.topic_id not in (None, topic_id):
                snap = None
            if snap is None or snap.start_offset == UNINITIALIZED:
                part = SharePartition(self._reset_offset(group_id, plog), config)
                self.unsaved.add(key)  # the start offset must survive a restart
            else:
                part = SharePartition.restore(snap.start_offset, snap.batches, config)
            self.partitions[key] = part
        part.config = config
        if part.start_offset < plog.log_start_offset:  # retention deleted the start
            part.reset_start_offset(plog.log_start_offset)
        return part

    def _topic_id(self, topic: str) -> str | None:
        found = self.topics.topics.get(topic)
        return None if found is None else str(found.topic_id)

    def _reset_offset(self, group_id: str, plog: PartitionLog) -> int:
        """share.auto.offset.reset: earliest, latest or by_duration:<ISO-8601 duration>."""
        value = self.configs.value(group_id, "share.auto.offset.reset")
        if value == "earliest":
            return plog.log_start_offset
        if value.startswith("by_duration:"):
            found = plog.offset_for_timestamp(int(time.time() * 1000) - _duration_ms(value[12:]))
            return found[0] if found is not None else plog.next_offset
        return plog.next_offset

    async def persist(self, group_id: str, touched: Iterable[TopicPartition]) -> None:
        """Write the touched share-partitions (and any newly initialized one) durably."""
        keys = {ShareKey(group_id, t, p) for t, p in touched} | self.unsaved
        self.unsaved = set()
        for key in sorted(keys, key=lambda k: (k.group_id, k.topic, k.partition)):
            part = self.partitions.get(key)
            if part is not None:
                await self.state.save(key, part, self.topic_ids.get(key))
            elif self.state.get(key) is None:
                await self.state.save_snapshot(key, ShareSnapshot(UNINITIALIZED, ()))

    # -- offsets admin (DescribeShareGroupOffsets, AlterShareGroupOffsets, Delete...) -----------

    def state_keys(self, group_id: str) -> list[ShareKey]:
        """Every share-partition of the group that has state, persisted or in memory."""
        keys = set(self.state.keys_of(group_id))
        keys.update(k for k in self.partitions if k.group_id == group_id)
        keys.update(k for k in self.unsaved if k.group_id == group_id)
        return sorted(keys, key=lambda k: (k.topic, k.partition))

    def start_and_lag(self, key: ShareKey) -> tuple[int, int]:
        """(start offset, lag) as DescribeShareGroupOffsets v1 reports them; (-1, -1) for a
        share-partition without state or not yet initialized."""
        part = self.partitions.get(key)
        if part is None:
            snap = self.state.get(key)
            if snap is None or snap.start_offset == UNINITIALIZED:
                return UNINITIALIZED, UNINITIALIZED
            part = SharePartition.restore(snap.start_offset, snap.batches,
                                          self.config_for(key.group_id))
        topic = self.topics.topics.get(key.topic)
        if topic is None or key.partition >= len(topic.partitions):
            return part.start_offset, UNINITIALIZED
        return part.start_offset, part.lag(topic.partitions[key.partition].next_offset)

    def ensure_group(self, group_id: str) -> ShareGroup:
        """AlterShareGroupOffsets on an unknown id creates the (empty) share group, as Kafka."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    async def alter_start_offset(self, key: ShareKey, offset: int) -> None:
        """Start the share-partition over at ``offset`` (stored as given, as Kafka 4.4 does;
        -1 makes the next fetch apply share.auto.offset.reset again)."""
        if offset == UNINITIALIZED:
            self.partitions.pop(key, None)
            self.unsaved.discard(key)
            await self.state.save_snapshot(key, ShareSnapshot(UNINITIALIZED, ()))
            return
        part = SharePartition(offset, self.config_for(key.group_id))
        self.partitions[key] = part
        self.topic_ids[key] = self._topic_id(key.topic)
        self.unsaved.discard(key)
        await self.state.save(key, part, self.topic_ids[key])

    async def delete_state(self, keys: list[ShareKey]) -> None:
        """Forget share-partitions (DeleteShareGroupOffsets): the next fetch starts over."""
        for key in keys:
            self.partitions.pop(key, None)
            self.unsaved.discard(key)
        await self.state.delete(keys)

    async def deleted(self, group_id: str) -> None:
        """DeleteGroups removed the group: its share state goes too."""
        await self.delete_state(self.state_keys(group_id))


def _duration_ms(text: str) -> int:
    """An ISO-8601 duration (PnDTnHnMn.nS, as Java's Duration.parse) in milliseconds."""
    match = _DURATION.match(text)
    if match is None:
        return 0
    days, hours, minutes, seconds = match.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
             + float(seconds or 0))
    return int(total * 1000)
