"""Per-partition producer state: idempotence windows, open transactions, aborted transactions.

This is what the log needs to answer three questions fast: is this batch a retry (answer with the
original offset), where is the last stable offset (first offset of the earliest open
transaction), and which aborted transactions overlap a read_committed fetch.

State survives restarts two ways: a JSON snapshot written when a segment rolls (so only the
active segment is rescanned at start) and an append-only file of aborted transactions.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..records import CONTROL_COMMIT, HEADER_SIZE, BatchHeader, read_varint

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
ABORTED_FILE = "aborted-txns"

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48


class ProducerError(Exception):
    """A batch rejected for producer-state reasons; carries the Kafka error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    txn_first_offset: int = -1  # first offset of this producer's open transaction here

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(slots=True, frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker


def control_type(batch: bytes) -> int:
    """COMMIT (1) or ABORT (0) from a control batch's single record key (version i16, type i16)."""
    # Record layout after the 61-byte header: length varint, attributes i8, ts delta varint,
    # offset delta varint, key length varint, key. Control batches are never compressed.
    pos = HEADER_SIZE
    _length, pos = read_varint(batch, pos)
    pos += 1
    _ts, pos = read_varint(batch, pos)
    _off, pos = read_varint(batch, pos)
    key_len, pos = read_varint(batch, pos)
    if key_len < 4:
        raise ValueError("control record key too short")
    _version, kind = struct.unpack_from(">hh", batch, pos)
    return kind


class PartitionProducerState:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.aborted: list[AbortedTxn] = []
        self._aborted_keys: set[tuple[int, int]] = set()

    # -- checks (before append) ---------------------------------------------------------------

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a batch's producer epoch and sequence; return the original if a duplicate."""
        if header.producer_id < 0:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None  # unknown or expired producer: any sequence is accepted
        if header.producer_epoch < entry.epoch:
            raise ProducerError(
                INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than "
                f"the current epoch {entry.epoch}",
            )
        if not header.is_transactional and entry.txn_first_offset >= 0:
            raise ProducerError(
                INVALID_TXN_STATE,
                f"producer {header.producer_id} sent a non-transactional batch while its "
                "transaction is open",
            )
        if header.base_sequence < 0:
            return None
        if header.producer_epoch > entry.epoch or not entry.batches:
            if header.producer_epoch > entry.epoch and header.base_sequence != 0:
                raise ProducerError(
                    OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new epoch must start at sequence 0, got {header.base_sequence}",
                )
            return None
        for batch in entry.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        expected = (entry.last_seq + 1) % (2**31)
        if header.base_sequence != expected:
            raise ProducerError(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence {header.base_sequence} for producer "
                f"{header.producer_id}; expected {expected}",
            )
        return None

    # -- updates (after append, or while replaying the log) -----------------------------------

    def on_batch(self, header: BatchHeader, control_kind: int | None = None) -> AbortedTxn | None:
        """Record an appended batch (offsets final). Returns the aborted txn an ABORT closes."""
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            previous_txn = entry.txn_first_offset if entry else -1
            entry = ProducerEntry(header.producer_epoch, txn_first_offset=previous_txn)
            self.producers[pid] = entry
        if header.is_control:
            first = entry.txn_first_offset
            entry.txn_first_offset = -1
            if control_kind != CONTROL_COMMIT and first >= 0:
                return self._add_aborted(AbortedTxn(pid, first, header.base_offset))
            return None
        if header.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence, header.last_sequence, header.base_offset,
                    header.max_timestamp,
                )
            )
        if header.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = header.base_offset
        return None

    def _add_aborted(self, txn: AbortedTxn) -> AbortedTxn | None:
        key = (txn.producer_id, txn.last_offset)
        if key in self._aborted_keys:
            return None
        self._aborted_keys.add(key)
        self.aborted.append(txn)
        with open(self.directory / ABORTED_FILE, "a") as f:
            f.write(f"{txn.producer_id} {txn.first_offset} {txn.last_offset}\n")
        return txn

    # -- queries ------------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        offsets = [e.txn_first_offset for e in self.producers.values() if e.txn_first_offset >= 0]
        return min(offsets) if offsets else None

    def open_transaction(self, producer_id: int) -> int:
        entry = self.producers.get(producer_id)
        return entry.txn_first_offset if entry else -1

    def aborted_overlapping(self, start: int, end: int) -> list[dict[str, int]]:
        """Aborted transactions with data in [start, end): what read_committed consumers drop."""
        out = []
        lasts = [t.last_offset for t in self.aborted]
        for txn in self.aborted[bisect.bisect_left(lasts, start) :]:
            if txn.first_offset < end:
                out.append({"producer_id": txn.producer_id, "first_offset": txn.first_offset})
        return out

    def truncate_before(self, log_start: int) -> None:
        """Forget aborted transactions that retention or DeleteRecords removed entirely."""
        kept = [t for t in self.aborted if t.last_offset >= log_start]
        if len(kept) != len(self.aborted):
            self.aborted = kept
            self._aborted_keys = {(t.producer_id, t.last_offset) for t in kept}
            self._rewrite_aborted_file()

    # -- persistence --------------------------------------------------------------------------

    def snapshot_path(self, base_offset: int) -> Path:
        return self.directory / f"{base_offset:020d}.snapshot"

    def write_snapshot(self, base_offset: int) -> None:
        """Snapshot producer state as of ``base_offset`` (a new segment's base)."""
        state = {
            str(pid): {
                "epoch": e.epoch,
                "txn_first_offset": e.txn_first_offset,
                "batches": [[b.first_seq, b.last_seq, b.base_offset, b.timestamp]
                            for b in e.batches],
            }
            for pid, e in self.producers.items()
        }
        path = self.snapshot_path(base_offset)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        for old in self.directory.glob("*.snapshot"):
            if old != path and old.stem.isdigit() and int(old.stem) < base_offset:
                old.unlink(missing_ok=True)

    def load(self, active_base: int) -> None:
        """Load the aborted list and the snapshot taken when the active segment started."""
        self.producers = {}
        aborted_file = self.directory / ABORTED_FILE
        if aborted_file.exists():
            for line in aborted_file.read_text().splitlines():
                parts = line.split()
                if len(parts) == 3 and all(p.lstrip("-").isdigit() for p in parts):
                    self._aborted_keys.add((int(parts[0]), int(parts[2])))
                    self.aborted.append(AbortedTxn(int(parts[0]), int(parts[1]), int(parts[2])))
            self.aborted.sort(key=lambda t: t.last_offset)
        path = self.snapshot_path(active_base)
        if not path.exists():
            return
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable producer snapshot (%s); starting empty", path, exc)
            return
        for pid, raw in state.items():
            entry = ProducerEntry(raw["epoch"], txn_first_offset=raw["txn_first_offset"])
            for b in raw["batches"]:
                entry.batches.append(BatchMetadata(*b))
            self.producers[int(pid)] = entry

    def _rewrite_aborted_file(self) -> None:
        path = self.directory / ABORTED_FILE
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            for t in self.aborted:
                f.write(f"{t.producer_id} {t.first_offset} {t.last_offset}\n")
        os.replace(tmp, path)
