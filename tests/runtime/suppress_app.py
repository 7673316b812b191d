"""A windowed count with ``suppress(until_window_closes)``, run as a child process.

Usage: python suppress_app.py BOOTSTRAP STATE_DIR
Counts ``suppress-input`` per key in 1 s windows with 100 s grace and writes each window's
final count once to ``suppress-final`` as ``"<key>@<window start>" -> count`` (exactly_once_v2).
Prints state changes; stops cleanly on SIGTERM.
"""

from __future__ import annotations

import sys

from streams import KafkaStreams, Serdes, StreamsBuilder, Suppressed, TimeWindows
from tests.app_main import child_logging, run_until_sigterm

APP_ID = "suppress-app"
WINDOW_MS = 1_000
GRACE_MS = 100_000


def topology():
    s = Serdes.string()
    builder = StreamsBuilder()
    (builder.stream("suppress-input", key_serde=s, value_serde=s)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .count()
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .map(lambda key, count: (f"{key.key}@{key.window.start}", count))
        .to("suppress-final", key_serde=s, value_serde=Serdes.long()))
    return builder.build()


def main() -> None:
    bootstrap, state_dir = sys.argv[1:3]
    child_logging()
    streams = KafkaStreams(topology(), {
        "application.id": APP_ID, "bootstrap.servers": bootstrap,
        "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 50,
        "state.dir": state_dir, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
    })
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
