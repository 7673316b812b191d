"""A payments-enrichment app for the join-after-key-change runtime test, run as a child process.

Usage: python join_repartition_app.py BOOTSTRAP STATE_DIR
``payments`` (keyed by payment id, JSON values) is re-keyed by ``select_key`` to the user id and
joined with the ``users`` table; no serde is given on the join, so the repartition topic must
take the table's key serde. Prints state changes; stops cleanly on SIGTERM.
"""

from __future__ import annotations

import sys

from streams import KafkaStreams, Serdes, StreamsBuilder
from tests.app_main import child_logging, run_until_sigterm


def main() -> None:
    bootstrap, state_dir = sys.argv[1:3]
    child_logging()
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
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
