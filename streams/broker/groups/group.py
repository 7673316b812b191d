"""One classic consumer group: its state, members, generation and protocol choice.

This module holds the data and the pure transitions (no timers, no I/O) so the rules can be unit
tested directly; the coordinator drives it and owns time.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from enum import Enum

from . import errors
from .member import JoinResult, Member, Protocols


class GroupState(str, Enum):
    """Kafka's classic group states; the values are what DescribeGroups/ListGroups print."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class Group:
    """Membership state of one group id."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_since_ms = _wall_ms()  # offsets of an Empty group expire counting from here
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        # Member ids handed out with MEMBER_ID_REQUIRED, and when they lapse (loop time).
        self.pending_members: dict[str, float] = {}
        # Rebalance bookkeeping, driven by the coordinator.
        self.join_timer: asyncio.TimerHandle | None = None
        # Members that got this generation's JoinGroup answer but sent no SyncGroup yet, and
        # the timer removing them after the rebalance timeout (Kafka's pending-sync expiry).
        self.pending_sync: set[str] = set()
        self.sync_timer: asyncio.TimerHandle | None = None
        self.initial_delay_remaining_ms: int | None = None  # set while the initial delay runs
        self.new_member_added = False

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state.value}, gen={self.generation_id}, "
                f"members={list(self.members)})")

    # -- queries ------------------------------------------------------------------------------

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def size(self) -> int:
        return len(self.members) + len(self.pending_members)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def rebalance_timeout_ms(self) -> int:
        """A rebalance waits as long as the most patient member allows."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def candidate_protocols(self, exclude: str | None = None) -> set[str] | None:
        """Protocols every member (but ``exclude``) supports; None when nobody else is in."""
        others = [m for mid, m in self.members.items() if mid != exclude]
        if not others:
            return None
        common = set(others[0].protocol_names)
        for member in others[1:]:
            common.intersection_update(member.protocol_names)
        return common

    def supports(self, protocol_type: str, names: list[str], member_id: str | None = None) -> bool:
        """Can a member with these protocols (re)join? (else INCONSISTENT_GROUP_PROTOCOL)."""
        if not protocol_type or not names:
            return False
        common = self.candidate_protocols(exclude=member_id)
        if common is None:
            return True
        return protocol_type == self.protocol_type and bool(common.intersection(names))

    def select_protocol(self) -> str:
        """Kafka's vote: each member names its favourite common protocol; most votes wins."""
        common = self.candidate_protocols()
        if not common:
            raise ValueError(f"group {self.group_id} has no protocol common to all members")
        votes = Counter(m.vote(common) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])  # first-voted wins a tie

    def static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A request for a known instance id but an older member id (KIP-345)."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        if self.static_member_fenced(member_id, group_instance_id):
            return errors.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return errors.UNKNOWN_MEMBER_ID
        return errors.NONE

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        """What the leader receives: every member's metadata for the chosen protocol."""
        return tuple(
            (m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        )

    def join_result_for(self, member: Member, skip_assignment: bool = False) -> JoinResult:
        """The current generation, as a JoinGroup answer for ``member``."""
        leader = self.is_leader(member.member_id)
        return JoinResult(
            errors.NONE,
            member_id=member.member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader_id or "",
            members=self.current_member_metadata() if leader else (),
            skip_assignment=skip_assignment and leader,
        )

    # -- transitions --------------------------------------------------------------------------

    def cancel_join_timer(self) -> None:
        """Stop the rebalance's timers (join phase and pending-sync expiry)."""
        if self.join_timer is not None:
            self.join_timer.cancel()
            self.join_timer = None
        if self.sync_timer is not None:
            self.sync_timer.cancel()
            self.sync_timer = None
        self.pending_sync.clear()

    def transition_to(self, state: GroupState) -> None:
        if state is not self.state:
            self.state = state
            self.state_since_ms = _wall_ms()

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.pending_sync.discard(member_id)
        instance = member.group_instance_id
        if instance is not None and self.static_members.get(instance) == member_id:
            del self.static_members[instance]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did (Kafka's
        maybeElectNewJoinedLeader); False when no member is awaiting a JoinGroup answer."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def replace_static_member(self, member: Member, new_member_id: str) -> str:
        """Give a rejoining static member a fresh id; the old id is fenced from now on."""
        old_id = member.member_id
        self.members = {
            (new_member_id if mid == old_id else mid): m for mid, m in self.members.items()
        }
        member.member_id = new_member_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_member_id)
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_member_id
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        return old_id

    def update_member(self, member: Member, protocols: Protocols, session_timeout_ms: int,
                      rebalance_timeout_ms: int, client_id: str) -> None:
        member.protocols = protocols
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.client_id = client_id

    def init_next_generation(self) -> None:
        """Start a new generation: CompletingRebalance with a chosen protocol, or Empty."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)
        for member in self.members.values():
            member.assignment = b""


def _wall_ms() -> int:
    return int(time.time() * 1000)
