"""Producer id allocation.

Ids are handed out from blocks whose upper bound is persisted before use, so a restarted broker
never reuses an id. Sequence and transaction state live with each partition's log
(storage/producer_state.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PRODUCER_ID_BLOCK = 1000
_STATE_FILE = "producer-ids.json"


class ProducerIdAllocator:
    def __init__(self) -> None:
        self._next_id = 0
        self._reserved_until = 0
        self._state_path: Path | None = None

    def load(self, data_dir: Path) -> None:
        self._state_path = Path(data_dir) / _STATE_FILE
        if self._state_path.exists():
            try:
                self._reserved_until = int(json.loads(self._state_path.read_text())["next"])
            except (ValueError, KeyError, OSError):
                raise RuntimeError(f"cannot read producer id state {self._state_path}") from None
        self._next_id = self._reserved_until

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
