"""Window definitions: ``TimeWindows``, ``SlidingWindows``, ``SessionWindows``, ``JoinWindows``
and ``EmitStrategy`` (reference §1.5, §1.7).

These are immutable values; the builder methods (``advance_by``, ``before``, ``after``) return
new objects, as Kafka's do. Durations are int milliseconds or ``datetime.timedelta``; every
factory validates its arguments and names the bad value in its error.

* ``TimeWindows``: epoch-aligned ``[start, start + size)`` windows, tumbling (advance = size) or
  hopping (``advance_by``). ``windows_for(ts)`` gives every window containing ``ts``.
* ``SlidingWindows``: ``[t - d, t]`` windows, both ends inclusive, aligned to record times
  (aggregation only).
* ``SessionWindows``: per-key sessions split by an inactivity gap.
* ``JoinWindows``: stream-stream joins match when
  ``left.ts - before_ms <= right.ts <= left.ts + after_ms``; ``size`` is before + after.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from ..windowing import Window
from .materialized import Duration, to_ms

_DAY_MS = 24 * 60 * 60 * 1000


def _duration(name: str, value: Duration, *, positive: bool = False) -> int:
    """A validated duration in ms: non-negative (or, with ``positive``, > 0)."""
    try:
        ms = to_ms(value)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from None
    assert ms is not None
    if positive and ms <= 0:
        raise ValueError(f"{name} must be larger than zero, got {ms} ms")
    if ms < 0:
        raise ValueError(f"{name} must not be negative, got {ms} ms")
    return ms


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size, epoch-aligned windows; tumbling unless ``advance_by`` makes them hop."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        size_ms = _duration("TimeWindows size", size, positive=True)
        return cls(size_ms, size_ms, 0)

    @classmethod
    def of_size_and_grace(cls, size: Duration, grace: Duration) -> TimeWindows:
        size_ms = _duration("TimeWindows size", size, positive=True)
        return cls(size_ms, size_ms, _duration("TimeWindows grace", grace))

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a new window starts every ``advance`` (0 < advance <= size)."""
        advance_ms = _duration("TimeWindows advance", advance, positive=True)
        if advance_ms > self.size_ms:
            raise ValueError(f"TimeWindows advance ({advance_ms} ms) must lie within "
                             f"(0, size] = (0, {self.size_ms}] ms")
        return replace(self, advance_ms=advance_ms)

    def size(self) -> int:
        return self.size_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def windows_for(self, timestamp: int) -> dict[int, Window]:
        """Every window with ``start <= timestamp < start + size``, keyed by start, in order."""
        advance = self.advance_ms
        start = max(0, timestamp - self.size_ms + advance) // advance * advance
        windows: dict[int, Window] = {}
        while start <= timestamp:
            windows[start] = Window(start, start + self.size_ms)
            start += advance
        return windows


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows ``[t - d, t]`` (both ends inclusive) that follow the records (aggregation only)."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        return cls(_duration("SlidingWindows time difference", time_difference), 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration,
                                     grace: Duration) -> SlidingWindows:
        return cls(_duration("SlidingWindows time difference", time_difference),
                   _duration("SlidingWindows grace", grace))

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Per-key sessions: records closer than ``gap`` to a session join (and may merge) it."""

    gap_ms: int
    grace_ms: int

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: Duration) -> SessionWindows:
        return cls(_duration("SessionWindows inactivity gap", gap, positive=True), 0)

    @classmethod
    def of_inactivity_gap_and_grace(cls, gap: Duration, grace: Duration) -> SessionWindows:
        return cls(_duration("SessionWindows inactivity gap", gap, positive=True),
                   _duration("SessionWindows grace", grace))

    def inactivity_gap(self) -> int:
        return self.gap_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """Stream-stream join windows: ``left.ts - before_ms <= right.ts <= left.ts + after_ms``.

    ``enable_spurious_result_fix`` is True for the ``of_time_difference_*`` factories (left and
    outer joins emit non-joined records only once the window closed) and False for the
    deprecated ``of`` (eager emission, default grace ``max(24h - 2d, 0)``).
    """

    before_ms: int
    after_ms: int
    grace_ms: int
    enable_spurious_result_fix: bool = True

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise ValueError("JoinWindows interval (before + after) must not be negative, got "
                             f"before={self.before_ms} ms, after={self.after_ms} ms")

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> JoinWindows:
        diff = _duration("JoinWindows time difference", time_difference)
        return cls(diff, diff, 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration,
                                     grace: Duration) -> JoinWindows:
        diff = _duration("JoinWindows time difference", time_difference)
        return cls(diff, diff, _duration("JoinWindows grace", grace))

    @classmethod
    def of(cls, time_difference: Duration) -> JoinWindows:
        """Deprecated in Kafka: eager left/outer results and a default grace of 24h - 2d."""
        diff = _duration("JoinWindows time difference", time_difference)
        return cls(diff, diff, max(_DAY_MS - 2 * diff, 0), enable_spurious_result_fix=False)

    def grace(self, grace: Duration) -> JoinWindows:
        """Deprecated companion of ``of``: set the grace period."""
        return replace(self, grace_ms=_duration("JoinWindows grace", grace))

    def before(self, time_difference: Duration) -> JoinWindows:
        """How far before a left record a right record may be (may be negative)."""
        return replace(self, before_ms=_signed("JoinWindows before", time_difference))

    def after(self, time_difference: Duration) -> JoinWindows:
        """How far after a left record a right record may be (may be negative)."""
        return replace(self, after_ms=_signed("JoinWindows after", time_difference))

    def size(self) -> int:
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def windows_for(self, timestamp: int) -> dict[int, Window]:
        raise NotImplementedError("JoinWindows.windows_for is not supported (as in Kafka)")


def _signed(name: str, value: Duration) -> int:
    try:
        ms = to_ms(value)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from None
    assert ms is not None
    return ms


class EmitStrategy(enum.Enum):
    """When a windowed aggregation forwards: on every update (default) or once, at close."""

    ON_WINDOW_UPDATE = "on_window_update"
    ON_WINDOW_CLOSE = "on_window_close"

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        return cls.ON_WINDOW_UPDATE

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        return cls.ON_WINDOW_CLOSE
