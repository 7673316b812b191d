"""The share groups' simple assignor: balance (sharing ceil(M/P), counts within one), every
partition read, stickiness when members come and go, per-topic balance for mixed subscriptions."""

from __future__ import annotations

import random

from streams.broker.groups.share_assignor import assign


def _check_balanced(result: dict[str, set[tuple[str, int]]], partitions: int) -> None:
    members = len(result)
    sharing = -(-members // partitions)
    holders: dict[tuple[str, int], int] = {}
    for assigned in result.values():
        for tp in assigned:
            holders[tp] = holders.get(tp, 0) + 1
    assert len(holders) == partitions, "every partition is read by someone"
    assert set(holders.values()) == {sharing}, holders
    counts = [len(a) for a in result.values()]
    assert max(counts) - min(counts) <= 1, counts


def test_more_partitions_than_members_gives_each_partition_one_owner() -> None:
    subs = {f"m{i}": frozenset({"t"}) for i in range(3)}
    result = assign(subs, {"t": 8}, {})
    _check_balanced(result, 8)
    assert sorted(len(a) for a in result.values()) == [2, 3, 3]


def test_more_members_than_partitions_share_each_partition() -> None:
    subs = {f"m{i}": frozenset({"t"}) for i in range(5)}
    result = assign(subs, {"t": 2}, {})
    _check_balanced(result, 2)  # sharing 3: six slots over five members
    assert all(len(a) >= 1 for a in result.values())


def test_membership_changes_keep_balance() -> None:
    rng = random.Random(7)
    members: list[str] = []
    current: dict[str, set[tuple[str, int]]] = {}
    for step in range(200):
        if members and (rng.random() < 0.4 or len(members) > 9):
            members.remove(rng.choice(members))
        else:
            members.append(f"m{step}")
        if not members:
            continue
        partitions = rng.choice([1, 3, 6])
        current = assign({m: frozenset({"t"}) for m in members}, {"t": partitions}, current)
        _check_balanced(current, partitions)


def test_a_joining_member_takes_only_its_share() -> None:
    subs = {"a": frozenset({"t"}), "b": frozenset({"t"})}
    before = assign(subs, {"t": 6}, {})
    after = assign({**subs, "c": frozenset({"t"})}, {"t": 6}, before)
    _check_balanced(after, 6)
    assert after["a"] <= before["a"] and after["b"] <= before["b"]  # nothing moves between them
    assert len(after["c"]) == 2
    left = assign({"a": frozenset({"t"}), "c": frozenset({"t"})}, {"t": 6}, after)
    assert left["a"] >= after["a"] and left["c"] >= after["c"]  # b's partitions spread


def test_mixed_subscriptions_are_balanced_per_topic() -> None:
    subs = {"a": frozenset({"x"}), "b": frozenset({"x", "y"}), "c": frozenset({"y"})}
    result = assign(subs, {"x": 4, "y": 2}, {})
    assert {t for t, _ in result["a"]} == {"x"} and {t for t, _ in result["c"]} == {"y"}
    x_holders = [tp for m in ("a", "b") for tp in result[m] if tp[0] == "x"]
    y_holders = [tp for m in ("b", "c") for tp in result[m] if tp[0] == "y"]
    assert sorted(x_holders) == [("x", p) for p in range(4)]
    assert sorted(y_holders) == [("y", 0), ("y", 1)]


def test_unknown_topics_and_no_members() -> None:
    assert assign({"a": frozenset({"gone"})}, {}, {}) == {"a": set()}
    assert assign({}, {"t": 3}, {}) == {}
