"""Incremental cooperative assignment of connectors and tasks to workers (KIP-415).

Kafka's ``IncrementalCooperativeAssignor``, in the leader: every member reports what it runs;
what it runs and still exists stays where it is; new connectors and tasks go to the least
loaded members; a member above its fair share gives up (is *revoked*) only as many as balance
needs, and those are assigned in the next round, once their owner has stopped them (it rejoins
at once after revoking). What a departed member ran is *lost*: it waits up to
``scheduled.rebalance.max.delay.ms`` (the member may come back) before it is reassigned, and the
leader rebalances again when the delay is up.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Delay:
    """The leader's memory between rounds: who ran what, and when lost work may move."""

    owners: dict[Hashable, str] = field(default_factory=dict)  # item -> url of its last owner
    deadline: float | None = None  # monotonic seconds


@dataclass
class Plan:
    assigned: dict[str, list[Any]]  # member -> items it runs after this round
    revoked: dict[str, list[Any]]  # member -> items it must stop now (assigned next round)
    held: list[Any]  # lost items waiting for the delay
    delay_s: float  # > 0: rebalance again after this long


def plan(members: dict[str, str], owned: dict[str, Iterable[Any]], configured: list[Any],
         delay: Delay, now: float, max_delay_s: float) -> Plan:
    """One round for one kind of item (connectors, or tasks).

    ``members``: member id -> URL (a worker's stable identity across restarts);
    ``owned``: member id -> items it runs now; ``configured``: every item that should run."""
    order = sorted(members, key=lambda m: (members[m], m))
    wanted = set(configured)
    assigned: dict[str, list[Any]] = {m: [] for m in order}
    revoked: dict[str, list[Any]] = {m: [] for m in order}
    taken: set[Any] = set()
    for member in order:
        for item in sorted(owned.get(member, ()), key=_key):
            if item in wanted and item not in taken:
                assigned[member].append(item)
                taken.add(item)
            else:  # deleted, or run twice: the first owner keeps it
                revoked[member].append(item)
    unowned = [item for item in configured if item not in taken]
    urls = set(members.values())
    lost = [item for item in unowned if delay.owners.get(item) not in (None, *urls)]
    held: list[Any] = []
    delay_s = 0.0
    if lost and max_delay_s > 0:
        if delay.deadline is None:
            delay.deadline = now + max_delay_s
        if now < delay.deadline:
            held, delay_s = lost, delay.deadline - now
        else:
            delay.deadline = None
    elif not lost:
        delay.deadline = None
    held_set = set(held)
    by_url = {members[m]: m for m in order}
    for item in unowned:
        if item in held_set:
            continue
        back = by_url.get(delay.owners.get(item, ""))  # a worker that came back gets its work
        target = back if back is not None else min(
            order, key=lambda m: (len(assigned[m]), members[m], m))
        assigned[target].append(item)
    _balance(order, assigned, revoked)
    for member in order:
        for item in assigned[member]:
            delay.owners[item] = members[member]
        for item in revoked[member]:  # it moves on: not lost, and not given back
            delay.owners.pop(item, None)
    for item in list(delay.owners):
        if item not in wanted:
            del delay.owners[item]
    return Plan(assigned, revoked, held, delay_s)


def _balance(order: list[str], assigned: dict[str, list[Any]],
             revoked: dict[str, list[Any]]) -> None:
    """Revoke from the most loaded members only what brings everyone within [floor, ceil]."""
    if not order:
        return
    total = sum(len(items) for items in assigned.values())
    floor, ceil = total // len(order), math.ceil(total / len(order))
    counts = {m: len(assigned[m]) for m in order}
    take = {m: max(0, counts[m] - ceil) for m in order}
    deficit = sum(max(0, floor - counts[m]) for m in order)
    freed = sum(take.values())
    while freed < deficit:
        donor = max(order, key=lambda m: (counts[m] - take[m], m))
        if counts[donor] - take[donor] <= floor:
            break
        take[donor] += 1
        freed += 1
    for member in order:
        for _ in range(take[member]):
            revoked[member].append(assigned[member].pop())


def _key(item: Any) -> Any:
    return (str(item),)
