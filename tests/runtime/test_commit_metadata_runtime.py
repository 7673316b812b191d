"""A task restarted on another process resumes what its last owner committed with the input
offsets (Kafka's offset-commit metadata, processor/commit_metadata.py):

* its stream time (KAFKA-7994): a STREAM_TIME punctuator is due at once at the stream time
  reached before the restart, and ``current_stream_time_ms()`` never goes back to the
  timestamp of an older record that arrives after it;
* emit-on-close's last window close time (KIP-825, KAFKA-13785): the windows a restored store
  still holds whose finals went out before are not emitted again, while input flows through a
  SIGKILL and restart (exactly_once_v2) or a task moving to a second instance (at_least_once).

The app is tests/runtime/commit_metadata_app.py, in a child process.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import wait_until

from streams.processor import commit_metadata

from .app_process import AppProcess
from .commit_metadata_app import APP_ID, PUNCTUATE_MS, STORE, WINDOW_MS
from .kafka_io import committed, committed_offsets, create_topics, produce, read_all

SCRIPT = Path(__file__).with_name("commit_metadata_app.py")
# Recent, so that the broker's retention never deletes the windowed changelog's segments.
BASE_TS = (int(time.time() * 1000) - 600_000) // PUNCTUATE_MS * PUNCTUATE_MS


def start_app(bootstrap: str, state_dir: Path, log: Path, guarantee: str) -> AppProcess:
    return AppProcess(SCRIPT, [bootstrap, str(state_dir), guarantee], log, state_dir=state_dir)


def topics(bootstrap: str) -> None:
    create_topics(bootstrap, {"cm-input": 2, "cm-times": 2, "cm-finals": 2})


def test_a_restarted_task_resumes_its_stream_time(broker, tmp_path) -> None:
    topics(broker.bootstrap)
    first_input = {0: [BASE_TS, BASE_TS + 1_500, BASE_TS + 3_200],
                   1: [BASE_TS + 500, BASE_TS + 2_700]}
    for partition, stamps in first_input.items():
        produce(broker.bootstrap, "cm-input", [(f"p{partition}".encode(), b"x", ts)
                                               for ts in stamps], partition=partition)
    state_dir = tmp_path / "state"
    first = start_app(broker.bootstrap, state_dir, tmp_path / "first.log", "at_least_once")
    try:
        wait_until(first.running, timeout=60, message="first instance RUNNING")
        wait_until(lambda: committed_offsets(broker.bootstrap, APP_ID, "cm-input")
                   == {0: 3, 1: 2}, timeout=60, message="every input record committed")
    finally:
        first.kill()
    # What was committed is Kafka's encoding of each partition's time.
    for partition, (_offset, text) in committed(broker.bootstrap, APP_ID, "cm-input").items():
        decoded, problem = commit_metadata.decode(text)
        assert problem is None
        assert decoded.partition_time == max(first_input[partition])
    before = {(r.partition, r.offset) for r in read_all(broker.bootstrap, "cm-times")}

    second = start_app(broker.bootstrap, state_dir, tmp_path / "second.log", "at_least_once")
    try:
        wait_until(second.running, timeout=60, message="second instance RUNNING")

        def after_restart() -> list[tuple[str, str]]:
            return sorted((r.key.decode(), r.value.decode())
                          for r in read_all(broker.bootstrap, "cm-times", quiet=0)
                          if (r.partition, r.offset) not in before)

        # No new input yet: each task's stream-time punctuator is due at the resumed time.
        expected = [(f"punctuation 0_{p}", str(max(stamps)))
                    for p, stamps in first_input.items()]
        wait_until(lambda: after_restart() == expected, timeout=30,
                   message=f"punctuations at the resumed stream times {expected}")
        # An older record does not move stream time back.
        for partition in first_input:
            produce(broker.bootstrap, "cm-input",
                    [(f"p{partition}".encode(), b"x", BASE_TS + 100)], partition=partition)
        expected += [(f"p{p}", f"record {BASE_TS + 100} {max(stamps)}")
                     for p, stamps in first_input.items()]
        wait_until(lambda: after_restart() == sorted(expected), timeout=30,
                   message=f"records seeing the resumed stream times {sorted(expected)}")
    finally:
        second.stop()
    assert "CLOSED" in second.output()


def _window_input(count: int) -> list[tuple[bytes, bytes, int]]:
    """``count`` records over 4 keys, 10 per key and window, in timestamp order."""
    return [(f"k{i % 4}".encode(), b"x", BASE_TS + (i // 4) * (WINDOW_MS // 10))
            for i in range(count)]


def _finals_expected(records: list[tuple[bytes, bytes, int]]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for key, _value, ts in records:
        counts[f"{key.decode()}@{ts // WINDOW_MS * WINDOW_MS}"] += 1
    return dict(counts)


@pytest.mark.parametrize("guarantee,move", [("exactly_once_v2", "sigkill-and-restart"),
                                            ("at_least_once", "second-instance-takes-a-task")])
def test_emit_on_close_emits_each_final_once_when_its_task_moves(broker, tmp_path, guarantee,
                                                                 move) -> None:
    """While input flows, the instance is killed and restarted on its state directory, or a
    second instance joins and takes a task over (restoring its store from the changelog)."""
    topics(broker.bootstrap)
    records = _window_input(1_200)  # 30 windows of each of 4 keys, on both partitions
    expected = _finals_expected(records)
    app = start_app(broker.bootstrap, tmp_path / "a", tmp_path / "a.log", guarantee)
    apps = [app]
    fed = threading.Event()
    failure: list[BaseException] = []

    def feed() -> None:
        try:
            for start in range(0, len(records), 40):  # about 1 window a key per 0.1 s
                produce(broker.bootstrap, "cm-input", records[start:start + 40])
                time.sleep(0.1)  # pacing the producer, not waiting for anything
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)
        finally:
            fed.set()

    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_until(app.running, timeout=60, message="first instance RUNNING")
        feeder.start()
        # Move once some finals are out and committed, while input still flows.
        wait_until(lambda: len(read_all(broker.bootstrap, "cm-finals", quiet=0)) >= 20,
                   timeout=60, message="20 finals emitted before the move")
        assert not fed.is_set(), "the feed ended before the move: nothing flows across it"
        if move == "sigkill-and-restart":
            app.kill()
            emitted_before = len(read_all(broker.bootstrap, "cm-finals", quiet=0))
            apps = [start_app(broker.bootstrap, tmp_path / "a", tmp_path / "a2.log",
                              guarantee)]
        else:
            emitted_before = len(read_all(broker.bootstrap, "cm-finals", quiet=0))
            apps.append(start_app(broker.bootstrap, tmp_path / "b", tmp_path / "b.log",
                                  guarantee))
        wait_until(lambda: all(a.owns_tasks(APP_ID) for a in apps), timeout=60,
                   message="the tasks running on the instance(s) after the move")
        wait_until(fed.is_set, timeout=120, message="the feed done")
        assert not failure, failure
        # Close every window: a later record on each partition.
        end = BASE_TS + 100 * WINDOW_MS
        for partition in (0, 1):
            produce(broker.bootstrap, "cm-input", [(f"tick{partition}".encode(), b"x", end)],
                    partition=partition)
        finals = read_all(broker.bootstrap, "cm-finals",
                          until=lambda rs: len({r.key for r in rs}) >= len(expected),
                          timeout=90, quiet=1.5)
    finally:
        feeder.join(timeout=120)
        for a in apps:
            a.stop()
    got = Counter(r.key.decode() for r in finals)
    assert sorted(k for k, n in got.items() if n > 1) == [], "finals emitted twice"
    assert {r.key.decode(): int.from_bytes(r.value, "big") for r in finals} == expected
    assert 20 <= emitted_before < len(expected)
    # The committed offsets carry the last window close time emitted, under the store's name.
    metas = [commit_metadata.decode(text)[0]
             for _offset, text in committed(broker.bootstrap, APP_ID, "cm-input").values()]
    assert max(m.processor_metadata[STORE] for m in metas) >= end - WINDOW_MS
