"""KIP-848 online migration between classic and consumer groups
(``group.consumer.migration.policy``: bidirectional | upgrade | downgrade | disabled).

Upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group whose members use the
``consumer`` embedded protocol turns it into a consumer group. The classic members stay, as
classic-protocol members of the consumer group (consumer_classic.py answers their JoinGroup,
SyncGroup, Heartbeat and LeaveGroup): member epoch = the classic generation, current and target
assignment = their last classic assignment. Rebalances the classic group had in flight are
answered REBALANCE_IN_PROGRESS so the members rejoin.

Downgrade: when the last member using the consumer protocol leaves (or is fenced) and classic
members remain, the group becomes a classic group again: Stable at generation = the group
epoch, each member holding its target assignment, and a rebalance starts at once.

Kafka 4's GroupMetadataManager (validateOnlineUpgrade, convertToConsumerGroup,
validateOnlineDowngradeWithFencedMember, convertToClassicGroup) and
ConsumerGroup.fromClassicGroup / ClassicGroup.fromConsumerGroup define these rules.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from . import errors
from .consumer_protocol import (
    MalformedProtocol,
    read_assignment,
    read_subscription,
    version_of,
    write_assignment,
)
from .group import Group, GroupState
from .member import Member, SyncResult, join_error
from .offsets_codec import GROUP_METADATA_KEY_VERSION

if TYPE_CHECKING:
    from .consumer import ConsumerGroup, ConsumerGroups, ConsumerMember

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "upgrade")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "downgrade")


def maybe_upgrade(consumer: ConsumerGroups, group_id: str) -> ConsumerGroup | None:
    """The consumer group a non-empty classic group becomes for a joining consumer-protocol
    member, or None (no such classic group, or it may not be upgraded: the caller then answers
    GROUP_ID_NOT_FOUND as Kafka does)."""
    coordinator = consumer.coordinator
    classic = coordinator.groups.get(group_id)
    if classic is None or classic.is_(GroupState.DEAD) or \
            (classic.is_(GroupState.EMPTY) and not classic.pending_members):
        return None
    config = coordinator.config
    if not upgrade_enabled(config.group_consumer_migration_policy):
        log.info("cannot upgrade classic group %s: online upgrade is disabled", group_id)
        return None
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        log.info("cannot upgrade classic group %s: it does not use the consumer protocol",
                 group_id)
        return None
    if len(classic.members) > config.group_consumer_max_size:
        log.info("cannot upgrade classic group %s: more members than group.consumer.max.size",
                 group_id)
        return None
    try:
        converted = _from_classic(consumer, classic)
    except MalformedProtocol as exc:
        log.warning("cannot upgrade classic group %s: malformed consumer protocol (%s)",
                    group_id, exc)
        return None
    # Rebalances in flight end here: their members rejoin the consumer group.
    for member in classic.members.values():
        member.complete_join(join_error(errors.REBALANCE_IN_PROGRESS, member.member_id))
        member.complete_sync(SyncResult(errors.REBALANCE_IN_PROGRESS))
    classic.cancel_join_timer()
    classic.transition_to(GroupState.DEAD)
    del coordinator.groups[group_id]
    coordinator.offsets.write_group_record(group_id, GROUP_METADATA_KEY_VERSION, None)
    log.info("classic group %s (generation %d, %d members) becomes a consumer group",
             group_id, classic.generation_id, len(classic.members))
    return converted


def _from_classic(consumer: ConsumerGroups, classic: Group) -> ConsumerGroup:
    from .consumer import ClassicMembership, ConsumerGroup, ConsumerMember

    group = ConsumerGroup(classic.group_id, group_epoch=classic.generation_id,
                          assignment_epoch=classic.generation_id)
    now = consumer.coordinator._now()
    for old in classic.members.values():
        protocol = classic.protocol_name or old.protocols[0][0]
        subscription = read_subscription(old.metadata_for(protocol))
        assigned = set(read_assignment(old.assignment))
        member = ConsumerMember(
            old.member_id, old.group_instance_id, subscription.rack_id, old.client_id,
            old.client_host, old.rebalance_timeout_ms, subscribed=set(subscription.topics),
            epoch=classic.generation_id, previous_epoch=classic.generation_id,
            assigned=assigned, last_heartbeat=now,
            classic=ClassicMembership(old.session_timeout_ms, old.protocols,
                                      session_deadline=now + old.session_timeout_ms / 1000))
        group.members[member.member_id] = member
        group.target[member.member_id] = set(assigned)
        if member.instance_id is not None:
            group.static[member.instance_id] = member.member_id
    # The subscribed topics' metadata is the group's from the start: only the joining member's
    # change bumps the epoch (as Kafka 4.4 does).
    group.topic_sizes = consumer.topic_sizes(group)
    return group


def downgrade_allowed(consumer: ConsumerGroups, group: ConsumerGroup,
                      leaving: ConsumerMember) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember."""
    if leaving.classic is not None:
        return False
    others = [m for m in group.members.values() if m.member_id != leaving.member_id]
    return _classic_members_may_take_over(consumer, group, others)


def downgrade_allowed_on_leave(consumer: ConsumerGroups, group: ConsumerGroup,
                               leaving: list[ConsumerMember]) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers, for a LeaveGroup removing
    ``leaving``: members remain, and every one of them uses the classic protocol."""
    gone = {m.member_id for m in leaving}
    others = [m for m in group.members.values() if m.member_id not in gone]
    return _classic_members_may_take_over(consumer, group, others)


def _classic_members_may_take_over(consumer: ConsumerGroups, group: ConsumerGroup,
                                   others: list[ConsumerMember]) -> bool:
    """The members that remain are all classic ones, and the policy and group.max.size let a
    classic group take them over."""
    if not others or any(m.classic is None for m in others):
        return False
    config = consumer.config
    if not downgrade_enabled(config.group_consumer_migration_policy):
        log.info("cannot downgrade consumer group %s: online downgrade is disabled",
                 group.group_id)
        return False
    if len(others) > config.group_max_size:
        log.info("cannot downgrade consumer group %s: more members than group.max.size",
                 group.group_id)
        return False
    return True


def downgrade_on_replacement(consumer: ConsumerGroups, group: ConsumerGroup) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId, once a classic static member took
    the place of a consumer-protocol one: does every member now use the classic protocol?"""
    if any(m.classic is None for m in group.members.values()):
        return False
    config = consumer.config
    return downgrade_enabled(config.group_consumer_migration_policy) and \
        len(group.members) <= config.group_max_size


def downgrade(consumer: ConsumerGroups, group: ConsumerGroup,
              leaving: list[ConsumerMember] | None) -> None:
    """Turn ``group`` into a classic group without the ``leaving`` members. When members left,
    a rebalance starts; when a classic static member replaced the last consumer-protocol one
    (``leaving`` None), the group stays Stable in its generation, each member keeping its
    assignment."""
    coordinator = consumer.coordinator
    classic = Group(group.group_id)
    classic.generation_id = group.group_epoch
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    now = coordinator._now()
    gone = {m.member_id for m in leaving or ()}
    for member in group.members.values():
        if member.member_id in gone:
            continue
        assert member.classic is not None
        classic.add(Member(
            member.member_id, member.instance_id, member.client_id, member.client_host,
            member.classic.session_timeout_ms, member.rebalance_timeout_ms,
            CONSUMER_PROTOCOL_TYPE, member.classic.protocols, last_heartbeat=now))
    classic.protocol_name = classic.select_protocol()
    for each in classic.members.values():
        each.assignment = write_assignment(group.target.get(each.member_id, ()),
                                           version_of(each.metadata_for(classic.protocol_name)))
    classic.transition_to(GroupState.STABLE)
    consumer.forget(group.group_id)
    coordinator.groups[group.group_id] = classic
    log.info("consumer group %s becomes a classic group (generation %d)%s", group.group_id,
             classic.generation_id, f" as {', '.join(sorted(gone))} leave(s)" if gone else "")
    coordinator.rebalance_downgraded(classic, rebalance=leaving is not None)
