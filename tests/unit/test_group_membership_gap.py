"""When a stream thread's consumer comes back from an absence (its session expired while the
process was paused), the tasks it still holds must be closed dirty: ``_left_the_group`` tells
such a return from an ordinary rebalance this member took part in."""

from __future__ import annotations

from streams.kafka.internals import GroupMetadata
from streams.runtime.thread import _left_the_group


def meta(generation: int, member: str) -> GroupMetadata:
    return GroupMetadata("app", generation, member, None)


def test_first_assignment_and_the_next_generation_keep_tasks() -> None:
    assert not _left_the_group(None, meta(1, "m1"))
    assert not _left_the_group(meta(3, "m1"), meta(4, "m1"))


def test_a_new_member_id_or_a_skipped_generation_means_the_member_was_out() -> None:
    assert _left_the_group(meta(3, "m1"), meta(5, "m2"))  # removed, rejoined as a new member
    assert _left_the_group(meta(3, "m1"), meta(4, "m2"))
    assert _left_the_group(meta(3, "m1"), meta(5, "m1"))  # missed generation 4
