"""A group member and the results its pending JoinGroup / SyncGroup requests wait for."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from . import errors

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(slots=True, frozen=True)
class JoinResult:
    """What a JoinGroup answers; ``members`` is filled for the leader only."""

    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    skip_assignment: bool = False


@dataclass(slots=True, frozen=True)
class SyncResult:
    """What a SyncGroup answers: the member's own assignment."""

    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


def join_error(error: int, member_id: str = "") -> JoinResult:
    return JoinResult(error, member_id=member_id)


SYNC_REBALANCING = SyncResult(errors.REBALANCE_IN_PROGRESS)


@dataclass(slots=True, eq=False)
class Member:
    """One consumer in a classic group.

    ``join_waiter`` / ``sync_waiter`` are set while the member has a JoinGroup / SyncGroup in
    flight; a member with a request in flight counts as alive (it is waiting on us, not gone).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    last_heartbeat: float = 0.0
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None and not self.join_waiter.done()

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None and not self.sync_waiter.done()

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names if name in candidates)

    def session_expired(self, now: float) -> bool:
        if self.awaiting_join or self.awaiting_sync:
            return False
        return now > self.last_heartbeat + self.session_timeout_ms / 1000

    def complete_join(self, result: JoinResult) -> None:
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def complete_sync(self, result: SyncResult) -> None:
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)
