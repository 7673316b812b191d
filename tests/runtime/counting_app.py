"""A counting application for crash tests, run as a child process.

Usage: python counting_app.py BOOTSTRAP GUARANTEE STATE_DIR [CACHE_MAX_BYTES]
(the environment variable COUNTING_APP_CONFIG may hold a JSON object of further settings;
COUNTING_APP_PROGRESS=1 prints ``PROGRESS <records processed> <commits>`` whenever the commit
count moves, so a test can tell how many records a commit interval held)
Counts records per key from ``crash-input`` into ``crash-counts``; prints state changes and the
restore and standby listeners' calls (``RESTORE {json}``, ``STANDBY {json}``); stops cleanly on
SIGTERM. The record cache is off unless CACHE_MAX_BYTES is given, so that every
count appears in the output and the crash test can check the exact sequence 1, 2, ..., n.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from streams import KafkaStreams, Serdes, StreamsBuilder
from tests.app_main import child_logging, run_until_sigterm


class PrintingListener:
    """Kafka's StateRestoreListener and StandbyUpdateListener, printing each call as JSON."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def _print(self, event: str, tp, store: str, **values) -> None:
        print(self.prefix, json.dumps({"event": event, "topic": tp.topic,
                                       "partition": tp.partition, "store": store, **values}),
              flush=True)

    def on_restore_start(self, tp, store, start_offset, end_offset) -> None:
        self._print("restore_start", tp, store, start=start_offset, end=end_offset)

    def on_restore_end(self, tp, store, total_restored) -> None:
        self._print("restore_end", tp, store, total=total_restored)

    def on_update_start(self, tp, store, starting_offset) -> None:
        self._print("update_start", tp, store, start=starting_offset)

    def on_batch_loaded(self, tp, store, task_id, batch_end_offset, batch_size,
                        current_end_offset) -> None:
        self._print("batch_loaded", tp, store, task=str(task_id), batch_end=batch_end_offset,
                    size=batch_size, end=current_end_offset)

    def on_update_suspended(self, tp, store, store_offset, current_end_offset, reason) -> None:
        self._print("update_suspended", tp, store, offset=store_offset,
                    end=current_end_offset, reason=reason)


def print_progress(streams: KafkaStreams) -> None:
    """The stream thread's process-total and commit-total, printed as commits happen."""
    last = None
    while True:
        try:
            values = {name.name: value for name, value in streams.metrics().items()
                      if name.name in ("process-total", "commit-total")}
        except Exception:  # not started yet, or closing
            values = {}
        commits = values.get("commit-total")
        if commits is not None and commits != last:
            last = commits
            print(f"PROGRESS {int(values.get('process-total', 0))} {int(commits)}", flush=True)
        time.sleep(0.01)


def main() -> None:
    bootstrap, guarantee, state_dir = sys.argv[1:4]
    cache_max_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    child_logging()
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
    streams.set_global_state_restore_listener(PrintingListener("RESTORE"))
    streams.set_standby_update_listener(PrintingListener("STANDBY"))
    if os.environ.get("COUNTING_APP_PROGRESS"):
        threading.Thread(target=print_progress, args=(streams,), daemon=True).start()
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
