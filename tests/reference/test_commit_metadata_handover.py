"""An application handed over between Kafka Streams 4.4 and ours under one application.id
resumes what the other committed with its offsets, and both do the same with it.

The same topology runs on both sides (tests/runtime/commit_metadata_app.py and
java/CommitMetadataApp.java): a Processor API processor reporting each record's stream time
and a STREAM_TIME punctuator's times, and a windowed count emitting on window close. On the
reference Apache Kafka, ours runs, stops cleanly, Kafka Streams takes over, stops, and ours
takes over again. At each handover the new owner must punctuate at once at each task's
committed stream time, report that time for an older record that arrives next, and, restoring
the windowed store from the changelog the other one wrote, emit no final the other one
emitted already: every window's final arrives once, with its count.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from helpers import wait_until

from streams.processor import commit_metadata
from tests.runtime.app_process import AppProcess
from tests.runtime.commit_metadata_app import PUNCTUATE_MS, WINDOW_MS
from tests.runtime.kafka_io import committed, committed_offsets, create_topics, produce, read_all

from . import kafka
from .dsl_runner import compile_java

OURS = Path(__file__).resolve().parents[1] / "runtime" / "commit_metadata_app.py"
KAFKA_APP = kafka.HERE / "java" / "CommitMetadataApp.java"
BASE_TS = (int(time.time() * 1000) - 600_000) // PUNCTUATE_MS * PUNCTUATE_MS
KEYS = {0: ["k0", "k1"], 1: ["k2", "k3"]}  # keys of each input partition
Record = tuple[bytes, bytes, int]


def start(side: str, bootstrap: str, app_id: str, state_dir: Path, log: Path) -> AppProcess:
    if side == "ours":
        return AppProcess(OURS, [bootstrap, str(state_dir), "at_least_once", app_id,
                                 f"{app_id}-"], log)
    classes = compile_java(KAFKA_APP, kafka.CACHE / "commit-metadata-app")
    java = ["java", *kafka.JAVA_OPTS, "-cp", f"{classes}:{kafka.LIBS}/*", "CommitMetadataApp"]
    return AppProcess(java, [bootstrap, app_id, str(state_dir), "at_least_once", f"{app_id}-"],
                      log)


def windows(partition: int, start: int, end: int) -> list[Record]:
    """5 records per key and window of [start, end), in timestamp order."""
    return [(key.encode(), b"x", ts) for ts in range(start, end, WINDOW_MS // 5)
            for key in KEYS[partition]]


def test_an_app_handed_over_both_ways_resumes_what_the_other_committed(
        reference_kafka, tmp_path) -> None:
    bootstrap = reference_kafka.bootstrap
    app_id = f"commit-metadata-handover-{int(time.time())}"  # the Kafka node is shared
    input_, times, finals = (f"{app_id}-cm-{t}" for t in ("input", "times", "finals"))
    create_topics(bootstrap, {input_: 2, times: 2, finals: 2})
    sent: dict[int, list[Record]] = {0: [], 1: []}

    def send(partition: int, records: list[Record]) -> None:
        produce(bootstrap, input_, records, partition=partition)
        sent[partition] += records

    for partition in (0, 1):  # stream-time probes, then windows
        send(partition, [(f"p{partition}".encode(), b"x", BASE_TS + 1_000 * step + 500 * partition)
                         for step in range(3)])
        send(partition, windows(partition, BASE_TS + 5_000, BASE_TS + 15_000))

    chain = ["ours", "kafka", "ours"]
    before: set[tuple[int, int]] = set()  # cm-times records of the hops so far
    segment = BASE_TS + 15_000  # where each hop's windows start: after the last tick's window
    for hop, side in enumerate(chain):
        app = start(side, bootstrap, app_id, tmp_path / f"{hop}-{side}",
                    tmp_path / f"{hop}-{side}.log")
        try:
            wait_until(app.running, timeout=120, message=f"{side} (hop {hop}) RUNNING")
            if hop > 0:
                _check_resumed_stream_time(bootstrap, app_id, chain[hop - 1], side, sent, before)
            # More windows, then a record past them on each partition to close them all. A
            # later record goes past the tick's window: what ends before the close time a hop
            # committed counts as emitted (on both sides).
            tick = segment + 10_000 + 2 * WINDOW_MS
            for partition in (0, 1):
                send(partition, windows(partition, segment, segment + 10_000))
                send(partition, [(f"tick{partition}".encode(), b"x", tick)])
            segment = tick + WINDOW_MS
            wait_until(lambda: committed_offsets(bootstrap, app_id, input_)  # noqa: B023
                       == {p: len(r) for p, r in sent.items()},
                       timeout=90, message=f"{side} (hop {hop}) committed every input record")
        finally:
            app.stop()
        assert "CLOSED" in app.output(), app.output()[-2000:]
        before = {(r.partition, r.offset) for r in read_all(bootstrap, times)}

    got = read_all(bootstrap, finals)
    counts = Counter(r.key.decode() for r in got)
    assert sorted(k for k, n in counts.items() if n > 1) == [], "finals emitted twice"
    expected: Counter[str] = Counter()
    for records in sent.values():
        for key, _value, ts in records:
            if key.startswith(b"k"):
                expected[f"{key.decode()}@{ts // WINDOW_MS * WINDOW_MS}"] += 1
    assert {r.key.decode(): int.from_bytes(r.value, "big") for r in got
            if r.key.startswith(b"k")} == dict(expected)


def _check_resumed_stream_time(bootstrap: str, app_id: str, previous: str, side: str,
                               sent: dict[int, list[Record]], before: set[tuple[int, int]]
                               ) -> None:
    input_, times = f"{app_id}-cm-input", f"{app_id}-cm-times"
    resumed = {p: max(ts for _k, _v, ts in records) for p, records in sent.items()}
    for partition, (_offset, text) in committed(bootstrap, app_id, input_).items():
        decoded, problem = commit_metadata.decode(text)
        assert problem is None, text
        assert decoded.partition_time == resumed[partition], f"{previous} committed {decoded}"

    def after_handover() -> list[tuple[str, str]]:
        return sorted((r.key.decode(), r.value.decode())
                      for r in read_all(bootstrap, times, quiet=0)
                      if (r.partition, r.offset) not in before)

    expected = [(f"punctuation 0_{p}", str(t)) for p, t in resumed.items()]
    wait_until(lambda: after_handover() == expected, timeout=60,
               message=f"{side} punctuating at the stream times {previous} committed")
    for partition in (0, 1):
        older = [(f"p{partition}".encode(), b"x", BASE_TS + 100)]
        produce(bootstrap, input_, older, partition=partition)
        sent[partition] += older
    expected += [(f"p{p}", f"record {BASE_TS + 100} {t}") for p, t in resumed.items()]
    wait_until(lambda: after_handover() == sorted(expected), timeout=60,
               message=f"{side} seeing the stream times {previous} committed")
