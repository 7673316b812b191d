"""The share groups' ``simple`` assignor (KIP-932), by the principles Kafka 4.4's states:

* balance first: with P partitions and M members every partition is shared by
  ``ceil(M / P)`` members (so with more partitions than members each partition has one owner,
  and with more members than partitions each partition is read by several), and members' counts
  differ by at most one;
* stickiness second: a member keeps what it had as far as balance allows.

Members subscribed to the same topics are assigned together over all their partitions; with
different subscriptions each topic is balanced among the members subscribed to it. Record locks,
not partition ownership, keep deliveries apart, so moving a partition never loses a record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TopicPartition = tuple[str, int]


def assign(subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int],
           current: Mapping[str, set[TopicPartition]]) -> dict[str, set[TopicPartition]]:
    """Member id -> assigned partitions. ``subscriptions``: each member's topics (members in
    join order); ``partition_counts``: existing topics; ``current``: the last assignment."""
    members = list(subscriptions)
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    topics = {t for subs in subscriptions.values() for t in subs if t in partition_counts}
    if len({subs & topics for subs in subscriptions.values()}) <= 1:
        groups = [(members, sorted(topics))]
    else:
        groups = [([m for m in members if topic in subscriptions[m]], [topic])
                  for topic in sorted(topics)]
    for group_members, group_topics in groups:
        partitions = [(t, p) for t in group_topics for p in range(partition_counts[t])]
        for member, assigned in balance(group_members, partitions, current).items():
            out[member] |= assigned
    return out


def balance(members: Sequence[str], partitions: Sequence[TopicPartition],
            current: Mapping[str, set[TopicPartition]]) -> dict[str, set[TopicPartition]]:
    """Spread ``partitions`` over ``members``: each partition shared by ceil(M/P) members,
    member counts within one of each other, keeping current holdings where they fit."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    if not members or not partitions:
        return out
    sharing = -(-len(members) // len(partitions))
    total = sharing * len(partitions)
    base, extra = divmod(total, len(members))
    # Members that already hold more get the extra slots first (less movement).
    by_holding = sorted(members, key=lambda m: -len(current.get(m, set()) & set(partitions)))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    holders: dict[TopicPartition, int] = dict.fromkeys(partitions, 0)
    for member in by_holding:  # stickiness: keep what fits
        for tp in sorted(current.get(member, set())):
            if tp in holders and holders[tp] < sharing and len(out[member]) < quota[member]:
                out[member].add(tp)
                holders[tp] += 1
    for tp in partitions:  # then fill every partition up to its sharing
        while holders[tp] < sharing:
            if not _give(tp, members, out, quota):
                return _dealt(members, partitions, sharing)  # greedy stuck: plain deal
            holders[tp] += 1
    return out


def _give(tp: TopicPartition, members: Sequence[str], out: dict[str, set[TopicPartition]],
          quota: Mapping[str, int]) -> bool:
    """One more holder for ``tp``: a member with room that lacks it, else a swap (a member
    with room takes another partition from one that lacks ``tp``, which then takes ``tp``)."""
    room = [m for m in members if len(out[m]) < quota[m]]
    lacking = [m for m in room if tp not in out[m]]
    if lacking:
        chosen = min(lacking, key=lambda m: (len(out[m]) - quota[m], members.index(m)))
        out[chosen].add(tp)
        return True
    for taker in room:
        for giver in members:
            if tp in out[giver]:
                continue
            movable = sorted(out[giver] - out[taker])
            if movable:
                out[giver].remove(movable[0])
                out[taker].add(movable[0])
                out[giver].add(tp)
                return True
    return False


def _dealt(members: Sequence[str], partitions: Sequence[TopicPartition], sharing: int
           ) -> dict[str, set[TopicPartition]]:
    """Partitions dealt round-robin, each ``sharing`` times: balanced, never a member twice
    on one partition (consecutive deals of fewer than P slots are distinct partitions)."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for slot in range(sharing * len(partitions)):
        out[members[slot % len(members)]].add(partitions[slot % len(partitions)])
    return out
