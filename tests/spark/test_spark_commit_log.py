"""The SparkSink commit protocol without Spark: sequence allocation, roll-forward, orphans."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from connect.spark.commit_log import (
    STAGING_DIR,
    CommitConflict,
    CommitEntry,
    CommitLog,
    CommitLogError,
    DataFile,
)


def stage(log: CommitLog, connector: str, task: int, files: dict[str, bytes]) -> tuple[str,
                                                                                       list]:
    """A staging directory with ``files`` ({relative path: content}), as Spark leaves it."""
    writer = log.new_writer(connector, task)
    out = []
    for rel, content in files.items():
        path = log.staging_root / writer / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        final = str(Path(rel).with_name(f"{Path(rel).stem}-{writer[-6:]}.parquet"))
        out.append(DataFile(f"{STAGING_DIR}/{writer}/{rel}", final))
    (log.staging_root / writer / "_SUCCESS").write_bytes(b"")
    return writer, out


def entry(writer: str, files: list, offsets: dict, start: dict | None = None,
          connector: str = "c", task: int = 0, schema: dict | None = None) -> CommitEntry:
    return CommitEntry(writer, connector, task, tuple(files), len(files), offsets,
                       start if start is not None else {tp: 0 for tp in offsets}, schema)


def run_writers(tmp_path: Path, threads: int, per_thread: int, compact_every: int) -> None:
    """``threads`` writers at once, each with its own CommitLog (as separate processes would
    have), each committing ``per_thread`` one-row entries for partition t-<its number>."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def run(task: int) -> None:
        log = CommitLog(tmp_path, compact_every=compact_every)
        barrier.wait()
        try:
            for i in range(per_thread):
                commit_plain(log, i, task=task)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not errors


def test_sink_log_concurrent_writers_get_unique_gapless_sequences(tmp_path: Path) -> None:
    threads, per_thread = 4, 25
    run_writers(tmp_path, threads, per_thread, compact_every=1000)  # no checkpoints here
    reader = CommitLog(tmp_path, compact_every=1000)
    reader.refresh()
    assert [e.sequence for e in reader.entries] == list(range(1, threads * per_thread + 1))
    assert len({e.writer for e in reader.entries}) == threads * per_thread
    assert reader.offsets == {("t", t): per_thread for t in range(threads)}
    assert not [p for p in reader.commits_dir.iterdir() if p.name.startswith(".tmp-")]


def test_sink_log_offsets_are_the_max_per_partition_schema_the_first(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    schema = {"type": "struct", "fields": []}
    log.commit(entry("c-0-" + "a" * 32, [], {("t", 0): 10, ("t", 1): 5}, schema=schema))
    log.commit(entry("c-1-" + "b" * 32, [], {("t", 1): 9, ("u", 0): 3},
                     {("t", 1): 5, ("u", 0): 0}, task=1, schema=schema))
    # A partition moved to another task: its later entry covers less of *another* partition.
    log.commit(entry("c-0-" + "c" * 32, [], {("t", 0): 12}, {("t", 0): 10}))
    fresh = CommitLog(tmp_path)
    fresh.refresh()
    assert fresh.offsets == {("t", 0): 12, ("t", 1): 9, ("u", 0): 3}
    assert fresh.schema == schema
    assert [e.schema is not None for e in fresh.entries] == [True, False, False]
    raw = json.loads(fresh.entry_path(2).read_text())
    assert raw["offsets"] == {"t": {"1": 9}, "u": {"0": 3}}


def test_sink_log_overlapping_commit_from_a_stale_writer_is_refused(tmp_path: Path) -> None:
    a, b = CommitLog(tmp_path), CommitLog(tmp_path)
    b.refresh()
    a.commit(entry("c-0-" + "a" * 32, [], {("t", 0): 100}, {("t", 0): 0},
                   schema={"type": "struct", "fields": [{"name": "x"}]}))
    with pytest.raises(CommitConflict, match="already committed"):
        b.commit(entry("c-1-" + "b" * 32, [], {("t", 0): 80}, {("t", 0): 50}, task=1))
    with pytest.raises(CommitConflict, match="schema"):
        b.commit(entry("c-1-" + "b" * 32, [], {("t", 1): 1}, {("t", 1): 0}, task=1,
                       schema={"type": "struct", "fields": []}))
    b.commit(entry("c-1-" + "b" * 32, [], {("t", 0): 120}, {("t", 0): 100}, task=1))
    assert b.offsets[("t", 0)] == 120 and b.sequence == 2


def test_sink_log_roll_forward_moves_staged_files_of_a_committed_entry(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    writer, files = stage(log, "c", 0, {"_date=2024-01-02/part-00000-x.c000.parquet": b"one",
                                        "_date=2024-01-03/part-00001-x.c000.parquet": b"two"})
    committed = log.commit(entry(writer, files, {("t", 0): 2}))
    # Crash here (entry linked, nothing renamed) — after moving one file by hand.
    first = files[0]
    (tmp_path / first.final).parent.mkdir(parents=True)
    (tmp_path / first.staging).rename(tmp_path / first.final)

    report = CommitLog(tmp_path).recover("c", 0)
    assert report.rolled_forward == [committed.sequence] and report.orphans_deleted == []
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("_date=*/*")) == \
        sorted(f.final for f in files)
    assert (tmp_path / files[1].final).read_bytes() == b"two"
    assert not (log.staging_root / writer).exists()
    again = CommitLog(tmp_path).recover("c", 0)  # idempotent
    assert again.rolled_forward == [] and (tmp_path / files[0].final).read_bytes() == b"one"


def test_sink_log_orphaned_staging_of_this_task_only_is_deleted(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    orphan, _ = stage(log, "a", 1, {"part-0.parquet": b"x"})
    other_task, _ = stage(log, "a", 2, {"part-0.parquet": b"x"})
    lookalike, _ = stage(log, "a-1", 2, {"part-0.parquet": b"x"})  # "a-1-2-<uuid>"
    other_connector, _ = stage(log, "b", 1, {"part-0.parquet": b"x"})
    committed, files = stage(log, "a", 1, {"part-1.parquet": b"y"})
    log.commit(entry(committed, files, {("t", 0): 1}, connector="a", task=1))
    torn = log.commits_dir / f".tmp-{log.new_writer('a', 1)}.json"
    torn.write_bytes(b'{"version": 1, "seq')  # a crash while writing an entry's temp file

    report = CommitLog(tmp_path).recover("a", 1)
    assert report.orphans_deleted == [orphan]
    assert report.rolled_forward == [1]
    remaining = sorted(p.name for p in log.staging_root.iterdir())
    assert remaining == sorted([other_task, lookalike, other_connector])
    assert (tmp_path / files[0].final).read_bytes() == b"y"
    assert not torn.exists()
    reread = CommitLog(tmp_path)
    reread.refresh()
    assert reread.sequence == 1  # the torn temp file never counted as an entry


def test_sink_log_staging_of_a_live_writer_of_the_same_task_is_left_alone(tmp_path: Path
                                                                          ) -> None:
    zombie_log = CommitLog(tmp_path)
    writer = zombie_log.new_writer("a", 1)
    with zombie_log.claim(writer):  # a zombie of task a-1, still writing
        (zombie_log.staging_root / writer).mkdir()
        (zombie_log.staging_root / writer / "part-0.parquet").write_bytes(b"x")
        report = CommitLog(tmp_path).recover("a", 1)  # the restarted task a-1
        assert report.orphans_deleted == [] and report.live_writers == [writer]
        assert (zombie_log.staging_root / writer / "part-0.parquet").exists()
    report = CommitLog(tmp_path).recover("a", 1)  # the zombie is gone (without committing)
    assert report.orphans_deleted == [writer] and report.live_writers == []
    assert list(zombie_log.staging_root.iterdir()) == []


def test_sink_log_lock_of_a_writer_dead_before_writing_is_removed(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    stale = log.staging_root / f"{log.new_writer('a', 1)}.lock"
    stale.write_bytes(b"")  # its process died: nobody holds the lock
    report = CommitLog(tmp_path).recover("a", 1)
    assert report.orphans_deleted == [] and report.live_writers == [] and not stale.exists()
    # the same after a commit whose writer died before moving its files
    writer, files = stage(log, "a", 1, {"part-0.parquet": b"x"})
    (log.staging_root / f"{writer}.lock").write_bytes(b"")
    log.commit(entry(writer, files, {("t", 0): 1}, connector="a", task=1))
    report = CommitLog(tmp_path).recover("a", 1)
    assert report.rolled_forward == [1] and report.orphans_deleted == []
    assert list(log.staging_root.iterdir()) == []


def test_sink_log_corrupt_or_truncated_entry_is_reported_clearly(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    log.commit(entry("c-0-" + "a" * 32, [], {("t", 0): 1}))
    good = log.entry_path(1).read_bytes()
    log.entry_path(2).write_bytes(good[: len(good) // 2])  # damaged after the fact
    with pytest.raises(CommitLogError, match=r"corrupt SparkSink commit log entry .*0002\.json"):
        CommitLog(tmp_path).refresh()
    log.entry_path(2).write_text(json.dumps({"version": 1, "sequence": 7}))
    with pytest.raises(CommitLogError, match="does not match the file name"):
        CommitLog(tmp_path).refresh()
    log.entry_path(2).unlink()
    log.entry_path(3).write_bytes(good)
    with pytest.raises(CommitLogError, match="gap: entry 2 is missing"):
        CommitLog(tmp_path).refresh()


def test_sink_log_entry_paths_must_stay_inside_the_table(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    bad = entry("c-0-" + "a" * 32, [DataFile("_streams_staging/x/part-0", "../escape")],
                {("t", 0): 1})
    log.commit(bad)
    with pytest.raises(CommitLogError, match="not relative to the table"):
        CommitLog(tmp_path).refresh()


# -- compaction ------------------------------------------------------------------------------------

def commit_plain(log: CommitLog, offset: int, task: int = 0, schema: dict | None = None) -> None:
    """An entry of one (unstaged) row moving partition ``task`` from ``offset`` to offset + 1."""
    e = CommitEntry(log.new_writer("c", task), "c", task, (), 1, {("t", task): offset + 1},
                    {("t", task): offset}, schema)
    log.commit(e)


def names(log: CommitLog) -> list[str]:
    return sorted(p.name for p in log.commits_dir.iterdir())


def test_sink_log_checkpoints_replace_old_entries(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, compact_every=3)
    for offset in range(8):
        commit_plain(log, offset, schema={"fields": []} if offset == 0 else None)
    # checkpoints at 3 and 6; entries up to 6 - 3 deleted, and the checkpoint of 3
    assert names(log) == sorted([f"{s:020d}.json" for s in (4, 5, 6, 7, 8)]
                                + [f"{6:020d}.checkpoint.json"])
    assert [e.sequence for e in log.entries] == [7, 8]  # memory bounded too
    fresh = CommitLog(tmp_path, compact_every=3)
    fresh.refresh()
    assert (fresh.sequence, fresh.rows, fresh.offsets, fresh.schema) == \
        (8, 8, {("t", 0): 8}, {"fields": []})
    assert [e.sequence for e in fresh.entries] == [7, 8]
    with pytest.raises(CommitConflict):  # a stale writer is still refused after compaction
        commit_plain(fresh, 5)


def test_sink_log_reader_behind_jumps_to_the_checkpoint(tmp_path: Path) -> None:
    writer, reader = CommitLog(tmp_path, compact_every=3), CommitLog(tmp_path, compact_every=3)
    commit_plain(writer, 0)
    assert [e.sequence for e in reader.refresh()] == [1]
    for offset in range(1, 9):  # checkpoint 9 deletes entries up to 6: reader's next is gone
        commit_plain(writer, offset)
    new = reader.refresh()
    assert [e.sequence for e in new] == []  # 2..9 were replaced by checkpoint 9
    assert (reader.sequence, reader.rows, reader.offsets) == (9, 9, {("t", 0): 9})
    commit_plain(writer, 9)
    assert [e.sequence for e in reader.refresh()] == [10]
    assert reader.rows == 10


def test_sink_log_reader_keeping_up_drops_entries_a_checkpoint_replaced(tmp_path: Path) -> None:
    writer, reader = CommitLog(tmp_path, compact_every=3), CommitLog(tmp_path, compact_every=3)
    for offset in range(7):
        commit_plain(writer, offset)
        reader.refresh()
    assert [e.sequence for e in reader.entries] == [7]
    assert reader.rows == 7


def test_sink_log_checkpoint_keeps_entries_still_staged_for_roll_forward(tmp_path: Path) -> None:
    log = CommitLog(tmp_path, compact_every=2)
    writer, files = stage(log, "c", 0, {"part-00000-x.c000.parquet": b"rows"})
    staged = log.commit(entry(writer, files, {("t", 0): 1}))  # crash: never applied
    for offset in range(1, 5):  # checkpoints at 2 and 4 delete entry 1's file
        commit_plain(log, offset)
    assert not log.entry_path(staged.sequence).exists()
    report = CommitLog(tmp_path, compact_every=2).recover("c", 0)
    assert report.rolled_forward == [staged.sequence]
    assert (tmp_path / files[0].final).read_bytes() == b"rows"
    assert not (log.staging_root / writer).exists()
    log.commit(entry(log.new_writer("c", 0), [], {("t", 0): 6}, {("t", 0): 5}))  # 6: checkpoint
    # a checkpoint after the roll-forward no longer carries the entry
    assert CommitLog(tmp_path, compact_every=2).recover("c", 0).rolled_forward == []


def test_sink_log_concurrent_writers_with_checkpoints(tmp_path: Path) -> None:
    threads, per_thread = 4, 30
    run_writers(tmp_path, threads, per_thread, compact_every=7)
    reader = CommitLog(tmp_path, compact_every=7)
    reader.refresh()
    assert (reader.sequence, reader.rows) == (threads * per_thread, threads * per_thread)
    assert reader.offsets == {("t", t): per_thread for t in range(threads)}
    assert len(names(reader)) <= 2 * 7 + 1
