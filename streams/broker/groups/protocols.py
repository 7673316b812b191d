"""The seam between the group coordinator and its group protocols (Kafka 4's group types).

Kafka 4 keeps three types of group behind one coordinator: ``classic`` (JoinGroup/SyncGroup,
KIP-345/394), ``consumer`` (KIP-848, ConsumerGroupHeartbeat) and ``share`` (KIP-932,
ShareGroupHeartbeat). A group id belongs to exactly one type at a time; ListGroups (v5,
KIP-848's ``TypesFilter``) reports each group's type.

The classic protocol lives in ``coordinator`` itself (its state machine predates the seam). Every
other type is a :class:`GroupProtocol` registered in ``GroupCoordinator.__init__`` with
``self.register_protocol(protocol)``; the coordinator then

* routes ListGroups, DeleteGroups, OffsetCommit and OffsetDelete for the protocol's group ids to
  it (the hooks below), and calls ``tick`` from its session-expiry loop;
* lets the protocol take a group id with ``GroupCoordinator.claim_group_id`` (free ids, ids of
  the protocol's own groups and, as Kafka does, ids of *empty* classic groups, whose committed
  offsets are kept);
* shares committed offsets: ``GroupCoordinator.offsets`` (``__consumer_offsets``) serves every
  type, so OffsetFetch needs no hook.

A protocol's own APIs (heartbeats, describes, fetches) are handler modules that reach it with
``broker.groups.protocol(GroupType.X)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from . import errors


class GroupType(str, Enum):
    """Kafka's ``Group.GroupType``; the values are what ListGroups v5 reports and filters on."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


@dataclass(frozen=True, slots=True)
class GroupListing:
    """One ListGroups row.

    ``protocol_type`` is ListGroups' ProtocolType: the classic group's own (``consumer`` for
    consumers, ``connect`` for Connect workers...), ``consumer`` for a KIP-848 group and ``share``
    for a share group. ``state`` uses the type's state names (Kafka's: classic ``Empty``,
    ``PreparingRebalance``...; consumer ``Empty``, ``Assigning``, ``Reconciling``, ``Stable``;
    share ``Empty``, ``Stable``).
    """

    group_id: str
    protocol_type: str
    state: str
    group_type: GroupType


class GroupProtocol(ABC):
    """One non-classic group type plugged into the coordinator.

    All methods run on the broker's event loop and must not block. The coordinator calls
    ``start`` after committed offsets are loaded and ``stop`` before the broker closes (answer
    any parked request there).
    """

    group_type: ClassVar[GroupType]

    # -- required --------------------------------------------------------------------------

    @abstractmethod
    def has_group(self, group_id: str) -> bool:
        """Does this protocol own a live group with this id?"""

    @abstractmethod
    def listings(self) -> Iterable[GroupListing]:
        """A ListGroups row for every live group of this type."""

    @abstractmethod
    def is_empty(self, group_id: str) -> bool:
        """No members: DeleteGroups may delete the group (else NON_EMPTY_GROUP)."""

    @abstractmethod
    def forget(self, group_id: str) -> None:
        """Drop the group's membership state (DeleteGroups, or a classic group taking over an
        empty one). Committed offsets are the coordinator's to delete, not the protocol's."""

    # -- optional hooks, with Kafka's answers for a type that does not support them ---------

    async def start(self) -> None:
        """Load durable state (called once, after committed offsets are loaded)."""
        return None

    async def stop(self) -> None:
        """Release parked requests and timers."""
        return None

    async def deleted(self, group_id: str) -> None:
        """DeleteGroups removed the group (after ``forget``): drop its durable state."""
        return None

    def tick(self, now: float) -> None:
        """Expire sessions; ``now`` is the event loop's clock (seconds)."""
        return None

    def check_commit(self, group_id: str, member_id: str, generation_or_epoch: int,
                     api_version: int) -> int:
        """OffsetCommit's membership check for a group of this type; an error code.

        Default: refuse (Kafka: OffsetCommit to a share group is GROUP_ID_NOT_FOUND).
        """
        return errors.GROUP_ID_NOT_FOUND

    def subscribed_topics(self, group_id: str) -> set[str] | None:
        """Topics the group subscribes to (OffsetDelete refuses those with
        GROUP_SUBSCRIBED_TO_TOPIC while the group has members); None = not applicable, a
        non-empty group then refuses OffsetDelete with NON_EMPTY_GROUP."""
        return None

    def empty_since_ms(self, group_id: str) -> int | None:
        """Wall-clock ms since when the group has had no members, for offsets.retention.minutes
        (its committed offsets expire counting from the later of this and each commit, and the
        group is forgotten once none are left); None while it has members or never expires."""
        return None

    def yield_to_classic(self, group_id: str) -> bool:
        """A classic JoinGroup arrives for this group id: may the group become classic?

        Kafka lets an *empty* consumer group become classic; a share group never. Return True
        after forgetting the group to let the join proceed (else INCONSISTENT_GROUP_PROTOCOL).
        """
        return False
