"""Rates from counters, as a metrics scraper computes them: each view samples the counters,
and a rate is the growth since the oldest sample of about the last 30 seconds (Kafka's rate
window). Nothing runs in the background; rates fill in as a page refreshes."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping

RATE_WINDOW_S = 30.0
MIN_RATE_SPAN_S = 1.0  # two views closer than this give no rate yet


class RateSampler:
    """Per source (an instance, a broker), the recent samples of its named counters."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.samples: dict[Hashable, deque[tuple[float, dict[str, float]]]] = {}

    def rates(self, source: Hashable, counters: Mapping[str, float]) -> dict[str, float]:
        """Per second since the oldest recent sample of ``source`` (empty until two views
        are ``MIN_RATE_SPAN_S`` apart); a counter that went down (a restart, a task that
        moved away) counts from zero."""
        now = self.clock()
        history = self.samples.setdefault(source, deque(maxlen=64))
        while history and now - history[0][0] > RATE_WINDOW_S:
            history.popleft()
        rates: dict[str, float] = {}
        if history and now - history[0][0] >= MIN_RATE_SPAN_S:
            then, old = history[0]
            span = now - then
            rates = {name: (count - old[name] if count >= old.get(name, 0) else count) / span
                     if name in old else count / span
                     for name, count in counters.items()}
        history.append((now, dict(counters)))
        return rates
