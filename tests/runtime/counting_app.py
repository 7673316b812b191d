"""A counting application for crash tests, run as a child process.

Usage: python counting_app.py BOOTSTRAP GUARANTEE STATE_DIR [CACHE_MAX_BYTES]
(the environment variable COUNTING_APP_CONFIG may hold a JSON object of further settings)
Counts records per key from ``crash-input`` into ``crash-counts``; prints state changes; stops
cleanly on SIGTERM. The record cache is off unless CACHE_MAX_BYTES is given, so that every
count appears in the output and the crash test can check the exact sequence 1, 2, ..., n.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time

from streams import KafkaStreams, Serdes, StreamsBuilder


def main() -> None:
    bootstrap, guarantee, state_dir = sys.argv[1:4]
    cache_max_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    builder = StreamsBuilder()
    s = Serdes.string()
    (builder.stream("crash-input", key_serde=s, value_serde=s)
        .peek(lambda key, value: time.sleep(0.002))  # slow enough for kills mid-processing
        .group_by_key()
        .count("crash-store")
        .to_stream()
        .to("crash-counts", key_serde=s, value_serde=Serdes.long()))
    streams = KafkaStreams(builder.build(), {
        "application.id": "crash-app", "bootstrap.servers": bootstrap,
        "processing.guarantee": guarantee, "commit.interval.ms": 50, "state.dir": state_dir,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
        "max.poll.records": 50, "statestore.cache.max.bytes": cache_max_bytes,
        **json.loads(os.environ.get("COUNTING_APP_CONFIG", "{}")),
    })
    stopped = threading.Event()
    streams.set_state_listener(lambda new, old: print(f"STATE {new.value}", flush=True))
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    streams.start()
    stopped.wait()
    streams.close(timeout=30)
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main()
