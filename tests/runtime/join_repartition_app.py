"""A payments-enrichment app for the join-after-key-change runtime test, run as a child process.

Usage: python join_repartition_app.py BOOTSTRAP STATE_DIR
``payments`` (keyed by payment id, JSON values) is re-keyed by ``select_key`` to the user id and
joined with the ``users`` table; no serde is given on the join, so the repartition topic must
take the table's key serde. Prints state changes; stops cleanly on SIGTERM.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from streams import KafkaStreams, Serdes, StreamsBuilder


def main() -> None:
    bootstrap, state_dir = sys.argv[1:3]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    s, j = Serdes.string(), Serdes.json()
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=s, value_serde=s)
    (builder.stream("payments", key_serde=s, value_serde=j)
        .select_key(lambda payment_id, payment: payment["user"])
        .join(users, lambda payment, region: {**payment, "region": region})
        .to("payments-enriched", key_serde=s, value_serde=j))
    streams = KafkaStreams(builder.build(), {
        "application.id": "join-repartition-app", "bootstrap.servers": bootstrap,
        "commit.interval.ms": 100, "state.dir": state_dir,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
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
