"""Garbage-collector settings for a process whose main work is a Connect worker.

Why: a worker allocates several objects per record (the consumer's records, their conversions)
and keeps a fetched batch alive while it converts it, so CPython's default thresholds (a young
collection every 700 allocations, and a full one whenever enough objects survived) spend a large
share of the process's time scanning the same live objects, holding the GIL that the worker's
other threads (a sink's background flushes) need. ``streams connect`` applies :func:`tune_gc`
once the worker is up; a worker started inside another program leaves the collector alone (the
settings are the whole process's), and that program may call :func:`tune_gc` itself.

Measured with ``benchmarks/spark_perf.py`` on the 2-core machine (SparkSink against Spark
writing the same rows, 50,000-row flushes): 0.87x and 0.84x with CPython's defaults, 1.00x and
1.06x with these settings (medians of five rounds, two runs each).
"""

from __future__ import annotations

import gc

# A young collection per 100,000 allocations instead of 700, the older generations collected
# after 50 and 100 of the younger ones instead of 10 and 10. Only garbage in reference cycles
# waits longer (for at most 100,000 allocations before a young collection); everything else is
# still freed by reference counting the moment it is dropped.
THRESHOLDS = (100_000, 50, 100)


def tune_gc() -> None:
    """Move everything alive now (modules, the worker's start-up state) out of the collector's
    sight (``gc.freeze``) and collect the young generation far less often."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
