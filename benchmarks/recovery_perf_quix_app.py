"""The recovery benchmark's counting app in Quix Streams, run as a child by ``recovery_perf.py``.

Usage: python recovery_perf_quix_app.py BOOTSTRAP APP_ID GUARANTEE STATE_DIR SESSION_TIMEOUT_MS
(GUARANTEE is ``at_least_once`` or ``exactly_once_v2``, mapped onto Quix's
``processing_guarantee``). It runs in its own virtualenv (``.bench/quix-venv``: Quix Streams pins
an older confluent-kafka than this repository). Counts records per key from ``recovery-input``
into ``<APP_ID>-counts`` (String keys, 8-byte big-endian counts as Kafka's LongSerializer writes
them; RocksDB state with its changelog topic, Quix's defaults otherwise: commit every 5 s under
both guarantees, no record cache).

Quix has no state listener and no restore listener, so this app prints the same lines as the
other two apps from Quix's own recovery objects:

- ``STORED <changelog> <partition> <stored offset> <highwater>`` for every store partition
  assigned (Quix's check whether it needs recovery: it does when the changelog holds records
  past the stored offset);
- ``RESTORING <changelog> <partition> <stored offset> <highwater>`` when the recovery loop hands
  a partition its first changelog record (the offset the store had committed, and the end it
  restores to);
- ``RESTORED <changelog> <partition> <read> <applied>`` when Quix finishes a partition's
  recovery (``RecoveryPartition.complete_recovery``): ``read`` counts every changelog record the
  recovery consumer delivered to the partition, ``applied`` those Quix wrote into the store
  (it skips records whose source offsets were never committed). Partitions whose stored offset
  is already at the changelog's end never enter recovery and print nothing (0 restored);
- ``STATE RUNNING`` when the processing loop first runs with input partitions assigned and no
  recovery pending (Quix's loop recovers instead of processing while any is);
- ``CLOSED`` when ``Application.run`` returns after SIGTERM (Quix's own handler: final
  checkpoint, consumer closed, so it leaves the group).
"""

from __future__ import annotations

import json
import struct
import sys
from collections import Counter

from quixstreams import Application
from quixstreams.models.serializers import Serializer
from quixstreams.state.metadata import CHANGELOG_PROCESSED_OFFSETS_MESSAGE_HEADER
from quixstreams.state.recovery import RecoveryPartition

INPUT = "recovery-input"
GUARANTEES = {"at_least_once": "at-least-once", "exactly_once_v2": "exactly-once"}


class LongSerializer(Serializer):
    """Counts as Kafka's LongSerializer writes them (the other apps' output format)."""

    def __call__(self, value: int, ctx: object) -> bytes:
        return struct.pack(">q", value)


def count_recovery() -> None:
    """Wrap Quix's per-partition recovery steps to print what each partition restored."""
    read: Counter[tuple[str, int]] = Counter()
    applied: Counter[tuple[str, int]] = Counter()
    recover, complete = (RecoveryPartition.recover_from_changelog_message,
                         RecoveryPartition.complete_recovery)
    needs_check = RecoveryPartition.needs_recovery_check.fget

    def recover_counted(self: RecoveryPartition, changelog_message) -> None:
        key = (self.changelog_name, self.partition_num)
        if not read[key]:
            print(f"RESTORING {key[0]} {key[1]} {self.offset} {self.changelog_highwater}",
                  flush=True)
        # Quix applies a record unless its header names source offsets beyond the committed
        # ones (then it only moves the stored offset): the same test, asked before it runs.
        headers = dict(changelog_message.headers() or ())
        processed = json.loads(headers.get(CHANGELOG_PROCESSED_OFFSETS_MESSAGE_HEADER, b"null"))
        if processed is None or self._should_apply_changelog(processed_offsets=processed):
            applied[key] += 1
        read[key] += 1
        recover(self, changelog_message=changelog_message)

    def complete_counted(self: RecoveryPartition) -> None:
        complete(self)
        key = (self.changelog_name, self.partition_num)
        print(f"RESTORED {key[0]} {key[1]} {read[key]} {applied[key]}", flush=True)

    def needs_check_printed(self: RecoveryPartition) -> bool:
        answer = needs_check(self)
        print(f"STORED {self.changelog_name} {self.partition_num} {self.offset} "
              f"{self.changelog_highwater}", flush=True)
        return answer

    RecoveryPartition.needs_recovery_check = property(needs_check_printed)  # type: ignore[assignment]
    RecoveryPartition.recover_from_changelog_message = recover_counted  # type: ignore[method-assign]
    RecoveryPartition.complete_recovery = complete_counted  # type: ignore[method-assign]


def main() -> None:
    bootstrap, app_id, guarantee, state_dir, session_timeout_ms = sys.argv[1:6]
    session_ms = int(session_timeout_ms)
    count_recovery()
    app = Application(
        broker_address=bootstrap, consumer_group=app_id, auto_offset_reset="earliest",
        state_dir=state_dir, processing_guarantee=GUARANTEES[guarantee], loglevel="INFO",
        consumer_extra_config={"session.timeout.ms": session_ms,
                               "heartbeat.interval.ms": max(session_ms // 10, 100)})
    counts = app.topic(INPUT, key_deserializer="str", value_deserializer="str")
    out = app.topic(f"{app_id}-counts", key_serializer="str", value_serializer=LongSerializer())

    def count(_value: str, state) -> int:
        n = state.get("count", 0) + 1
        state.set("count", n)
        return n

    app.dataframe(counts).apply(count, stateful=True).to_topic(out)
    announce_running(app)
    app.run()
    print("CLOSED", flush=True)


def announce_running(app: Application) -> None:
    """Print ``STATE RUNNING`` once the loop processes with its input assigned (see above)."""
    process = app._process_message  # noqa: SLF001 - the loop's per-iteration step
    consumer = app._consumer  # noqa: SLF001
    announced = False

    def process_announcing(dataframe_composed) -> None:
        nonlocal announced
        if not announced and any(tp.topic == INPUT for tp in consumer.assignment()):
            announced = True
            print("STATE RUNNING", flush=True)
        process(dataframe_composed)

    app._process_message = process_announcing  # noqa: SLF001


if __name__ == "__main__":
    main()
