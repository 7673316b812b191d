"""The life of a Streams application run as a child process by a test (tests/runtime/*_app.py,
tests/ops/ops_app.py): the parent reads its stdout and stops it with SIGTERM.

It prints ``STATE <state>`` on every state change and ``CLOSED`` once ``close`` has returned,
so the parent can wait for ``STATE RUNNING`` and check that a stop was clean.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from streams import KafkaStreams


def child_logging() -> None:
    """Warnings and errors on stderr (the parent's log file), nothing chattier."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def run_until_sigterm(streams: KafkaStreams, close_timeout: float = 30,
                      report_timeout: bool = False) -> None:
    """Start ``streams``, run it until SIGTERM, then close it. With ``report_timeout`` a close
    that did not finish in time prints ``CLOSE TIMED OUT`` instead of ``CLOSED`` (the fault
    harness counts such a stop as unclean)."""
    stopped = threading.Event()
    streams.set_state_listener(lambda new, old: print(f"STATE {new.value}", flush=True))
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    streams.start()
    stopped.wait()
    closed = streams.close(timeout=close_timeout)
    print("CLOSED" if closed or not report_timeout else "CLOSE TIMED OUT", flush=True)
