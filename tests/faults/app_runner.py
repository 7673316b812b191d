"""One application instance of a catalogue scenario, run as a child process by the harness.

    python -m tests.faults.app_runner --scenario NAME --guarantee exactly_once_v2 \
        --bootstrap HOST:PORT --state-dir DIR [--cache-bytes N] [--record-delay-ms MS]

Short session timeouts make faults (a killed or paused instance) resolve in seconds. Prints
``STATE <state>`` on every state change and ``CLOSED`` after a clean close; SIGTERM closes it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from streams import KafkaStreams
from tests.app_main import run_until_sigterm

from .catalogue import SCENARIOS

SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_MS = 1_000


def config(scenario: str, guarantee: str, bootstrap: str, state_dir: str, cache_bytes: int,
           commit_ms: int | None, standbys: int = 0,
           max_poll_records: int = 100) -> dict[str, object]:
    """The instance's StreamsConfig keys (shared by every instance of one run)."""
    config: dict[str, object] = {
        "application.id": f"faults-{scenario}", "bootstrap.servers": bootstrap,
        "processing.guarantee": guarantee, "state.dir": state_dir, "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS, "max.poll.records": max_poll_records,
        "statestore.cache.max.bytes": cache_bytes, "num.standby.replicas": standbys,
    }
    if commit_ms is not None:  # otherwise Kafka's defaults: 100 ms under EOS, 30 s under ALOS
        config["commit.interval.ms"] = commit_ms
    return config


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    parser.add_argument("--guarantee", required=True,
                        choices=["at_least_once", "exactly_once_v2"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--cache-bytes", type=int, default=0)
    parser.add_argument("--commit-ms", type=int, default=None)
    parser.add_argument("--standbys", type=int, default=0, help="num.standby.replicas")
    parser.add_argument("--record-delay-ms", type=float, default=3.0)
    parser.add_argument("--max-poll-records", type=int, default=100)
    parser.add_argument("--stall-s", type=float, default=None,
                        help="stand still this long inside the first at_least_once commit "
                             "after <state-dir>.stall exists (commit_stall.py)")
    parser.add_argument("--stall-at", choices=["commit", "iteration"], default="commit",
                        help="where --stall-s stands still: inside a commit, or right after a "
                             "regular loop iteration handed its output to the producer")
    args = parser.parse_args(argv)
    if args.stall_s is not None:
        from pathlib import Path

        from .commit_stall import install
        install(Path(f"{args.state_dir}.stall"), args.stall_s, args.stall_at)
    # FAULTS_APP_LOG_LEVEL=INFO (or DEBUG) when diagnosing a failing seed
    level = os.environ.get("FAULTS_APP_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scenario = SCENARIOS[args.scenario]
    streams = KafkaStreams(scenario.build(args.record_delay_ms / 1000), config(
        args.scenario, args.guarantee, args.bootstrap, args.state_dir, args.cache_bytes,
        args.commit_ms, args.standbys, args.max_poll_records))
    run_until_sigterm(streams, close_timeout=30, report_timeout=True)


if __name__ == "__main__":
    main()
