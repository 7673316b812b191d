"""connect.runtime.gc_policy: what `streams connect` does to the process's garbage collector."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from connect.runtime.gc_policy import THRESHOLDS, tune_gc


class Node:
    other: Node | None = None


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tune_gc_freezes_what_is_alive_and_raises_the_thresholds(restored_gc: None) -> None:
    gc.unfreeze()
    alive = Node()
    assert gc.is_tracked(alive)
    tune_gc()
    assert gc.get_threshold() == THRESHOLDS
    assert THRESHOLDS[0] > 700  # CPython's default young-generation threshold
    assert gc.get_freeze_count() > 0
    assert not any(o is alive for o in gc.get_objects())  # frozen: no collection scans it


def test_garbage_in_cycles_is_still_collected_after_tuning(restored_gc: None) -> None:
    tune_gc()
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del a, b
    gc.collect()
    assert ref() is None
