"""The application the operations tests run, in the test process and as child processes.

    python -m tests.ops.ops_app BOOTSTRAP STATE_DIR APPLICATION_SERVER [APP_ID]

Counts ``ops-input`` records per key into the store ``ops-counts`` (also written to
``ops-counts``, the topic) and per key and minute into the window store ``ops-windows``.
Prints ``STATE <state>`` on every change and ``CLOSED`` after a clean close; SIGTERM closes it.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder, TimeWindows, Topology

INPUT = "ops-input"
OUTPUT = "ops-counts"
COUNTS = "ops-counts"
WINDOWS = "ops-windows"
WINDOW_MS = 60_000


def topology() -> Topology:
    s = Serdes.string()
    builder = StreamsBuilder()
    grouped = builder.stream(INPUT, key_serde=s, value_serde=s).group_by_key()
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
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    streams = KafkaStreams(topology(), config(bootstrap, state_dir, server or None, app_id))
    stopped = threading.Event()
    streams.set_state_listener(lambda new, old: print(f"STATE {new.value}", flush=True))
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    streams.start()
    stopped.wait()
    streams.close(timeout=30)
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main()
