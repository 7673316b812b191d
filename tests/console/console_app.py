"""The streams application the console's browser test runs as two instances.

    python -m tests.console.console_app BOOTSTRAP STATE_DIR APPLICATION_SERVER

Counts ``clicks`` (key user, value page) per page: the re-keying makes a repartition topic and
two sub-topologies, the count a store (``page-counts``) with a changelog, and
``num.standby.replicas=1`` gives each instance the other's standbys. Prints ``STATE <state>``
on every change; SIGTERM closes it.
"""

from __future__ import annotations

import sys
from typing import Any

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder, Topology
from tests.app_main import child_logging, run_until_sigterm

APP_ID = "page-views"
INPUT = "clicks"
OUTPUT = "page-totals"
STORE = "page-counts"


def topology() -> Topology:
    s = Serdes.string()
    builder = StreamsBuilder()
    clicks = builder.stream(INPUT, key_serde=s, value_serde=s)
    counts = clicks.filter(lambda user, page: bool(page)) \
        .group_by(lambda user, page: page, key_serde=s, value_serde=s) \
        .count(Materialized(STORE, key_serde=s))
    counts.to_stream().to(OUTPUT, key_serde=s, value_serde=Serdes.long())
    return builder.build()


def config(bootstrap: str, state_dir: str, server: str) -> dict[str, Any]:
    return {"application.id": APP_ID, "bootstrap.servers": bootstrap, "state.dir": state_dir,
            "commit.interval.ms": 100, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "num.standby.replicas": 1,
            "application.server": server}


def main() -> None:
    bootstrap, state_dir, server = sys.argv[1:4]
    child_logging()
    run_until_sigterm(KafkaStreams(topology(), config(bootstrap, state_dir, server)))


if __name__ == "__main__":
    main()
