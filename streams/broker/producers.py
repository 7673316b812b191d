"""Idempotent-producer state: producer ids, epochs and per-partition sequence windows.

Kafka keeps, per (producer id, partition), the epoch and the metadata of the last five batches,
so a retried batch is answered with its original offset instead of being written twice.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .records import BatchHeader

if TYPE_CHECKING:
    from .topics import TopicManager

NUM_BATCHES_TO_RETAIN = 5
PRODUCER_ID_BLOCK = 1000
_STATE_FILE = "producer-ids.json"

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


class ProducerError(Exception):
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
class PartitionProducerState:
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class ProducerStateManager:
    def __init__(self) -> None:
        self._state: dict[tuple[int, str, int], PartitionProducerState] = {}
        self._next_id = 0
        self._reserved_until = 0
        self._state_path: Path | None = None

    # -- producer ids -------------------------------------------------------------------------

    def rebuild(self, topics: TopicManager) -> None:
        """Load the producer-id allocation, then replay sequence state from the active segments."""
        self._state_path = Path(topics.data_dir) / _STATE_FILE
        if self._state_path.exists():
            try:
                self._reserved_until = int(json.loads(self._state_path.read_text())["next"])
            except (ValueError, KeyError, OSError):
                self._reserved_until = 0
        self._next_id = self._reserved_until
        for topic in topics.topics.values():
            for index, partition in enumerate(topic.partitions):
                for header in partition.iter_active_headers():
                    if header.producer_id >= 0 and not header.is_control:
                        self._remember(topic.name, index, header, header.base_offset)
                        self._next_id = max(self._next_id, header.producer_id + 1)

    def new_producer_id(self) -> int:
        if self._next_id >= self._reserved_until:
            self._reserved_until = self._next_id + PRODUCER_ID_BLOCK
            self._persist()
        pid = self._next_id
        self._next_id += 1
        return pid

    def _persist(self) -> None:
        if self._state_path is None:
            return
        tmp = self._state_path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"next": self._reserved_until}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._state_path)

    # -- sequence checks ----------------------------------------------------------------------

    def check(self, topic: str, partition: int, header: BatchHeader) -> BatchMetadata | None:
        """Validate a batch's sequence; return the original batch if it is a duplicate."""
        if header.producer_id < 0:
            return None
        state = self._state.get((header.producer_id, topic, partition))
        if state is None:
            return None  # no state (new or expired producer): any sequence is accepted
        if header.producer_epoch < state.epoch:
            raise ProducerError(
                INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than "
                f"the current epoch {state.epoch}",
            )
        if header.producer_epoch > state.epoch:
            if header.base_sequence != 0:
                raise ProducerError(
                    OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new epoch must start at sequence 0, got {header.base_sequence}",
                )
            return None
        for batch in state.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        expected = (state.last_seq + 1) % (2**31)
        if header.base_sequence != expected:
            raise ProducerError(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence {header.base_sequence} for producer "
                f"{header.producer_id} on {topic}-{partition}; expected {expected}",
            )
        return None

    def record(self, topic: str, partition: int, header: BatchHeader, base_offset: int) -> None:
        if header.producer_id >= 0:
            self._remember(topic, partition, header, base_offset)

    def _remember(self, topic: str, partition: int, header: BatchHeader, base_offset: int) -> None:
        key = (header.producer_id, topic, partition)
        state = self._state.get(key)
        if state is None or header.producer_epoch > state.epoch:
            state = PartitionProducerState(header.producer_epoch)
            self._state[key] = state
        state.batches.append(
            BatchMetadata(
                header.base_sequence, header.last_sequence, base_offset, header.max_timestamp
            )
        )

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._state if k[1] == topic]:
            del self._state[key]

