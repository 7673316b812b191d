"""Classic-protocol members of a KIP-848 consumer group (online migration, see migration.py).

A consumer group keeps answering JoinGroup, SyncGroup, Heartbeat and LeaveGroup for members that
still speak the classic protocol. They take part in the broker-side assignment like every
member: a JoinGroup is one reconciliation step (its subscription's owned partitions play the part
of a heartbeat's), answered at once with generation = the member's epoch; SyncGroup hands over
the member's current assignment; a Heartbeat answers REBALANCE_IN_PROGRESS when the member has
to rejoin to move on (the group epoch passed its epoch, it has partitions to revoke, or
partitions it waits for were released). Kafka 4's GroupMetadataManager
(classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup) defines the answers.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from . import errors, migration
from .consumer import ClassicMembership, ConsumerGroup, ConsumerGroups, ConsumerMember
from .consumer_protocol import MalformedProtocol, read_subscription, version_of, write_assignment
from .member import JoinResult, SyncResult, join_error
from .migration import CONSUMER_PROTOCOL_TYPE

if TYPE_CHECKING:
    from .coordinator import JoinRequest


def supports(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a
    protocol every classic member supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return not classic or any(all(name in {n for n, _ in c.protocols} for c in classic)
                              for name in names)


def _member(group: ConsumerGroup, member_id: str, instance_id: str | None
            ) -> tuple[ConsumerMember | None, int]:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        member = group.members.get(group.static.get(instance_id, ""))
        if member is not None and member.member_id != member_id:
            return None, errors.FENCED_INSTANCE_ID
    if member is None or member.classic is None:
        return None, errors.UNKNOWN_MEMBER_ID
    return member, errors.NONE


def join(consumer: ConsumerGroups, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
    now = consumer.coordinator._now()
    unknown = not req.member_id
    member_id = req.member_id or str(uuid.uuid4())
    if member_id not in group.members and \
            len(group.members) >= consumer.config.group_consumer_max_size:
        return join_error(errors.GROUP_MAX_SIZE_REACHED, req.member_id)
    if not supports(group, req.protocol_type, [name for name, _ in req.protocols]):
        return join_error(errors.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
    if unknown and req.require_known_member_id and req.group_instance_id is None:
        return join_error(errors.MEMBER_ID_REQUIRED, member_id)
    try:
        subscription = read_subscription(req.protocols[0][1])
    except MalformedProtocol:
        return join_error(errors.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
    member = group.members.get(member_id)
    changed = False
    replaced_consumer_member = False
    if req.group_instance_id is not None:
        previous = group.members.get(group.static.get(req.group_instance_id, ""))
        if previous is not None and previous.member_id != member_id:
            if not unknown:
                return join_error(errors.FENCED_INSTANCE_ID, req.member_id)
            # The static member comes back under a new id and takes over its place.
            del group.members[previous.member_id]
            if previous.member_id in group.target:
                group.target[member_id] = group.target.pop(previous.member_id)
            previous.member_id = member_id
            group.members[member_id] = previous
            group.static[req.group_instance_id] = member_id
            previous.left_static = False
            replaced_consumer_member = previous.classic is None
            member = previous
    if member is not None and member.classic is None and not replaced_consumer_member:
        return join_error(errors.UNKNOWN_MEMBER_ID, req.member_id)
    if member is None:
        member = ConsumerMember(member_id, req.group_instance_id, subscription.rack_id,
                                req.client_id, req.client_host, req.rebalance_timeout_ms)
        group.members[member_id] = member
        if req.group_instance_id is not None:
            group.static[req.group_instance_id] = member_id
        changed = True
    topics = set(subscription.topics)
    if topics != member.subscribed:
        member.subscribed = topics
        changed = True
    member.rack_id = subscription.rack_id or member.rack_id
    if req.rebalance_timeout_ms > 0:
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.client_id, member.client_host = req.client_id, req.client_host
    member.last_heartbeat = now
    # Answered now: the session and sync timers start, the join timer stops.
    member.classic = ClassicMembership(
        req.session_timeout_ms, req.protocols,
        session_deadline=now + req.session_timeout_ms / 1000,
        sync_deadline=now + req.rebalance_timeout_ms / 1000)
    consumer.advance(group, changed)
    consumer.reconcile(group, member, subscription.owned, now)
    if replaced_consumer_member and migration.downgrade_on_replacement(consumer, group):
        migration.downgrade(consumer, group, None)  # every member speaks classic now
    else:
        consumer.persist(group.group_id)
    return JoinResult(errors.NONE, member_id=member_id, generation_id=member.epoch,
                      protocol_type=CONSUMER_PROTOCOL_TYPE,
                      protocol_name=member.classic.protocol_name, leader="")


def sync(consumer: ConsumerGroups, group: ConsumerGroup, generation_id: int, member_id: str,
         instance_id: str | None, protocol_type: str | None, protocol_name: str | None
         ) -> SyncResult:
    member, error = _member(group, member_id, instance_id)
    if member is None:
        return SyncResult(error)
    classic = member.classic
    assert classic is not None
    if generation_id != member.epoch:
        return SyncResult(errors.ILLEGAL_GENERATION)
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
            (protocol_name is not None and protocol_name != classic.protocol_name):
        return SyncResult(errors.INCONSISTENT_GROUP_PROTOCOL)
    now = consumer.coordinator._now()
    if group.group_epoch > member.epoch and not member.revoking:
        _expect_rejoin(member, now)
        return SyncResult(errors.REBALANCE_IN_PROGRESS)
    classic.sync_deadline = None
    classic.session_deadline = now + classic.session_timeout_ms / 1000
    assignment = write_assignment(member.assigned, version_of(classic.protocols[0][1]))
    return SyncResult(errors.NONE, assignment, protocol_type, protocol_name)


def heartbeat(consumer: ConsumerGroups, group: ConsumerGroup, generation_id: int,
              member_id: str, instance_id: str | None) -> int:
    member, error = _member(group, member_id, instance_id)
    if member is None:
        return error
    classic = member.classic
    assert classic is not None
    if generation_id != member.epoch:
        return errors.ILLEGAL_GENERATION
    now = consumer.coordinator._now()
    classic.session_deadline = now + classic.session_timeout_ms / 1000
    member.last_heartbeat = now
    pending = group.target.get(member.member_id, set()) - member.assigned
    released = bool(pending) and member.epoch == group.assignment_epoch and \
        not (pending & group.owned_elsewhere(member.member_id))
    if member.epoch < group.group_epoch or member.revoking or released:
        _expect_rejoin(member, now)
        return errors.REBALANCE_IN_PROGRESS
    return errors.NONE


def _expect_rejoin(member: ConsumerMember, now: float) -> None:
    """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: rejoin within the rebalance timeout."""
    assert member.classic is not None
    if member.classic.join_deadline is None:
        member.classic.join_deadline = now + member.rebalance_timeout_ms / 1000


def leave(consumer: ConsumerGroups, group: ConsumerGroup,
          members: list[tuple[str, str | None]]) -> list[int]:
    """LeaveGroup: the members leave; one group-epoch bump for all of them. When only classic
    members would remain, the group becomes classic again without the leavers (Kafka 4.4's
    classicGroupLeaveToConsumerGroup, also for consumer-protocol members removed this way)."""
    answers: list[int] = []
    leaving: list[ConsumerMember] = []
    for member_id, instance_id in members:
        # Kafka 4.4 removes consumer-protocol members this way too (an admin's
        # removeMembersFromConsumerGroup).
        if instance_id is None:
            member = group.members.get(member_id)
            error = errors.NONE if member is not None else errors.UNKNOWN_MEMBER_ID
        else:
            member = group.members.get(group.static.get(instance_id, ""))
            error = errors.UNKNOWN_MEMBER_ID if member is None else \
                errors.FENCED_INSTANCE_ID if member_id and member_id != member.member_id else \
                errors.NONE
        if error == errors.NONE and member is not None and all(m is not member for m in leaving):
            leaving.append(member)
        answers.append(error)
    if not leaving:
        return answers
    if migration.downgrade_allowed_on_leave(consumer, group, leaving):
        migration.downgrade(consumer, group, leaving)
        return answers
    for member in leaving:
        consumer.remove_member(group, member, bump=False)
    consumer.after_removal(group)
    consumer.persist(group.group_id)
    return answers
