"""Crashes of `streams mirror` while records flow (`make test-mirror`, about 4 minutes): two
processes sharing a flow, one SIGKILLed, lose nothing; one SIGSTOPped (its tasks taken over,
then back as a zombie) loses nothing and leaves consistent checkpoints; under exactly-once
mirroring a SIGKILL neither loses nor repeats a record for a read_committed reader."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from helpers import wait_until
from mirror_helpers import (
    MirrorProcess,
    admin_call,
    consume_group,
    create_topic,
    produce,
    read_all,
    write_mm2,
)

from connect.mirror.formats import Checkpoint

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


LAG_MAX = 20


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    async def fetch(admin):  # noqa: ANN001, ANN202
        offsets = await admin.list_consumer_group_offsets(group)
        return {tp.partition: m.offset for tp, m in offsets.items() if m.offset >= 0}

    return admin_call(bootstrap, fetch)


def _checkpoints(bootstrap: str, group: str) -> dict[int, list[Checkpoint]]:
    """The group's checkpoints on B per partition, in the order they were written."""
    out: dict[int, list[Checkpoint]] = {}
    for record in read_all(bootstrap, "A.checkpoints.internal"):
        checkpoint = Checkpoint.from_record(record.key, record.value)
        if checkpoint.group == group:
            out.setdefault(checkpoint.partition, []).append(checkpoint)
    return out


def _latest_upstream(bootstrap: str, group: str) -> dict[int, int]:
    return {p: cps[-1].upstream_offset for p, cps in _checkpoints(bootstrap, group).items()}


def test_sigstop_of_one_of_two_processes_loses_nothing_and_checkpoints_stay_consistent(
        tmp_path: Path, two_brokers) -> None:
    """One of two processes sharing a flow is SIGSTOPped while records flow and a group
    commits on A: the other takes its tasks over (every record reaches B while it is stopped);
    SIGCONT brings it back as a zombie that rejoins. Nothing is lost, each replica partition
    keeps the source's order, the checkpoints never move the group backwards, and a fail-over
    at the last checkpoint skips no record."""
    a, b = two_brokers
    create_topic(a.bootstrap, "orders", 4)
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = orders", "tasks.max = 2",
                        f"offset.lag.max = {LAG_MAX}"])
    first = MirrorProcess(config, tmp_path / "mirror-1.log").start()
    second = MirrorProcess(config, tmp_path / "mirror-2.log").start()

    def feed(start: int, stop: int, done: threading.Event) -> threading.Thread:
        def run() -> None:
            for at in range(start, stop, 100):
                produce(a.bootstrap, _values("orders", 4, at, 100))
            done.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def on_b() -> set[bytes]:
        return {r.value for r in read_all(b.bootstrap, "A.orders")}

    try:
        wait_until(lambda: all("connect.mirror.source: replicating" in p.log()
                               for p in (first, second)), 90, interval=0.5,
                   message="a source task in each process")
        fed = threading.Event()
        feeder = feed(0, 3000, fed)
        wait_until(lambda: len(read_all(b.bootstrap, "A.orders")) >= 600, 90, interval=0.5,
                   message="replication under way")
        assert len(consume_group(a.bootstrap, "orders", "audit", 400)) == 400
        first.pause()  # SIGSTOP mid-flow: no heartbeats, its tasks hold their partitions
        feeder.join(120)
        assert fed.is_set()
        # The group goes on reading on A; the checkpoints follow it with `first` stopped.
        assert len(consume_group(a.bootstrap, "orders", "audit", 1200)) == 1200
        committed = _committed(a.bootstrap, "audit")
        # Every record reaches B while `first` is stopped: `second` took its tasks over.
        wait_until(lambda: on_b() == {f"record-{i}".encode() for i in range(3000)}, 120,
                   interval=1, message="every record on B with one process stopped")
        wait_until(lambda: _latest_upstream(b.bootstrap, "audit") == committed, 90,
                   interval=1, message="checkpoints of the commits made during the stop")

        tasks_before = first.log().count("connect.mirror.source: replicating")
        first.resume()  # SIGCONT: a zombie whose group moved on rejoins it
        wait_until(lambda: first.log().count("connect.mirror.source: replicating")
                   > tasks_before, 90, interval=0.5, message="the resumed process runs a task")
        fed = threading.Event()
        feeder = feed(3000, 4000, fed)
        feeder.join(120)
        assert fed.is_set()
        assert len(consume_group(a.bootstrap, "orders", "audit", 1000)) == 1000
        committed = _committed(a.bootstrap, "audit")
        wait_until(lambda: on_b() == {f"record-{i}".encode() for i in range(4000)}, 120,
                   interval=1, message="every record on B after the resume")
        wait_until(lambda: _latest_upstream(b.bootstrap, "audit") == committed, 90,
                   interval=1, message="checkpoints of the last commits")

        replica = read_all(b.bootstrap, "A.orders")
        source = read_all(a.bootstrap, "orders")
        checkpoints = _checkpoints(b.bootstrap, "audit")
        # The group read 2,600 of 4,000 records: it committed on some partitions or all.
        assert set(checkpoints) == set(committed) and len(committed) >= 2, committed
        for p in range(4):
            src = [r for r in source if r.partition == p]
            rep = [r for r in replica if r.partition == p]
            # In order, repeats allowed (a stopped task's records are polled again).
            assert list(dict.fromkeys(r.value for r in rep)) == [r.value for r in src]
            if p not in committed:
                continue
            # Never backwards: each checkpoint is at or past the one before it.
            for before, after in itertools.pairwise(checkpoints[p]):
                assert after.upstream_offset >= before.upstream_offset, (before, after)
                assert after.downstream_offset >= before.downstream_offset, (before, after)
            # A consumer moving to B at the last checkpoint misses nothing it had not read.
            last = checkpoints[p][-1]
            unread = {r.value for r in src if r.offset >= last.upstream_offset}
            from_checkpoint = {r.value for r in rep if r.offset >= last.downstream_offset}
            assert unread <= from_checkpoint, (p, last, sorted(unread - from_checkpoint)[:5])
            # ... and re-reads at most offset.lag.max records it had read on A.
            assert len(from_checkpoint - unread) <= LAG_MAX, (p, last)
    finally:
        second.stop()
        first.stop()


def test_exactly_once_mirroring_fences_a_sigstopped_process(tmp_path: Path,
                                                             two_brokers) -> None:
    """Exactly-once: the only process is SIGSTOPped mid-flow (likely inside a transaction), a
    second one takes the flow over, and the first is resumed as a zombie while records still
    flow: its stale transaction is fenced, so a read_committed reader sees each record once."""
    a, b = two_brokers
    create_topic(a.bootstrap, "ledger", 3)
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                       ["A->B.enabled = true", "A->B.topics = ledger",
                        "B.exactly.once.source.support = enabled"])
    total = 3000
    fed = threading.Event()

    def feed() -> None:
        for start in range(0, total, 100):
            produce(a.bootstrap, _values("ledger", 3, start, 100))
        fed.set()

    def committed_on_b() -> list:
        return read_all(b.bootstrap, "A.ledger", isolation="read_committed")

    feeder = threading.Thread(target=feed, daemon=True)
    first = MirrorProcess(config, tmp_path / "mirror-1.log").start()
    second = None
    try:
        feeder.start()
        wait_until(lambda: len(committed_on_b()) >= 600, 90, interval=0.5,
                   message="replication under way")
        first.pause()
        second = MirrorProcess(config, tmp_path / "mirror-2.log").start()
        wait_until(lambda: "connect.mirror.source: replicating" in second.log(), 90,
                   interval=0.5, message="the second process took the source task over")
        first.resume()  # the zombie wakes up while records still flow
        feeder.join(120)
        assert fed.is_set()
        expected = {f"record-{i}".encode() for i in range(total)}
        wait_until(lambda: {r.value for r in committed_on_b()} == expected, 120, interval=1,
                   message="every record on B")
        replica = committed_on_b()
        source = read_all(a.bootstrap, "ledger")
        for p in range(3):  # each record once, in order
            assert [r.value for r in replica if r.partition == p] == \
                [r.value for r in source if r.partition == p]
    finally:
        if second is not None:
            second.stop()
        first.stop()
