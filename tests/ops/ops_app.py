"""The application the operations tests run, in the test process and as child processes.

    python -m tests.ops.ops_app BOOTSTRAP STATE_DIR APPLICATION_SERVER [APP_ID]

Counts ``ops-input`` records per key into the store ``ops-counts`` (also written to
``ops-counts``, the topic) and per key and minute into the window store ``ops-windows``.
OPS_POISON=VALUE makes records with that value fail; OPS_HANDLER=REPLACE_THREAD|SHUTDOWN_CLIENT|
SHUTDOWN_APPLICATION sets the uncaught-exception handler's answer.
Prints ``STATE <state>`` on every change and ``CLOSED`` after a clean close; SIGTERM closes it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder, TimeWindows, Topology
from streams.runtime.app import StreamThreadExceptionResponse
from tests.app_main import child_logging, run_until_sigterm

INPUT = "ops-input"
OUTPUT = "ops-counts"
COUNTS = "ops-counts"
WINDOWS = "ops-windows"
WINDOW_MS = 60_000


class Poisoned(RuntimeError):
    """Raised for the poison value (tests of the uncaught-exception handler)."""


def topology(poison: Callable[[str], bool] | None = None) -> Topology:
    """``poison(value)`` true makes processing that record fail."""
    s = Serdes.string()
    builder = StreamsBuilder()
    stream = builder.stream(INPUT, key_serde=s, value_serde=s)

    def check(key: str, value: str) -> None:
        if poison is not None and poison(value):
            raise Poisoned(f"poison record {key}={value}")
    grouped = stream.peek(check).group_by_key()
    grouped.count(Materialized(COUNTS)).to_stream().to(OUTPUT, key_serde=s,
                                                        value_serde=Serdes.long())
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(WINDOW_MS)).count(
        Materialized(WINDOWS))
    return builder.build()


def config(bootstrap: str, state_dir: str, server: str | None,
           app_id: str = "ops-app") -> dict[str, Any]:
    return {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
            "commit.interval.ms": 100, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "application.server": server}


def main() -> None:
    bootstrap, state_dir, server = sys.argv[1:4]
    app_id = sys.argv[4] if len(sys.argv) > 4 else "ops-app"
    child_logging()
    poison = os.environ.get("OPS_POISON")
    streams = KafkaStreams(topology((lambda v: v == poison) if poison else None),
                           config(bootstrap, state_dir, server or None, app_id))
    if os.environ.get("OPS_HANDLER"):
        response = StreamThreadExceptionResponse(os.environ["OPS_HANDLER"])
        streams.set_uncaught_exception_handler(lambda exc: response)
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
