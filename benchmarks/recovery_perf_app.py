"""The recovery benchmark's counting app (ours), run as a child process by ``recovery_perf.py``.

Usage: python recovery_perf_app.py BOOTSTRAP APP_ID GUARANTEE STATE_DIR SESSION_TIMEOUT_MS
Counts records per key from ``recovery-input`` into ``<APP_ID>-counts`` (String keys, Long
counts, default record cache). Prints ``STATE <state>`` on state changes, ``RESTORED <store>
<partition> <records>`` when a changelog partition's restoration ends (Kafka's
StateRestoreListener) and ``CLOSED`` after a clean stop on SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import threading

from streams import KafkaStreams, Serdes, StreamsBuilder

INPUT = "recovery-input"


class RestoreCounter:
    def on_restore_start(self, tp, store, start_offset, end_offset) -> None:
        print(f"RESTORING {store} {tp.partition} {start_offset} {end_offset}", flush=True)

    def on_batch_restored(self, tp, store, batch_end_offset, num_restored) -> None:
        pass

    def on_restore_end(self, tp, store, total_restored) -> None:
        print(f"RESTORED {store} {tp.partition} {total_restored}", flush=True)


def main() -> None:
    bootstrap, app_id, guarantee, state_dir, session_timeout_ms = sys.argv[1:6]
    s = Serdes.string()
    builder = StreamsBuilder()
    (builder.stream(INPUT, key_serde=s, value_serde=s)
        .group_by_key()
        .count("counts-store")
        .to_stream()
        .to(f"{app_id}-counts", key_serde=s, value_serde=Serdes.long()))
    streams = KafkaStreams(builder.build(), {
        "application.id": app_id, "bootstrap.servers": bootstrap,
        "processing.guarantee": guarantee, "state.dir": state_dir,
        "session.timeout.ms": int(session_timeout_ms),
        "heartbeat.interval.ms": max(int(session_timeout_ms) // 10, 100)})
    streams.set_global_state_restore_listener(RestoreCounter())
    streams.set_state_listener(lambda new, old: print(f"STATE {new.value}", flush=True))
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    streams.start()
    stopped.wait()
    streams.close(timeout=60)
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main()
