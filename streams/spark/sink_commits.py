"""The exactly-once sink's decisions: which transactions make up micro-batch N, in the checkpoint.

One small JSON file per committed micro-batch, ``<checkpointLocation>/streams-sink/<N>.json``:
``{"batch": N, "transactions": {"<spark partition>": [transactional id, producer id, epoch]}}``.
It is written by the driver *before* it commits those transactions (the commit point of the
batch) and read by the tasks of a replayed batch N to recognise it (see
:mod:`streams.spark.sink`). pyarrow's filesystems reach it from the driver and from executors:
local paths and ``file:`` URIs, and ``s3://``, ``gs://``, ``hdfs://`` where pyarrow supports them.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from pyarrow import fs as pafs

from streams.spark.kafka_write import Transaction

DIRECTORY = "streams-sink"
# Spark only ever replays the last micro-batch; a few more are kept for people to look at.
KEEP = 10


class SinkCommitLog:
    """Decision files of one streaming query, under its checkpoint location."""

    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint
        self._filesystem: pafs.FileSystem | None = None
        self._root = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"checkpoint": self.checkpoint}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["checkpoint"])  # type: ignore[misc]

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        if self._filesystem is None:
            location = self.checkpoint
            if location.startswith("file:") and not location.startswith("file://"):
                location = location[len("file:"):]
            if "://" not in location:
                location = os.path.abspath(location)
            self._filesystem, path = pafs.FileSystem.from_uri(location)
            self._root = f"{path.rstrip('/')}/{DIRECTORY}"
        return self._filesystem, self._root

    def _path(self, batch_id: int) -> str:
        return f"{self._fs()[1]}/{batch_id}.json"

    def read(self, batch_id: int) -> dict[int, Transaction] | None:
        """The transactions decided for ``batch_id``, or None if it was never decided."""
        filesystem, _root = self._fs()
        try:
            with filesystem.open_input_stream(self._path(batch_id)) as stream:
                decision = json.loads(stream.read())
        except FileNotFoundError:
            return None
        return {int(part): (str(t[0]), int(t[1]), int(t[2]))
                for part, t in decision["transactions"].items()}

    def write(self, batch_id: int, transactions: dict[int, Transaction]) -> None:
        """Record the decision; on a local filesystem atomically (write aside, then rename)."""
        filesystem, root = self._fs()
        filesystem.create_dir(root, recursive=True)
        body = json.dumps({"batch": batch_id, "transactions": {
            str(part): list(txn) for part, txn in sorted(transactions.items())}}).encode()
        target = self._path(batch_id)
        if filesystem.type_name != "local":  # object stores: a single PUT appears atomically
            with filesystem.open_output_stream(target) as stream:
                stream.write(body)
            return
        aside = f"{root}/.{batch_id}.{uuid.uuid4().hex}.tmp"
        with open(aside, "wb") as out:  # plain file I/O for the fsync pyarrow does not offer
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(aside, target)

    def prune(self, batch_id: int) -> None:
        """Forget decisions older than the last :data:`KEEP` batches."""
        filesystem, root = self._fs()
        selector = pafs.FileSelector(root, allow_not_found=True)
        for info in filesystem.get_file_info(selector):
            name = info.base_name
            if name.endswith(".json") and name[:-5].isdigit() and \
                    int(name[:-5]) <= batch_id - KEEP:
                filesystem.delete_file(info.path)
