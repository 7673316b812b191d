"""SparkSink in a worker process killed with SIGKILL mid-flush: no row lost, none duplicated."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "connect"))
sys.path.insert(0, str(Path(__file__).parent))

from helpers import free_port, wait_until  # noqa: E402
from test_spark_sink import committed_rows, create_topic  # noqa: E402
from worker_helpers import http, produce  # noqa: E402

from connect.spark.commit_log import CommitLog  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (Spark's JVM and its Python workers), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class SinkWorker:
    """``streams connect standalone worker.properties sink.properties`` in its own process."""

    def __init__(self, tmp_path: Path, args: list[str], url: str) -> None:
        self.tmp_path, self.args, self.url = tmp_path, args, url
        self.log_path = tmp_path / "worker.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SinkWorker:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streams.cli.main", "connect", "standalone", *self.args],
                stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=self.tmp_path)
        return self

    def alive(self) -> bool:
        """True while the worker runs; fails the test if it exited on its own."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited with {self.proc.returncode}: "
                                 f"{self.log_path.read_text(errors='replace')[-4000:]}")
        return True

    def running(self) -> bool:
        self.alive()
        try:
            code, body = http("GET", f"{self.url}/connectors/crash-sink/status", timeout=2)
        except OSError:
            return False
        return code == 200 and [t["state"] for t in body["tasks"]] == ["RUNNING"]

    def kill(self) -> None:
        """SIGKILL the worker; Spark's JVM (and its Python workers) must die with it."""
        assert self.proc is not None
        children = descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        try:
            wait_until(lambda: not any(alive(p) for p in children), 30,
                       message="Spark's processes exit after the worker is killed")
        finally:
            for pid in children:  # never leave a JVM behind, even if the assertion failed
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            children = descendants(self.proc.pid)
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            for pid in children:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


class NewEntryWatch:
    """Wakes up within microseconds of a new commit entry (inotify), to SIGKILL the worker while
    it is still between linking the entry and renaming its files. Polls where inotify is
    unavailable."""

    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, commits: Path) -> None:
        self.commits = commits
        self.fd = -1
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, str(commits).encode(),
                                                  self.IN_CREATE | self.IN_MOVED_TO) >= 0:
                self.fd = fd
            elif fd >= 0:
                os.close(fd)
        except (OSError, AttributeError):
            self.fd = -1

    def wait(self, alive: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        before = entries(self.commits.parent.parent)  # for the polling fallback
        while time.monotonic() < deadline and alive():
            if self.fd >= 0:
                ready, _, _ = select.select([self.fd], [], [], 0.2)
                if ready and re.search(rb"\d{20}\.json", os.read(self.fd, 65536)):
                    return
            else:
                time.sleep(0.005)
                if entries(self.commits.parent.parent) > before:
                    return
        raise AssertionError("no new commit entry appeared")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def staged(path: Path, locks: bool = False) -> set[str]:
    """The staging directories of flushes (and with ``locks``, their writers' lock files)."""
    root = path / "_streams_staging"
    names = set(os.listdir(root)) if root.exists() else set()
    return names if locks else {n for n in names if not n.endswith(".lock")}


def entries(path: Path) -> int:
    commits = path / "_streams_sink" / "commits"
    return sum(1 for n in os.listdir(commits) if n.endswith(".json") and n[0] != ".") \
        if commits.exists() else 0


def test_sigkill_mid_flush_keeps_every_row_exactly_once(spark, broker, tmp_path: Path) -> None:
    before, during = 20_000, 10_000
    total = before + during
    create_topic(broker.bootstrap, "crashes", 3)
    values = [f'{{"n": {i}, "pad": "{"x" * (i % 50)}"}}'.encode() for i in range(total)]
    produce(broker.bootstrap, "crashes", values[:before])

    port = free_port()
    path = tmp_path / "table"
    (tmp_path / "worker.properties").write_text(
        f"bootstrap.servers={broker.bootstrap}\nlisteners=http://127.0.0.1:{port}\n"
        f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n"
        "offset.flush.interval.ms=200\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter.schemas.enable=false\n")
    (tmp_path / "sink.properties").write_text(
        f"name=crash-sink\nconnector.class=SparkSink\ntopics=crashes\npath={path}\n"
        "spark.master=local[2]\nflush.size=4000\nflush.interval.ms=1000\npartition.by=_partition\n")
    args = ["worker.properties", "sink.properties"]
    observed: list[str] = []

    # 1. Kill as soon as the first flush starts writing its staging directory.
    worker = SinkWorker(tmp_path, args, f"http://127.0.0.1:{port}").start()
    try:
        wait_until(lambda: worker.alive() and staged(path), 120, interval=0.01,
                   message="a flush staging its files")
    finally:
        worker.kill()
    observed.append(f"kill 1: staged={len(staged(path))} entries={entries(path)}")

    # 2. Restart while more records arrive; kill right after a new commit entry appears. The
    # window between an entry and its renames is far shorter than a kill's latency, so a file
    # where the directory _partition=2/ belongs makes those renames fail (the task fails): the
    # kill then always finds a committed entry whose files are still staged, as after a crash
    # between the two steps.
    blocker = path / "_partition=2"
    blocker.write_text("not a directory")
    producer = threading.Thread(target=produce,
                                args=(broker.bootstrap, "crashes", values[before:]))
    worker = SinkWorker(tmp_path, args, worker.url).start()

    def unmoved() -> list[int]:
        """Committed entries whose rows for _partition=2 are still staged: they stay so (their
        renames fail). An entry without such rows may be seen between its commit and its
        renames, but is gone by the time the kill lands."""
        log = CommitLog(path)
        log.refresh()
        return [e.sequence for e in log.entries
                if any(f.final.startswith("_partition=2/") and (path / f.staging).exists()
                       for f in e.files)]

    try:
        wait_until(worker.running, 120, message="worker 2 running")
        watch = NewEntryWatch(path / "_streams_sink" / "commits")
        try:
            producer.start()
            while True:
                watch.wait(worker.alive, 120)
                if unmoved():
                    break
        finally:
            watch.close()
    finally:
        worker.kill()
        if producer.ident is not None:  # started
            producer.join(60)
    blocker.unlink()
    stuck = unmoved()
    observed.append(f"kill 2: entries={entries(path)} entries-with-staged-files={stuck} "
                    f"staging-dirs={len(staged(path))}")
    assert stuck, "the kill should leave a committed entry with staged files"

    # 3. Restart and let it finish: recovery, then everything exactly once.
    worker = SinkWorker(tmp_path, args, worker.url).start()
    try:
        wait_until(lambda: worker.alive() and committed_rows(path) >= total, 150, interval=0.2,
                   message=f"{total} committed rows")
    finally:
        worker.stop()
    assert worker.proc is not None and worker.proc.returncode == 0
    text = worker.log_path.read_text(errors="replace")
    rolled = len(re.findall(r"rolled forward commit \d", text))
    observed.append(f"recovery: rolled-forward={rolled} "
                    f"orphans-deleted={text.count('deleted staging directory')}")
    print("\n".join(observed))

    rows = spark.read.parquet(str(path)).select("n", "_partition", "_offset").collect()
    assert len(rows) == total
    assert sorted(r["n"] for r in rows) == list(range(total))
    per_partition: dict[int, list[int]] = {}
    for r in rows:
        per_partition.setdefault(r["_partition"], []).append(r["_offset"])
    assert sum(len(o) for o in per_partition.values()) == total
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # each (partition, offset) once
    assert staged(path, locks=True) == set()  # no orphan left behind after a clean stop
    assert "deleted staging directory" in text  # the first kill left an orphan to clean up
    assert f"rolled forward commit {stuck[0]} " in text  # the second left an entry to finish
