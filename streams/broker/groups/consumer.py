"""KIP-848 consumer groups (``group.protocol=consumer``): the broker assigns partitions and
members reconcile toward it one heartbeat at a time, with no stop-the-world rebalance.

Epochs (KIP-848 "Group epoch / assignment epoch / member epoch"): the group epoch grows when
membership, a subscription or a subscribed topic's partition count changes; the target
assignment is then recomputed by the assignor and stamped with that epoch. A member moves to the
target epoch once it owns no partition the target gives to someone else: first it is told to
revoke those (its assignment shrinks, its epoch stays), and a partition is handed to its new
owner only after the old owner's heartbeat shows it released.

Groups survive a broker restart: each change is written to __consumer_offsets as Kafka's own
group records (consumer_records.py) before the member is answered and replayed at start, so
epochs never go back and members carry on with the epoch they had.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import consumer_records, errors, migration
from .assignors import ASSIGNORS, TopicPartition
from .group_store import decode_consumer
from .offsets_codec import CONSUMER_GROUP_KEY_VERSION, CorruptOffsetRecord
from .protocols import GroupListing, GroupProtocol, GroupType
from .record_format import group_key, member_key, record_changes

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1  # MemberEpoch -1: the member leaves
STATIC_LEAVE_EPOCH = -2  # -2: a static member leaves and will come back
FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
UNSUPPORTED_VERSION = 35
INVALID_REGULAR_EXPRESSION = 128
# Java's java.util.regex has these, RE2/J (which Kafka compiles SubscribedTopicRegex with) not:
# lookarounds, backreferences, possessive quantifiers and atomic groups.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|[*+?}]\+|\(\?>")


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed: set[str] = field(default_factory=set)  # by name
    regex: re.Pattern[str] | None = None  # SubscribedTopicRegex, matched against whole names
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = -1
    assigned: set[TopicPartition] = field(default_factory=set)  # what it was told it owns
    revoking: set[TopicPartition] = field(default_factory=set)  # told to give these up
    revoke_deadline: float | None = None
    last_heartbeat: float = 0.0
    last_sent: frozenset[TopicPartition] | None = None  # the assignment last answered
    # Left with epoch -2 (KIP-345 style): its partitions wait for the same group.instance.id
    # until the session timeout ends.
    left_static: bool = False
    # Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside
    # a consumer group: KIP-848's online migration (consumer_classic.py).
    classic: ClassicMembership | None = None


@dataclass(slots=True)
class ClassicMembership:
    """What a classic-protocol member of a consumer group keeps beyond a consumer member:
    its JoinGroup protocols and session timeout, and Kafka's three timers for it (session;
    join: it was told to rejoin; sync: it was answered a JoinGroup and must send SyncGroup),
    as loop-clock deadlines."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    session_deadline: float
    join_deadline: float | None = None
    sync_deadline: float | None = None

    @property
    def protocol_name(self) -> str:
        """The name a JoinGroup answer carries: the member's first protocol (Kafka's)."""
        return self.protocols[0][0]


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, set[TopicPartition]] = field(default_factory=dict)
    topic_sizes: dict[str, int] = field(default_factory=dict)  # what the target was built on
    static: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    empty_since_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def state(self) -> str:
        """Kafka's ConsumerGroupState names."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(m.epoch != self.assignment_epoch or m.revoking
               or m.assigned != self.target.get(m.member_id, set())
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def owned_elsewhere(self, member_id: str) -> set[TopicPartition]:
        """Partitions some other member still owns (assigned or being revoked)."""
        out: set[TopicPartition] = set()
        for other in self.members.values():
            if other.member_id != member_id:
                out |= other.assigned | other.revoking
        return out


@dataclass(slots=True, frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, null fields meaning "unchanged since the last one"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: frozenset[TopicPartition] | None
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True, frozen=True)
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0  # Kafka's error answers leave the field at its default
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None


class ConsumerGroups(GroupProtocol):
    """Every KIP-848 group of this broker."""

    group_type = GroupType.CONSUMER

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.config = coordinator.config
        self.groups: dict[str, ConsumerGroup] = {}
        self.assignors = self.config.group_consumer_assignors.split(",")
        # each group's records as last written (consumer_records): {key: value}
        self._written: dict[str, dict[bytes, bytes]] = {}

    async def start(self) -> None:
        """Groups come back from their records in __consumer_offsets with their epochs and
        members (sessions restart now), unless the id became a classic group afterwards. A
        group an older broker wrote as one JSON record is rewritten as Kafka's records."""
        offsets = self.coordinator.offsets
        now = self.coordinator._now()
        upgraded = []
        for group_id, (_, value) in offsets.group_records[CONSUMER_GROUP_KEY_VERSION].items():
            if offsets.latest_group_record(group_id) != CONSUMER_GROUP_KEY_VERSION:
                continue
            try:
                if value[:1] == b"{":  # our JSON record, before Kafka's record types
                    self.groups[group_id] = decode_consumer(group_id, value, now)
                    self._written[group_id] = {
                        group_key(consumer_records.GROUP_METADATA, group_id): value}
                    upgraded.append(group_id)
                    continue
                self.groups[group_id] = self._load_records(group_id, value, now)
            except (CorruptOffsetRecord, UnicodeDecodeError, re.error) as exc:
                log.warning("consumer group %s: %s; starting it afresh", group_id, exc)
                continue
        for group_id in upgraded:
            self.persist(group_id)
        if self.groups:
            log.info("loaded %d consumer group(s)", len(self.groups))

    def _load_records(self, group_id: str, metadata: bytes, now: float) -> ConsumerGroup:
        """A group from its Kafka records (consumer_records); sessions (and revocation
        deadlines) restart at ``now``. How long an empty group has been empty is not in
        Kafka's records: its offsets' retention counts from this start."""
        offsets = self.coordinator.offsets
        group_values = {consumer_records.GROUP_METADATA: metadata}
        written = {group_key(consumer_records.GROUP_METADATA, group_id): metadata}
        for version in consumer_records.GROUP_KEYS:
            value = offsets.aux_group_records[version].get(group_id)
            if value is not None:
                group_values[version] = value
                written[group_key(version, group_id)] = value
        member_values = {}
        for version in consumer_records.MEMBER_KEYS:
            member_values[version] = dict(offsets.member_records[version].get(group_id, {}))
            for member_id, value in member_values[version].items():
                written[member_key(version, group_id, member_id)] = value
        names = {t.topic_id: t.name for t in self.coordinator.broker.topics.topics.values()}
        loaded = consumer_records.decode(group_id, group_values, member_values, names.get)
        group = ConsumerGroup(group_id, loaded.epoch, loaded.assignment_epoch,
                              topic_sizes=dict(loaded.topic_sizes))
        group.target = {mid: set(tps) for mid, tps in loaded.target.items()}
        for m in loaded.members.values():
            member = ConsumerMember(
                m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, subscribed=set(m.subscribed),
                regex=re.compile(m.regex) if m.regex else None,
                server_assignor=m.server_assignor, epoch=m.epoch,
                previous_epoch=m.previous_epoch, assigned=set(m.assigned),
                revoking=set(m.revoking), last_heartbeat=now, left_static=m.left_static,
                classic=None if m.classic is None else ClassicMembership(
                    m.classic[0], m.classic[1], session_deadline=now + m.classic[0] / 1000))
            if member.revoking and member.classic is None:
                member.revoke_deadline = now + member.rebalance_timeout_ms / 1000
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static[member.instance_id] = member.member_id
        self._written[group_id] = written
        return group

    def _records(self, group: ConsumerGroup) -> dict[bytes, bytes]:
        def topic_id(name: str) -> uuid.UUID | None:
            topic = self.coordinator.broker.topics.topics.get(name)
            return None if topic is None else topic.topic_id

        members = {m.member_id: consumer_records.MemberRecord(
            m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host,
            frozenset(m.subscribed), m.regex.pattern if m.regex else None,
            m.rebalance_timeout_ms, m.server_assignor,
            None if m.classic is None else (m.classic.session_timeout_ms, m.classic.protocols),
            m.epoch, m.previous_epoch, m.left_static, set(m.assigned), set(m.revoking))
            for m in group.members.values()}
        return consumer_records.encode(consumer_records.GroupRecords(
            group.group_id, group.group_epoch, group.assignment_epoch, dict(group.topic_sizes),
            members, {mid: set(tps) for mid, tps in group.target.items()}), topic_id)

    def persist(self, group_id: str) -> None:
        """Write the group's records that changed since, and tombstones for those of members
        gone, in one batch (before answering); ConsumerGroupMetadata goes last in every batch,
        so it stays the group's latest record at the next start."""
        group = self.groups.get(group_id)
        wanted = {} if group is None else self._records(group)
        written = self._written.get(group_id, {})
        metadata = group_key(consumer_records.GROUP_METADATA, group_id)
        changes = record_changes(wanted, written, metadata)
        if not changes:
            return
        self.coordinator.offsets.write_records(group_id, changes)
        if wanted:
            self._written[group_id] = wanted
        else:
            self._written.pop(group_id, None)

    # -- the seam ------------------------------------------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def listings(self) -> Iterable[GroupListing]:
        for group in self.groups.values():
            yield GroupListing(group.group_id, "consumer", group.state(), GroupType.CONSUMER)

    def is_empty(self, group_id: str) -> bool:
        return not self.groups[group_id].members

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        self.persist(group_id)  # its tombstone

    def empty_since_ms(self, group_id: str) -> int | None:
        group = self.groups[group_id]
        return None if group.members else group.empty_since_ms

    def yield_to_classic(self, group_id: str) -> bool:
        """Kafka lets an empty consumer group become classic again."""
        if self.groups[group_id].members:
            return False
        self.forget(group_id)
        return True

    def subscribed_topics(self, group_id: str) -> set[str] | None:
        group = self.groups[group_id]
        return {t for m in group.members.values() for t in self._topics_of(m)}

    def _topics_of(self, member: ConsumerMember) -> set[str]:
        """The member's subscription: its topic names, and the non-internal topics its regex
        matches in full (resolved against the topics that exist now)."""
        if member.regex is None:
            return member.subscribed
        topics = self.coordinator.broker.topics.topics
        return member.subscribed | {name for name, topic in topics.items()
                                    if not topic.is_internal and member.regex.fullmatch(name)}

    def check_commit(self, group_id: str, member_id: str, generation_or_epoch: int,
                     api_version: int) -> int:
        """KIP-848: commits are fenced by member epoch (OffsetCommit v9+)."""
        group = self.groups[group_id]
        if generation_or_epoch < 0 and not group.members:
            return errors.NONE  # an admin commit to an empty group
        member = group.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        if member.classic is not None:
            # A classic member commits with its generation, which is its member epoch.
            return errors.NONE if generation_or_epoch == member.epoch \
                else errors.ILLEGAL_GENERATION
        if api_version < 9:
            return UNSUPPORTED_VERSION
        if generation_or_epoch != member.epoch:
            return STALE_MEMBER_EPOCH
        return errors.NONE

    def tick(self, now: float) -> None:
        """Session expiry (group.consumer.session.timeout.ms) and members that do not revoke
        within their rebalance timeout: both leave the group."""
        configs = self.coordinator.configs
        for group in list(self.groups.values()):
            # consumer.session.timeout.ms (group config) over the broker's
            session = configs.int_value(group.group_id, "consumer.session.timeout.ms") / 1000
            for member in list(group.members.values()):
                if self.groups.get(group.group_id) is not group:
                    break  # downgraded to a classic group by the previous removal
                if member.member_id not in group.members:
                    continue
                why = classic_expiry(member, now) if member.classic is not None else \
                    "session expired" if now > member.last_heartbeat + session else \
                    "did not revoke in time" if member.revoke_deadline is not None \
                    and now > member.revoke_deadline else None
                if why is not None:
                    log.info("consumer group %s: member %s %s", group.group_id,
                             member.member_id, why)
                    self.fence(group, member)

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        result = self._heartbeat(req)
        if req.group_id in self.groups or req.group_id in self._written:
            self.persist(req.group_id)
        return result

    def _heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        error = self._validate(req)
        if error:
            return HeartbeatResult(error[0], error[1], req.member_id)
        group = self.groups.get(req.group_id)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            if group is None:
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND,
                                       f"Group {req.group_id} not found.", req.member_id)
            leaving = group.members.get(req.member_id)
            if leaving is None:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, None, req.member_id)
            if req.member_epoch == STATIC_LEAVE_EPOCH and leaving.instance_id is not None:
                leaving.left_static = True  # keeps its partitions for its instance id
            else:
                self.fence(group, leaving)
            return HeartbeatResult(errors.NONE, None, req.member_id, req.member_epoch)
        if group is None:
            if req.member_epoch != 0:
                if self.coordinator.group_type(req.group_id) not in (None, GroupType.CONSUMER):
                    # e.g. the group went back to classic when this member was removed
                    return HeartbeatResult(errors.GROUP_ID_NOT_FOUND,
                                           f"Group {req.group_id} is not a consumer group",
                                           req.member_id)
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, None, req.member_id)
            upgraded = migration.maybe_upgrade(self, req.group_id)
            if upgraded is not None:
                group = self.groups[req.group_id] = upgraded
            elif self.coordinator.claim_group_id(req.group_id, GroupType.CONSUMER):
                group = self.groups[req.group_id] = ConsumerGroup(req.group_id)
            else:
                return HeartbeatResult(errors.GROUP_ID_NOT_FOUND,
                                       f"Group {req.group_id} is not a consumer group",
                                       req.member_id)
        member = group.members.get(req.member_id)
        now = self.coordinator._now()
        changed = False  # membership or subscription changed in this heartbeat
        if member is None:
            if req.member_epoch != 0:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID, None, req.member_id)
            if len(group.members) >= self.config.group_consumer_max_size:
                return HeartbeatResult(errors.GROUP_MAX_SIZE_REACHED, None, req.member_id)
            previous = group.members.get(group.static.get(req.instance_id or "", ""))
            if previous is not None and not previous.left_static:
                return HeartbeatResult(UNRELEASED_INSTANCE_ID,
                                       f"Static member {req.instance_id} is still in use.",
                                       req.member_id)
            if previous is not None:
                # The static member comes back under a new member id: it takes over the old
                # member's epoch and partitions, no rebalance (KIP-848 static membership).
                member = self._replace_static(group, previous, req)
            else:
                member = ConsumerMember(req.member_id, req.instance_id, req.rack_id,
                                        req.client_id, req.client_host, req.rebalance_timeout_ms)
                if req.instance_id is not None:
                    group.static[req.instance_id] = req.member_id
                group.members[req.member_id] = member
                changed = True
        elif req.member_epoch != member.epoch:
            # A lost answer may leave the member one epoch behind (Kafka accepts the previous
            # epoch when it owns nothing it should not); anything else is fenced.
            if not (req.member_epoch == member.previous_epoch and req.owned is not None
                    and req.owned <= member.assigned):
                return HeartbeatResult(FENCED_MEMBER_EPOCH,
                                       "The consumer group member has a smaller member epoch "
                                       "than expected" if req.member_epoch < member.epoch else
                                       "The consumer group member has a greater member epoch "
                                       "than expected", req.member_id)
            member.last_sent = None
        member.last_heartbeat = now
        if req.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.subscribed_topic_names is not None:
            topics = set(req.subscribed_topic_names)
            if topics != member.subscribed:
                member.subscribed = topics
                changed = True
        if req.subscribed_topic_regex is not None:
            pattern = re.compile(req.subscribed_topic_regex) if req.subscribed_topic_regex \
                else None
            if pattern != member.regex:
                member.regex = pattern
                changed = True
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor = req.server_assignor
            changed = True
        self.advance(group, changed)
        self.reconcile(group, member, req.owned, now)
        assignment = frozenset(member.assigned)
        # Kafka answers with the assignment on a join, on a full request (a client recovering
        # from an error sends every field) and when the assignment changed.
        full = (req.rebalance_timeout_ms != -1 and req.owned is not None
                and (req.subscribed_topic_names is not None or bool(req.subscribed_topic_regex)))
        send = assignment if (assignment != member.last_sent or req.member_epoch == 0
                              or full) else None
        member.last_sent = assignment
        interval = self.coordinator.configs.int_value(req.group_id,
                                                      "consumer.heartbeat.interval.ms")
        return HeartbeatResult(errors.NONE, None, member.member_id, member.epoch, interval, send)

    def _validate(self, req: HeartbeatRequest) -> tuple[int, str] | None:
        if not req.group_id:
            return errors.INVALID_REQUEST, "GroupId can't be empty."
        if not req.member_id:
            return errors.INVALID_REQUEST, "MemberId can't be empty."
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms < 0:
                return errors.INVALID_REQUEST, \
                    "RebalanceTimeoutMs must be provided in first request."
            if req.owned is None or req.owned:
                return errors.INVALID_REQUEST, \
                    "TopicPartitions must be empty when (re-)joining."
            if req.subscribed_topic_names is None and not req.subscribed_topic_regex:
                return errors.INVALID_REQUEST, \
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
        elif req.member_epoch < STATIC_LEAVE_EPOCH:
            return errors.INVALID_REQUEST, f"MemberEpoch {req.member_epoch} is invalid."
        if req.subscribed_topic_regex:  # "" clears a regex (librdkafka sends it with names)
            error = _invalid_regex(req.subscribed_topic_regex)
            if error:
                return INVALID_REGULAR_EXPRESSION, \
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid " \
                    f"regular expression: {error}."
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            return UNSUPPORTED_ASSIGNOR, \
                f"ServerAssignor {req.server_assignor} is not supported. Supported " \
                f"assignors: {', '.join(self.assignors)}."
        return None

    # -- assignment ----------------------------------------------------------------------------

    def advance(self, group: ConsumerGroup, changed: bool) -> None:
        """After a member's request: bump the group epoch and recompute the target.

        Kafka bumps the epoch once for the member's change and once more when the subscribed
        topics' metadata changed (a first subscription to a topic, partitions added)."""
        sizes = self.topic_sizes(group)
        group.group_epoch += int(changed) + int(sizes != group.topic_sizes)
        if group.assignment_epoch < group.group_epoch:
            self._compute_target(group, sizes)

    def topic_sizes(self, group: ConsumerGroup) -> dict[str, int]:
        topics = self.coordinator.broker.topics.topics
        wanted = {t for m in group.members.values() for t in self._topics_of(m)}
        return {t: len(topics[t].partitions) for t in wanted if t in topics}

    def _compute_target(self, group: ConsumerGroup, sizes: dict[str, int]) -> None:
        chosen = next((m.server_assignor for m in group.members.values() if m.server_assignor),
                      self.assignors[0])
        assign = ASSIGNORS[chosen]
        current = {mid: m.assigned | m.revoking for mid, m in group.members.items()}
        group.target = assign({mid: self._topics_of(m) for mid, m in group.members.items()},
                              sizes,
                              current)
        group.topic_sizes = sizes
        group.assignment_epoch = group.group_epoch
        log.info("consumer group %s: target assignment at epoch %d (%s)", group.group_id,
                 group.assignment_epoch, chosen)

    def reconcile(self, group: ConsumerGroup, member: ConsumerMember,
                   owned: frozenset[TopicPartition] | None, now: float) -> None:
        """One step of KIP-848's reconciliation for ``member``."""
        if member.revoking and owned is not None and not (owned & member.revoking):
            member.revoking = set()  # its heartbeat shows them released
            member.revoke_deadline = None
        if member.revoking:
            return  # still waiting for the member to let go
        target = group.target.get(member.member_id, set())
        to_revoke = member.assigned - target
        if to_revoke:
            member.assigned -= to_revoke
            if owned is None or owned & to_revoke:
                member.revoking = to_revoke
                # Classic members have join/sync timers instead (Kafka's maybeReconcile).
                member.revoke_deadline = None if member.classic is not None \
                    else now + member.rebalance_timeout_ms / 1000
                return
            # It reports them released already (a classic member rejoining after an eager
            # revocation): no revocation round, as Kafka's CurrentAssignmentBuilder.
        free = target - member.assigned - group.owned_elsewhere(member.member_id)
        member.assigned |= free
        if member.epoch != group.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch

    @staticmethod
    def _replace_static(group: ConsumerGroup, previous: ConsumerMember, req: HeartbeatRequest
                        ) -> ConsumerMember:
        del group.members[previous.member_id]
        previous.member_id = req.member_id
        previous.left_static = False
        previous.client_id, previous.client_host = req.client_id, req.client_host
        previous.last_sent = None
        group.members[req.member_id] = previous
        assert req.instance_id is not None
        old_id = group.static[req.instance_id]
        group.static[req.instance_id] = req.member_id
        if old_id in group.target:
            group.target[req.member_id] = group.target.pop(old_id)
        return previous

    def fence(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Remove a member that left or timed out (Kafka's consumerGroupFenceMember): when the
        last member using the consumer protocol goes and classic members remain, the group
        becomes a classic group again (group.consumer.migration.policy)."""
        if migration.downgrade_allowed(self, group, member):
            migration.downgrade(self, group, [member])
        else:
            self.remove_member(group, member)
            self.persist(group.group_id)

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember, bump: bool = True) -> None:
        del group.members[member.member_id]
        if member.instance_id is not None and group.static.get(member.instance_id) == \
                member.member_id:
            del group.static[member.instance_id]
        if bump:
            self.after_removal(group)

    def after_removal(self, group: ConsumerGroup) -> None:
        """One group-epoch bump for the members just removed, and a new target."""
        group.group_epoch += 1
        if group.members:
            self._compute_target(group, self.topic_sizes(group))
        else:
            group.target = {}
            group.assignment_epoch = group.group_epoch
            group.empty_since_ms = int(time.time() * 1000)


def _invalid_regex(text: str) -> str | None:
    """Why ``text`` is not a regular expression RE2/J accepts, or None."""
    if _NOT_RE2.search(text):
        return "lookarounds, backreferences, possessive quantifiers and atomic groups are " \
            "not supported"
    try:
        re.compile(text)
    except re.error as exc:
        return str(exc)
    return None


def classic_expiry(member: ConsumerMember, now: float) -> str | None:
    """Why a classic-protocol member is fenced now (Kafka's session, join and sync timers)."""
    classic = member.classic
    assert classic is not None
    if now > classic.session_deadline:
        return "session expired"
    if classic.join_deadline is not None and now > classic.join_deadline:
        return "did not rejoin within the rebalance timeout"
    if classic.sync_deadline is not None and now > classic.sync_deadline:
        return "sent no SyncGroup within the rebalance timeout"
    return None
