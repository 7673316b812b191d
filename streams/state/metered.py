"""The Metered store layer, as Kafka's ``MeteredKeyValueStore`` / ``MeteredWindowStore``: the
outermost wrapper of a task's store, timing what processors and restoration ask of it.

It wraps any store (key-value, window, session, suppression buffer) without editing one:
the timed operations are methods here, everything else passes through ``__getattr__``. As in
Kafka, state store metrics are recorded only at ``metrics.recording.level=DEBUG``; at INFO the
runtime does not wrap at all, so the default costs nothing.
"""

from __future__ import annotations

import time
from typing import Any

_clock = time.perf_counter

# Kafka's state-store operations that get a latency sensor (MeteredKeyValueStore,
# MeteredWindowStore, MeteredSessionStore); the ones a store kind lacks are never called.
# Method -> the operation it counts as (reads with the timestamp are gets, as in Kafka's
# MeteredTimestampedKeyValueStore).
TIMED = {"put": "put", "get": "get", "get_with_timestamp": "get", "delete": "delete",
         "put_if_absent": "put_if_absent", "put_all": "put_all", "fetch": "fetch",
         "range": "range", "all": "all", "flush": "flush", "restore": "restore",
         "remove": "remove"}


class OpStats:
    """Count and total seconds of one operation: plain attributes, read on scrape."""

    __slots__ = ("count", "seconds", "max_seconds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.max_seconds = 0.0


class MeteredStore:
    """Times ``TIMED`` operations of ``inner``; everything else is ``inner``'s own."""

    def __init__(self, inner: Any, store_name: str, task_id: str) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "store_name", store_name)
        object.__setattr__(self, "task_id", task_id)
        stats: dict[str, OpStats] = {}
        for method, op in TIMED.items():
            if hasattr(inner, method):
                op_stats = stats.setdefault(op, OpStats())
                object.__setattr__(self, method, _timed(getattr(inner, method), op_stats))
        object.__setattr__(self, "stats", stats)

    @property
    def wrapped(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __repr__(self) -> str:
        return f"MeteredStore({self._inner!r})"


def _timed(method: Any, stats: OpStats) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = _clock()
        try:
            return method(*args, **kwargs)
        finally:
            elapsed = _clock() - start
            stats.count += 1
            stats.seconds += elapsed
            if elapsed > stats.max_seconds:
                stats.max_seconds = elapsed

    return timed
