"""The membership lease: how long a group member's produce requests are sure to land before any
new owner of its partitions writes (the at_least_once zombie guard).

Under at_least_once nothing fences a zombie: an instance paused (a GC-like stall, a frozen VM,
SIGSTOP) past ``session.timeout.ms`` resumes with its record caches and producer buffers intact
and writes stale store values into the changelog after the new owner's newer ones. A membership
check before the writes does not help if the pause falls between its answer and the writes.

What the classic group protocol promises instead (Kafka's GroupCoordinator, our broker's too):
- a member is removed for a missed session no earlier than ``session.timeout.ms`` after the
  coordinator last heard from it; a Heartbeat answered NONE or REBALANCE_IN_PROGRESS (the member
  is known and its session is extended while the group prepares a rebalance), a JoinGroup or a
  SyncGroup answered NONE each count, and each was handled after it was *sent*;
- a rebalance that this member does not take part in ends, and removes it, no earlier than the
  group's rebalance timeout (the largest of its members' ``rebalance.timeout.ms``, so at least
  ours) after the rebalance began, and a request answered NONE shows that none had begun when
  it was handled;
- a new owner only starts after that removal, a completed rebalance and its restore.

So a produce request written to the socket before
``min(known + session.timeout.ms, member + rebalance timeout) - margin`` (``known``: when the last
request answered NONE or REBALANCE_IN_PROGRESS was sent; ``member``: the last answered NONE) is
handled by the broker before any new owner's writes, as long as the request itself does not
take longer than the margin to arrive. The clock (``clock``) must count every second the
process did not run: a monotonic clock counts time spent stopped (SIGSTOP); on Linux
CLOCK_BOOTTIME also counts a suspended machine, which CLOCK_MONOTONIC does not, so it is used
where it exists. The check is one comparison per produce request.
"""

from __future__ import annotations

import functools
import math
import time

NONE = 0
REBALANCE_IN_PROGRESS = 27

clock = (functools.partial(time.clock_gettime, time.CLOCK_BOOTTIME)
         if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic)


class MembershipLease:
    """Until when this member's writes are sure to precede a new owner's (see the module)."""

    def __init__(self, session_timeout_ms: int, rebalance_timeout_ms: int,
                 heartbeat_interval_ms: int) -> None:
        self.session_s = session_timeout_ms / 1000
        self.rebalance_s = rebalance_timeout_ms / 1000
        # Slack for the produce request's own trip to the broker and for clock rate: one
        # heartbeat interval (capped at a quarter session), which also makes the consumer's
        # regular heartbeats renew the lease well before it runs out.
        self.margin_s = min(heartbeat_interval_ms, session_timeout_ms / 4) / 1000
        self.expiry = -math.inf  # clock() time; nothing is held before the first answer
        self._known_since = -math.inf
        self._member_since = -math.inf
        self.lost: BaseException | None = None  # set once the group said the member is gone
        self.renewals = 0  # renewals the gate had to ask for (the regular heartbeats aside)
        self.last_answer: int | None = None  # error code of the latest membership answer

    def holds(self) -> bool:
        """True while a produce request written now lands before any new owner's writes."""
        return clock() < self.expiry and self.lost is None

    def answered(self, sent_at: float, error_code: int) -> None:
        """A membership request (Heartbeat, JoinGroup, SyncGroup) sent at ``sent_at``
        (``clock()``) was answered with ``error_code``. Other answers do not extend
        the lease; what they mean is for whoever asked to act on."""
        self.last_answer = error_code
        if error_code == NONE:
            self._member_since = max(self._member_since, sent_at)
            self._known_since = max(self._known_since, sent_at)
        elif error_code == REBALANCE_IN_PROGRESS:
            self._known_since = max(self._known_since, sent_at)
        else:
            return
        self.expiry = min(self._known_since + self.session_s,
                          self._member_since + self.rebalance_s) - self.margin_s

    def remaining(self) -> float:
        """Seconds until the lease runs out (negative once it has)."""
        return self.expiry - clock()


__all__ = ["NONE", "REBALANCE_IN_PROGRESS", "MembershipLease", "clock"]
