"""What a task commits with its offsets, seen from outside: a child-process app for
test_commit_metadata_runtime.py (and the same topology as tests/reference/java/
CommitMetadataApp.java, run by Kafka Streams).

Usage: python commit_metadata_app.py BOOTSTRAP STATE_DIR GUARANTEE [APPLICATION_ID [PREFIX]]
(PREFIX goes before each topic name)

From ``cm-input`` (String keys and values), in one sub-topology:

* a Processor API processor writes to ``cm-times`` one ``"<key>" -> "record <ts> <stream
  time>"`` per record, and ``"punctuation <task id>" -> "<ts>"`` from a STREAM_TIME
  punctuator of PUNCTUATE_MS (scheduled in ``init``);
* a windowed count (WINDOW_MS tumbling windows, no grace, store ``cm-counts`` retaining
  RETENTION_MS, as an app that queries its windows keeps them) that emits on window close
  writes each final to ``cm-finals`` as ``"<key>@<window start>" -> count``.

Prints state changes; stops cleanly on SIGTERM.
"""

from __future__ import annotations

import sys
from typing import Any

from streams import (
    EmitStrategy,
    KafkaStreams,
    Materialized,
    Processor,
    PunctuationType,
    Record,
    Serdes,
    StreamsBuilder,
    TimeWindows,
)
from tests.app_main import child_logging, run_until_sigterm

APP_ID = "commit-metadata-app"
PUNCTUATE_MS = 1_000
WINDOW_MS = 1_000
RETENTION_MS = 120_000
STORE = "cm-counts"


class StreamTimeReporter(Processor[str, str]):
    def init(self, context: Any) -> None:
        super().init(context)
        context.schedule(PUNCTUATE_MS, PunctuationType.STREAM_TIME, self.punctuate)

    def punctuate(self, timestamp: int) -> None:
        self.context.forward(Record(f"punctuation {self.context.task_id}", str(timestamp),
                                    timestamp))

    def process(self, record: Record[str, str]) -> None:
        now = self.context.current_stream_time_ms()
        self.context.forward(record.with_value(f"record {record.timestamp} {now}"))


def topology(prefix: str = "") -> Any:
    s = Serdes.string()
    builder = StreamsBuilder()
    source = builder.stream(f"{prefix}cm-input", key_serde=s, value_serde=s)
    source.process(StreamTimeReporter).to(f"{prefix}cm-times", key_serde=s, value_serde=s)
    (source.group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(WINDOW_MS))
        .emit_strategy(EmitStrategy.on_window_close())
        .count(Materialized(STORE, retention=RETENTION_MS))
        .to_stream()
        .map(lambda key, count: (f"{key.key}@{key.window.start}", count))
        .to(f"{prefix}cm-finals", key_serde=s, value_serde=Serdes.long()))
    return builder.build()


def main() -> None:
    bootstrap, state_dir, guarantee = sys.argv[1:4]
    app_id = sys.argv[4] if len(sys.argv) > 4 else APP_ID
    prefix = sys.argv[5] if len(sys.argv) > 5 else ""
    child_logging()
    streams = KafkaStreams(topology(prefix), {
        "application.id": app_id, "bootstrap.servers": bootstrap,
        "processing.guarantee": guarantee, "commit.interval.ms": 200,
        "state.dir": state_dir, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
    })
    run_until_sigterm(streams)


if __name__ == "__main__":
    main()
