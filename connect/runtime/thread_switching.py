"""The interpreter's thread switch interval for a process whose main work is a Connect worker.

Why: a worker runs plugin code (``poll()``, ``put()``) on each task's own thread and all its
network I/O (the producer's requests and their answers) on the event loop's thread, and the two
share one GIL. When a task's ``poll()`` is busy in Python code and an answer arrives, the loop's
thread waits for the GIL until the busy thread is made to drop it: up to CPython's default
switch interval, 5 ms. An exactly-once source task's next poll runs while its transaction's
requests (AddPartitionsToTxn, a produce request per batch, EndTxn) go out one after the other,
each after the answer to the one before. With 0.5 ms the loop gets the GIL about ten times
sooner, at the price of more frequent hand-overs between two busy threads.

``streams connect`` applies :func:`tune_thread_switching` when the worker starts; a worker
started inside another program leaves the setting alone (it is the whole process's), and that
program may call it itself.

Measured with ``benchmarks/connect_perf.py --records 100000 --repeat 5 --before-tree`` (the same
tree without it, load average 4.6-7): the exactly-once DataGen source 1.03-1.64x in every round
(median 1.13x), the standalone at-least-once one 0.72-1.34x (median 1.08x).
"""

from __future__ import annotations

import sys

# Seconds; CPython's default is 0.005 (sys.getswitchinterval()).
SWITCH_INTERVAL_S = 0.0005


def tune_thread_switching() -> None:
    """Make a thread waiting for the GIL (the event loop, woken by an answer) get it within
    ``SWITCH_INTERVAL_S`` of asking while another thread runs Python code."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
