"""The cooperative assignment rounds (KIP-415) as the leader computes them."""

from __future__ import annotations

from connect.runtime.assignment import Delay, plan


def rounds(members: dict[str, str], owned: dict[str, list[int]], items: list[int],
           delay: Delay, now: float = 0.0, max_delay: float = 0.0) -> dict[str, list[int]]:
    """Run rounds until nothing is revoked (members rejoin after revoking), as workers do."""
    for _ in range(5):
        result = plan(members, owned, items, delay, now, max_delay)
        owned = {m: list(a) for m, a in result.assigned.items()}
        if not any(result.revoked.values()):
            return owned
    raise AssertionError("no stable assignment")


def test_a_joining_member_takes_only_its_share() -> None:
    delay = Delay()
    three = {"a": "u1", "b": "u2", "c": "u3"}
    first = rounds(three, {}, list(range(12)), delay)
    assert sorted(len(v) for v in first.values()) == [4, 4, 4]
    four = {**three, "d": "u4"}
    result = plan(four, first, list(range(12)), delay, 0.0, 0.0)
    revoked = [i for items in result.revoked.values() for i in items]
    assert len(revoked) == 3 and not result.assigned["d"]
    for member in three:  # what is not revoked stays where it ran
        assert set(result.assigned[member]) == set(first[member]) - set(revoked)
    final = rounds(four, result.assigned, list(range(12)), delay)
    assert sorted(final["d"]) == sorted(revoked)


def test_lost_work_waits_for_the_delay_and_a_returning_worker_gets_it_back() -> None:
    delay = Delay()
    members = {"a": "u1", "b": "u2", "c": "u3"}
    start = rounds(members, {}, list(range(9)), delay)
    gone = {"a": "u1", "b": "u2"}
    held = plan(gone, {m: start[m] for m in gone}, list(range(9)), delay, 10.0, 5.0)
    assert sorted(held.held) == sorted(start["c"]) and held.delay_s == 5.0
    assert held.assigned == {m: sorted(start[m]) for m in gone}
    # The worker comes back (a new member id, the same URL) before the delay is up.
    back = plan({**gone, "c2": "u3"}, {m: start[m] for m in gone}, list(range(9)), delay,
                12.0, 5.0)
    assert sorted(back.assigned["c2"]) == sorted(start["c"]) and not back.held
    # Gone for good: after the delay its work is spread over the others.
    delay = Delay()
    start = rounds(members, {}, list(range(9)), delay)
    plan(gone, {m: start[m] for m in gone}, list(range(9)), delay, 10.0, 5.0)
    late = plan(gone, {m: start[m] for m in gone}, list(range(9)), delay, 15.5, 5.0)
    assert not late.held and sorted(len(v) for v in late.assigned.values()) == [4, 5]


def test_deleted_and_doubly_owned_items_are_revoked() -> None:
    result = plan({"a": "u1", "b": "u2"}, {"a": [1, 2, 9], "b": [2, 3]}, [1, 2, 3], Delay(),
                  0.0, 0.0)
    assert result.revoked == {"a": [9], "b": [2]}
    assert result.assigned == {"a": [1, 2], "b": [3]}
