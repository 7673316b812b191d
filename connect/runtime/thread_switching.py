"""The interpreter's thread switch interval for a process whose main work is a Connect worker.

Why: a worker runs plugin code (``poll()``, ``put()``) on each task's own thread and all its
network I/O (the producer's requests and their answers) on the event loop's thread, and the two
share one GIL. When a task's ``poll()`` is busy in Python code and an answer arrives, the loop's
thread waits for the GIL until the busy thread is made to drop it: CPython's default switch
interval, 5 ms, for every answer. An exactly-once source task waits for about ten answers in a
row per transaction (AddPartitionsToTxn, one produce request per batch, EndTxn) while its next
poll runs, so those waits, not the broker, set its pace. With 0.5 ms the loop gets the GIL
about ten times sooner, at the price of more frequent hand-overs between two busy threads.

``streams connect`` applies :func:`tune_thread_switching` when the worker starts; a worker
started inside another program leaves the setting alone (it is the whole process's), and that
program may call it itself.

Measured with ``benchmarks/connect_perf.py`` (README, Connect benchmark).
"""

from __future__ import annotations

import sys

# Seconds; CPython's default is 0.005 (sys.getswitchinterval()).
SWITCH_INTERVAL_S = 0.0005


def tune_thread_switching() -> None:
    """Make a thread waiting for the GIL (the event loop, woken by an answer) get it within
    ``SWITCH_INTERVAL_S`` of asking while another thread runs Python code."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
