"""A price-lookup app for the versioned-join runtime test, run as a child process.

Usage: python versioned_join_app.py BOOTSTRAP STATE_DIR
``prices`` is a versioned table (KIP-889, one hour of history); each ``orders`` record is joined
with the price valid at the order's time (KIP-914), after waiting a grace period of 5 s of
stream time for late price updates (KIP-923). Exactly-once; prints state changes; stops cleanly
on SIGTERM.
"""

from __future__ import annotations

import sys

from streams import Joined, KafkaStreams, Materialized, Serdes, Stores, StreamsBuilder
from tests.app_main import child_logging, run_until_sigterm

APP_ID = "versioned-join-app"
HISTORY_MS = 3_600_000
GRACE_MS = 5_000


def main() -> None:
    bootstrap, state_dir = sys.argv[1:3]
    child_logging()
    s = Serdes.string()
    builder = StreamsBuilder()
    prices = builder.table("prices", key_serde=s, value_serde=s, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("prices-store", HISTORY_MS)))
    (builder.stream("orders", key_serde=s, value_serde=s)
        .join(prices, lambda product, order, price: f"{order}@{price}",
              Joined.with_(s, s, s).with_grace_period(GRACE_MS))
        .to("priced", key_serde=s, value_serde=s))
    streams = KafkaStreams(builder.build(), {
        "application.id": APP_ID, "bootstrap.servers": bootstrap,
        "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 100,
        "state.dir": state_dir, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
    })
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
