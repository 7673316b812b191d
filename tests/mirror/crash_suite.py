"""Crashes of `streams mirror` while records flow (`make test-mirror`, about 2 minutes): two
processes sharing a flow, one SIGKILLed, lose nothing; under exactly-once mirroring a SIGKILL
neither loses nor repeats a record for a read_committed reader."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers import wait_until
from mirror_helpers import (
    MirrorProcess,
    create_topic,
    produce,
    read_all,
    write_mm2,
)

pytestmark = pytest.mark.slow


def _values(topic: str, partitions: int, start: int, count: int) -> list[tuple]:
    return [(topic, i % partitions, f"k{i}".encode(), f"record-{i}".encode(), None, [])
            for i in range(start, start + count)]


def test_two_processes_share_the_work_and_a_sigkill_loses_nothing(tmp_path: Path,
                                                                   two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "events", 4)
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = events", "tasks.max = 2"])
    total, batch = 3000, 100
    done = threading.Event()

    def feed() -> None:
        for start in range(0, total, batch):
            produce(a.bootstrap, _values("events", 4, start, batch))
        done.set()

    feeder = threading.Thread(target=feed, daemon=True)
    first = MirrorProcess(config, tmp_path / "mirror-1.log").start()
    second = MirrorProcess(config, tmp_path / "mirror-2.log").start()
    try:
        # The same file in two processes: the flow's group spreads the two source tasks.
        wait_until(lambda: all("connect.mirror.source: replicating" in p.log()
                               for p in (first, second)), 90, interval=0.5,
                   message="a source task in each process")
        feeder.start()
        wait_until(lambda: len(read_all(b.bootstrap, "A.events")) >= 600, 90, interval=0.5,
                   message="replication under way")
        first.kill()  # SIGKILL while records flow: the other process takes its share over
        feeder.join(120)
        assert done.is_set()
        expected = {f"record-{i}".encode() for i in range(total)}
        wait_until(lambda: {r.value for r in read_all(b.bootstrap, "A.events")} == expected,
                   120, interval=1, message="every record on B")
        replica = read_all(b.bootstrap, "A.events")
        source = read_all(a.bootstrap, "events")
        # Per partition the replica holds the source's records in order (repeats allowed).
        for p in range(4):
            src = [r.value for r in source if r.partition == p]
            rep = [r.value for r in replica if r.partition == p]
            assert list(dict.fromkeys(rep)) == src
    finally:
        second.stop()
        first.stop()


def test_exactly_once_mirroring_survives_sigkill_without_duplicates(tmp_path: Path,
                                                                    two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "ledger", 3)
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = ledger",
                        "B.exactly.once.source.support = enabled"])
    total, batch = 3000, 100
    done = threading.Event()

    def feed() -> None:
        for start in range(0, total, batch):
            produce(a.bootstrap, _values("ledger", 3, start, batch))
        done.set()

    feeder = threading.Thread(target=feed, daemon=True)
    first = MirrorProcess(config, tmp_path / "mirror-1.log").start()
    second = None
    try:
        feeder.start()
        wait_until(lambda: len(read_all(b.bootstrap, "A.ledger", isolation="read_committed"))
                   >= 600, 90, interval=0.5, message="replication under way")
        first.kill()  # SIGKILL inside a transaction, most likely
        second = MirrorProcess(config, tmp_path / "mirror-2.log").start()
        feeder.join(120)
        assert done.is_set()
        expected = {f"record-{i}".encode() for i in range(total)}
        wait_until(lambda: {r.value for r in read_all(b.bootstrap, "A.ledger",
                                                      isolation="read_committed")} == expected,
                   120, interval=1, message="every record on B")
        replica = read_all(b.bootstrap, "A.ledger", isolation="read_committed")
        source = read_all(a.bootstrap, "ledger")
        for p in range(3):  # each record once, in order
            assert [r.value for r in replica if r.partition == p] == \
                [r.value for r in source if r.partition == p]
    finally:
        if second is not None:
            second.stop()
        first.stop()
