"""KIP-848's server-side assignors (group.consumer.assignors): ``uniform`` and ``range``.

An assignor maps each member to partitions of the topics it subscribes to. ``uniform`` spreads
partitions evenly and keeps a member's current partitions where the balance allows (Kafka's
UniformAssignor is sticky the same way); ``range`` gives each member a contiguous range of every
subscribed topic, members sorted by id (Kafka's RangeAssignor, co-partitioned topics land on the
same member).
"""

from __future__ import annotations

from collections.abc import Mapping

TopicPartition = tuple[str, int]
Assignment = dict[str, set[TopicPartition]]


def uniform(subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int],
            current: Mapping[str, set[TopicPartition]]) -> Assignment:
    """Even counts per member among the members subscribed to each partition's topic; a
    partition stays with its current owner while that owner is below its quota."""
    members = sorted(subscriptions)
    out: Assignment = {m: set() for m in members}
    wanted = sorted((t, p) for t in {t for s in subscriptions.values() for t in s}
                    if t in partitions for p in range(partitions[t]))
    if not members or not wanted:
        return out
    subscribers = {t: [m for m in members if t in subscriptions[m]] for t, _ in wanted}
    quota = _quotas(members, wanted, subscribers)
    unassigned = []
    for tp in wanted:
        owner = next((m for m in members if tp in current.get(m, ()) and tp[0] in
                      subscriptions[m]), None)
        if owner is not None and len(out[owner]) < quota[owner]:
            out[owner].add(tp)
        else:
            unassigned.append(tp)
    for tp in unassigned:
        # The least loaded subscriber; on a tie the current owner keeps it.
        best = min(subscribers[tp[0]],
                   key=lambda m: (len(out[m]), tp not in current.get(m, ()), m))
        out[best].add(tp)
    return out


def _quotas(members: list[str], wanted: list[TopicPartition],
            subscribers: Mapping[str, list[str]]) -> dict[str, int]:
    """How many partitions a member keeps before the rest is spread: the whole part of its
    even share of what it can take."""
    share: dict[str, float] = dict.fromkeys(members, 0.0)
    for topic, _ in wanted:
        for m in subscribers[topic]:
            share[m] += 1 / len(subscribers[topic])
    return {m: int(share[m] + 1e-9) for m in members}


def range_(subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int],
           current: Mapping[str, set[TopicPartition]]) -> Assignment:
    """Per topic, contiguous ranges to its subscribers sorted by member id; the first
    ``count % members`` members get one more."""
    out: Assignment = {m: set() for m in subscriptions}
    topics = sorted({t for s in subscriptions.values() for t in s if t in partitions})
    for topic in topics:
        members = sorted(m for m, s in subscriptions.items() if topic in s)
        count = partitions[topic]
        per, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = per + (1 if index < extra else 0)
            out[member].update((topic, p) for p in range(start, start + size))
            start += size
    return out


ASSIGNORS = {"uniform": uniform, "range": range_}
