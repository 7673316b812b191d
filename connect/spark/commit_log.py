"""The SparkSink commit protocol: staged files, an atomic commit log, roll-forward (no Spark here).

Layout under the table directory ``<path>``::

    _streams_staging/<connector>-<task>-<uuid>/...   one directory per flush (Spark writes here)
    _streams_sink/commits/00000000000000000001.json  the commit log, one entry per flush
    col=value/part-...parquet                        committed data files (what readers see)

Spark skips ``_``-prefixed names (but not ``_date=...`` partition directories) when it lists a
table, so staged files and the log are invisible to ``spark.read.parquet(path)``.

**Why a flush is exactly-once.** A flush (1) writes its rows into a fresh staging directory and
fsyncs them, (2) publishes a commit entry — listing the files, their final names and, per
topic-partition, the next offset the flush covers — by writing a temp file, fsyncing it and
``os.link``-ing it to the next sequence number (``link`` fails if that name exists, so concurrent
writers never overwrite each other; an entry is visible only once complete, so a torn temp file
never counts), then (3) renames the files into the table. The entry is the commit point:

* crash before the entry exists: the staging directory is an orphan. The task deletes it at its
  next start; the log does not cover those offsets, so the task rewinds the consumer to the last
  committed offset and the rows are written again, once;
* crash after the entry, during the renames: the next start *rolls forward* every entry whose
  files are still in staging (rename is atomic, so repeating it is idempotent);
* crash after the renames, before Kafka's group offset is committed: the log, not the group, is
  the source of truth. ``open`` rewinds each partition to the log's next offset and ``put`` drops
  anything below it.

Offsets for a partition only grow in the log (max per partition), and a writer whose rows overlap
an offset range committed concurrently by another writer (a zombie task) gets
:class:`CommitConflict` instead of committing duplicates. A writer holds an exclusive ``flock``
on ``_streams_staging/<writer>.lock`` from before Spark writes until its files are in place
(:meth:`CommitLog.claim`): a restarted task deletes only staging directories whose lock it can
take, never those of a zombie of the same task still writing (on one machine or a filesystem
with working ``flock``).

**Compaction.** A sink that runs for months commits an entry every few seconds, and every task
start reads the log. So whoever commits entry S with S a multiple of ``compact_every`` (100) also
writes ``<S>.checkpoint.json``: the state after S (offsets, schema, rows so far) and, in full,
every entry up to S whose files were still staged then (so a roll-forward still finds them). It
then deletes the entries up to S - ``compact_every`` and older checkpoints. A log loads from its
latest checkpoint; a reader that finds its next entry gone jumps to the latest checkpoint.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("connect.spark.commit_log")

STAGING_DIR = "_streams_staging"
SINK_DIR = "_streams_sink"
COMMITS_DIR = "commits"
FORMAT_VERSION = 1
_ENTRY_NAME = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_NAME = re.compile(r"^(\d{20})\.checkpoint\.json$")
COMPACT_EVERY = 100
_UUID_HEX = "[0-9a-f]{32}"

TP = tuple[str, int]


class CommitLogError(Exception):
    """The commit log cannot be read or trusted (e.g. a corrupt entry)."""


class CommitConflict(CommitLogError):
    """Another writer committed an overlapping offset range or a different table schema first."""


def writer_prefix(connector: str, task: int) -> str:
    """The staging-directory prefix of one task (connector names are made path-safe)."""
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', connector)}-{int(task)}-"


@dataclass(frozen=True)
class DataFile:
    """A data file of a flush: where it was staged and its final place (both relative)."""

    staging: str
    final: str


@dataclass(frozen=True)
class CommitEntry:
    """One committed flush. ``offsets``/``start_offsets``: ``{(topic, partition): offset}``."""

    writer: str
    connector: str
    task: int
    files: tuple[DataFile, ...]
    rows: int
    offsets: dict[TP, int]
    start_offsets: dict[TP, int] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    partition_by: tuple[str, ...] = ()
    sequence: int = 0
    widen: bool = False  # a schema-only entry adding columns to the table (see widens)

    @property
    def staging_dir(self) -> str:
        return f"{STAGING_DIR}/{self.writer}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": FORMAT_VERSION, "sequence": self.sequence, "writer": self.writer,
            "connector": self.connector, "task": self.task, "rows": self.rows,
            "files": [{"staging": f.staging, "final": f.final} for f in self.files],
            "offsets": _nest(self.offsets), "start_offsets": _nest(self.start_offsets),
            "created_ms": int(time.time() * 1000),
        }
        if self.schema is not None:
            out["schema"] = self.schema
            out["partition_by"] = list(self.partition_by)
        if self.widen:
            out["widen"] = True
        return out

    @classmethod
    def from_json(cls, data: Any, sequence: int) -> CommitEntry:
        _check_header(data, sequence)
        files = tuple(DataFile(_relative(f["staging"]), _relative(f["final"]))
                      for f in data["files"])
        schema = _schema(data)
        return cls(str(data["writer"]), str(data["connector"]), int(data["task"]), files,
                   int(data["rows"]), _flat(data["offsets"]), _flat(data.get("start_offsets", {})),
                   schema, tuple(data.get("partition_by", ())), sequence,
                   bool(data.get("widen", False)))


def widens(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether table schema ``new`` (a Spark StructType as JSON) is ``old`` plus columns: every
    column of ``old`` with the same type, and at least one more. A table widens this way when
    its records' registry schema evolves compatibly (new fields); files written before simply
    lack the new columns (null when read with ``mergeSchema`` or through the metastore)."""
    old_fields = {f["name"]: f["type"] for f in old.get("fields", [])}
    new_fields = {f["name"]: f["type"] for f in new.get("fields", [])}
    return len(new_fields) > len(old_fields) and all(
        new_fields.get(name) == t for name, t in old_fields.items())


def _check_header(data: Any, sequence: int) -> None:
    """What every log file starts with: an object of our format, numbered as its name."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown format version {data.get('version')!r}")
    if data.get("sequence") != sequence:
        raise ValueError(f"sequence {data.get('sequence')!r} does not match the file name")


def _schema(data: dict[str, Any]) -> dict[str, Any] | None:
    schema = data.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise ValueError("schema is not an object")
    return schema


def _nest(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def _flat(nested: Any) -> dict[TP, int]:
    if not isinstance(nested, dict):
        raise ValueError("offsets are not an object")
    return {(str(topic), int(p)): int(o) for topic, parts in nested.items()
            for p, o in parts.items()}


def _relative(path: Any) -> str:
    text = str(path)
    if not text or text.startswith("/") or ".." in Path(text).parts:
        raise ValueError(f"file path {text!r} is not relative to the table")
    return text


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(files: Iterable[Path]) -> None:
    """Make data files and the directories naming them durable before an entry refers to them."""
    dirs: set[Path] = set()
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        dirs.add(path.parent)
    for directory in dirs:
        _fsync_dir(directory)


def _corrupt(path: Path, kind: str, size: int, exc: Exception) -> CommitLogError:
    return CommitLogError(
        f"corrupt SparkSink commit log {kind} {path} ({size} bytes): {exc}. It was written to a "
        "temp file, fsynced and then linked, so a torn write never shows: this file was damaged "
        "afterwards. Check the data files it lists, then repair or remove it by hand; the sink "
        "will not guess.")


@dataclass
class Checkpoint:
    """The log's state after entry ``sequence``; ``pending``: entries up to it whose files were
    still staged when it was written."""

    sequence: int
    offsets: dict[TP, int]
    schema: dict[str, Any] | None
    partition_by: tuple[str, ...]
    rows: int
    pending: list[CommitEntry]

    def to_json(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "sequence": self.sequence,
                "offsets": _nest(self.offsets), "schema": self.schema,
                "partition_by": list(self.partition_by), "rows": self.rows,
                "pending": [e.to_json() for e in self.pending]}

    @classmethod
    def from_json(cls, data: Any, sequence: int) -> Checkpoint:
        _check_header(data, sequence)
        schema = _schema(data)
        return cls(sequence, _flat(data["offsets"]), schema, tuple(data["partition_by"]),
                   int(data["rows"]),
                   [CommitEntry.from_json(e, int(e["sequence"])) for e in data["pending"]])


@dataclass
class RecoveryReport:
    rolled_forward: list[int] = field(default_factory=list)
    orphans_deleted: list[str] = field(default_factory=list)
    live_writers: list[str] = field(default_factory=list)


class CommitLog:
    """The commit log of one table directory; safe to share between tasks and processes.

    Entries are read incrementally (:meth:`refresh`); ``offsets`` is the max committed next offset
    per topic-partition over all entries, ``schema`` the table schema of the first entry that
    has one or of the latest that widened it, ``rows`` the rows of all entries, ``sequence`` the
    last entry's number. ``entries``
    holds the entries read since the last checkpoint, and those before it whose files were still
    staged when it was written.
    """

    def __init__(self, table_dir: str | os.PathLike[str],
                 compact_every: int = COMPACT_EVERY) -> None:
        self.table_dir = Path(table_dir)
        self.staging_root = self.table_dir / STAGING_DIR
        self.commits_dir = self.table_dir / SINK_DIR / COMMITS_DIR
        self.commits_dir.mkdir(parents=True, exist_ok=True)
        self.staging_root.mkdir(parents=True, exist_ok=True)
        self.compact_every = compact_every
        self.entries: list[CommitEntry] = []
        self.offsets: dict[TP, int] = {}
        self.schema: dict[str, Any] | None = None
        self.partition_by: tuple[str, ...] = ()
        self.rows = 0
        self.sequence = 0
        self._loaded = False

    # -- reading -------------------------------------------------------------------------------
    def entry_path(self, sequence: int) -> Path:
        return self.commits_dir / f"{sequence:020d}.json"

    def checkpoint_path(self, sequence: int) -> Path:
        return self.commits_dir / f"{sequence:020d}.checkpoint.json"

    @staticmethod
    def _read_file(path: Path, kind: str) -> Any:
        """The JSON in ``path`` (None if there is no such file)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise _corrupt(path, kind, len(raw), exc) from None

    def _read(self, sequence: int) -> CommitEntry | None:
        path = self.entry_path(sequence)
        data = self._read_file(path, "entry")
        try:
            return None if data is None else CommitEntry.from_json(data, sequence)
        except (ValueError, KeyError, TypeError) as exc:
            raise _corrupt(path, "entry", path.stat().st_size, exc) from None

    def _read_checkpoint(self, sequence: int) -> Checkpoint | None:
        path = self.checkpoint_path(sequence)
        data = self._read_file(path, "checkpoint")
        try:
            return None if data is None else Checkpoint.from_json(data, sequence)
        except (ValueError, KeyError, TypeError) as exc:
            raise _corrupt(path, "checkpoint", path.stat().st_size, exc) from None

    def _publish(self, data: dict[str, Any], tmp: Path, target: Path) -> bool:
        """Write ``data`` to ``tmp``, fsync it and link it to ``target``: all of it appears at
        once or nothing does. False if ``target`` exists already."""
        with open(tmp, "wb") as handle:
            handle.write(json.dumps(data, separators=(",", ":")).encode())
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(self.commits_dir)
        return True

    def _add(self, entry: CommitEntry) -> None:
        self.entries.append(entry)
        for tp, offset in entry.offsets.items():
            if offset > self.offsets.get(tp, -1):
                self.offsets[tp] = offset
        if entry.schema is not None and (self.schema is None or entry.widen
                                         and widens(self.schema, entry.schema)):
            if self.schema is None:
                self.partition_by = entry.partition_by
            self.schema = entry.schema
        self.rows += entry.rows
        self.sequence = entry.sequence

    def _adopt(self, checkpoint: Checkpoint) -> None:
        """Take the state of ``checkpoint`` (at or after every entry read so far)."""
        for tp, offset in checkpoint.offsets.items():
            if offset > self.offsets.get(tp, -1):
                self.offsets[tp] = offset
        if checkpoint.schema is not None and (self.schema is None or widens(
                self.schema, checkpoint.schema)):
            if self.schema is None:
                self.partition_by = checkpoint.partition_by
            self.schema = checkpoint.schema
        self.rows = checkpoint.rows
        self.sequence = checkpoint.sequence
        self.entries = list(checkpoint.pending)

    def _listing(self) -> tuple[list[int], list[int]]:
        """Sequence numbers of the entries and of the checkpoints in the directory, sorted."""
        entries, checkpoints = [], []
        for name in os.listdir(self.commits_dir):
            if m := _ENTRY_NAME.match(name):
                entries.append(int(m.group(1)))
            elif m := _CHECKPOINT_NAME.match(name):
                checkpoints.append(int(m.group(1)))
        return sorted(entries), sorted(checkpoints)

    def _latest_checkpoint(self, after: int) -> Checkpoint | None:
        """The newest checkpoint past entry ``after``, if any (it may be replaced by a newer one
        while we look: then look again)."""
        for _attempt in range(5):
            _, checkpoints = self._listing()
            if not checkpoints or checkpoints[-1] <= after:
                return None
            checkpoint = self._read_checkpoint(checkpoints[-1])
            if checkpoint is not None:
                return checkpoint
        raise CommitLogError(f"SparkSink commit log {self.commits_dir}: checkpoints keep "
                             "vanishing while read")

    def _load(self) -> None:
        checkpoint = self._latest_checkpoint(0)
        if checkpoint is not None:
            self._adopt(checkpoint)
        sequences, _ = self._listing()
        expected = self.sequence + 1
        for sequence in sequences:
            if sequence <= self.sequence:
                continue  # replaced by the checkpoint (deleted soon)
            if sequence != expected:
                raise CommitLogError(f"SparkSink commit log {self.commits_dir} has a gap: "
                                     f"entry {expected} is missing before {sequence}")
            expected += 1
        self._loaded = True

    def refresh(self) -> list[CommitEntry]:
        """Read entries committed since the last call (by anyone); returns the new ones (not
        those a checkpoint replaced before this reader got to them: ``rows`` counts those)."""
        new: list[CommitEntry] = []
        if not self._loaded:
            self._load()
        while True:
            entry = self._read(self.sequence + 1)
            if entry is not None:
                self._add(entry)
                new.append(entry)
                if entry.sequence % self.compact_every == 0:
                    # Its writer checkpoints it next: keep only what that keeps.
                    checkpoint = self._read_checkpoint(entry.sequence)
                    if checkpoint is not None:
                        self.entries = list(checkpoint.pending)
                continue
            checkpoint = self._latest_checkpoint(self.sequence)
            if checkpoint is None:
                return new
            self._adopt(checkpoint)  # our next entry was compacted away

    # -- writing -------------------------------------------------------------------------------
    def new_writer(self, connector: str, task: int) -> str:
        """A fresh staging directory name for one flush of ``connector`` task ``task``."""
        return writer_prefix(connector, task) + uuid.uuid4().hex

    @contextlib.contextmanager
    def claim(self, writer: str) -> Iterator[None]:
        """Hold ``writer``'s staging lock: :meth:`recover` leaves its staging directory alone
        meanwhile. Enter before Spark writes, leave once the files are in place."""
        lock_path = self.staging_root / f"{writer}.lock"
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
            os.close(fd)

    def _claimed(self, writer: str) -> bool:
        """Whether a live writer holds ``writer``'s staging lock (its process has not exited)."""
        try:
            fd = os.open(self.staging_root / f"{writer}.lock", os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # also releases a lock we took
        return False

    def commit(self, entry: CommitEntry) -> CommitEntry:
        """Publish ``entry`` atomically at the next free sequence number; returns it numbered.

        The entry keeps its schema only if it is the first with one or a widening (``widen``,
        see :func:`widens`). Raises :class:`CommitConflict` if a concurrent writer already
        committed one of its partitions past the entry's start offset, or fixed a different
        schema (rows written with a schema the table's widened are fine).
        """
        tmp = self.commits_dir / f".tmp-{entry.writer}.json"
        while True:
            self.refresh()
            self._check_conflicts(entry)
            sequence = self.sequence + 1
            numbered = CommitEntry(
                entry.writer, entry.connector, entry.task, entry.files, entry.rows,
                dict(entry.offsets), dict(entry.start_offsets),
                entry.schema if self.schema is None or entry.widen else None,
                entry.partition_by, sequence, entry.widen)
            if not self._publish(numbered.to_json(), tmp, self.entry_path(sequence)):
                continue  # someone took this number: read their entry, check again, retry
            self._add(numbered)
            if sequence % self.compact_every == 0:
                self._checkpoint(entry.writer)
            return numbered

    def _checkpoint(self, writer: str) -> None:
        """Write the checkpoint of the entry just committed, then delete what it replaces."""
        pending = [e for e in self.entries if (self.table_dir / e.staging_dir).exists()]
        checkpoint = Checkpoint(self.sequence, dict(self.offsets), self.schema,
                                self.partition_by, self.rows, pending)
        self._publish(checkpoint.to_json(), self.commits_dir / f".tmp-{writer}.checkpoint.json",
                      self.checkpoint_path(self.sequence))
        self.entries = pending
        # Entries up to one checkpoint interval back stay, so that a reader a little behind
        # reads on without a jump.
        entries, checkpoints = self._listing()
        for sequence in entries:
            if sequence <= self.sequence - self.compact_every:
                with contextlib.suppress(FileNotFoundError):
                    self.entry_path(sequence).unlink()
        for sequence in checkpoints:
            if sequence < self.sequence:
                with contextlib.suppress(FileNotFoundError):
                    self.checkpoint_path(sequence).unlink()

    def _check_conflicts(self, entry: CommitEntry) -> None:
        overlap = {tp: self.offsets[tp] for tp, start in entry.start_offsets.items()
                   if self.offsets.get(tp, -1) > start}
        if overlap:
            raise CommitConflict(f"offsets already committed by another writer: {overlap}")
        if entry.schema is None or self.schema is None or entry.schema == self.schema:
            return
        if entry.widen and widens(self.schema, entry.schema):
            return
        if entry.rows and widens(entry.schema, self.schema):
            return  # rows written before this writer saw the table widen: still readable
        raise CommitConflict("another writer fixed a different table schema first")

    # -- applying and recovery -----------------------------------------------------------------
    def apply(self, entry: CommitEntry) -> bool:
        """Move ``entry``'s staged files to their final place (idempotent); True if it moved any."""
        moved = False
        parents: set[Path] = set()
        for data_file in entry.files:
            source = self.table_dir / data_file.staging
            target = self.table_dir / data_file.final
            if not source.exists():
                if not target.exists():
                    log.error("commit %d: data file %s is neither staged nor in place",
                              entry.sequence, data_file.final)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(source, target)
                moved = True
                parents.add(target.parent)
            except FileNotFoundError:
                if not target.exists():  # not a concurrent roll-forward that won the race
                    raise
        for directory in parents:
            _fsync_dir(directory)
        shutil.rmtree(self.table_dir / entry.staging_dir, ignore_errors=True)
        return moved

    def recover(self, connector: str, task: int) -> RecoveryReport:
        """At task start: roll forward entries still in staging, delete this task's orphans."""
        self.refresh()
        report = RecoveryReport()
        referenced = set()
        for entry in self.entries:
            referenced.add(entry.writer)
            if (self.table_dir / entry.staging_dir).exists() and self.apply(entry):
                report.rolled_forward.append(entry.sequence)
                log.warning("rolled forward commit %d of %s (files were still staged)",
                            entry.sequence, entry.writer)
        mine = re.compile(re.escape(writer_prefix(connector, task)) + _UUID_HEX + "$")
        names = set(os.listdir(self.staging_root))
        writers = {n.removesuffix(".lock") for n in names}
        for writer in sorted(w for w in writers if mine.match(w)):
            if self._claimed(writer):
                if writer not in referenced:
                    log.warning("staging directory %s belongs to a writer still running (a "
                                "zombie of this task?): left alone", writer)
                    report.live_writers.append(writer)
                continue
            if writer in names and writer not in referenced:
                shutil.rmtree(self.staging_root / writer, ignore_errors=True)
                report.orphans_deleted.append(writer)
                log.warning("deleted staging directory %s of an uncommitted flush", writer)
            with contextlib.suppress(FileNotFoundError):  # the lock of a writer that died
                (self.staging_root / f"{writer}.lock").unlink()
        for name in os.listdir(self.commits_dir):
            stem = name[5:].removesuffix(".json").removesuffix(".checkpoint")
            if name.startswith(".tmp-") and mine.match(stem):
                with contextlib.suppress(FileNotFoundError):
                    (self.commits_dir / name).unlink()
        return report
