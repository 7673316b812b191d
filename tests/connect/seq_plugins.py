"""A source connector writing records 0..N-1 to explicit partitions (n % partitions), for
tests/connect/test_source_hand_over.py. Each acked record's RecordMetadata (commit_record) is
written to ``acks.file`` at each commit(), so a test can compare it with where Kafka put it;
with ``fail.after`` its poll fails once that many records were returned, and stop() writes
``stopped.file``; ``poll.ms`` makes each poll take that long (a source that produces while a
fault happens)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from connect.api import SourceConnector, SourceTask
from connect.data import Schema
from connect.records import SourceRecord

PARTITION = {"source": "seq"}


class SeqSource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return SeqTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]


class SeqTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        self.topic = props["topic"]
        self.count = int(props["count"])
        self.partitions = int(props["partitions"])
        self.per_poll = int(props.get("per.poll", "500"))
        self.acks_file = props["acks.file"]
        self.fail_after = int(props.get("fail.after", "-1"))
        self.stopped_file = props.get("stopped.file")
        self.poll_s = int(props.get("poll.ms", "0")) / 1000
        self.acks: list[tuple[int, int, int]] = []  # (n, partition, offset) as acked
        last = self.context.offset_storage_reader().offset(PARTITION)
        self.next = int((last or {}).get("next", 0))

    def poll(self) -> list[SourceRecord] | None:
        if 0 <= self.fail_after <= self.next:
            raise RuntimeError(f"poll failed after {self.next} records")
        if self.next >= self.count:
            return None
        if self.poll_s:
            time.sleep(self.poll_s)  # the source's own pace
        records = []
        for n in range(self.next, min(self.next + self.per_poll, self.count)):
            records.append(SourceRecord(PARTITION, {"next": n + 1}, self.topic,
                                        n % self.partitions, None, None,
                                        Schema.STRING_SCHEMA, str(n)))
        self.next += len(records)
        return records

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        if metadata is not None:
            self.acks.append((int(record.value), metadata.partition, metadata.offset))

    def commit(self) -> None:
        partial = f"{self.acks_file}.tmp"  # replaced whole: the test may read it meanwhile
        with open(partial, "w") as handle:
            json.dump(self.acks, handle)
        os.replace(partial, self.acks_file)

    def stop(self) -> None:
        if self.stopped_file:
            with open(self.stopped_file, "a") as handle:
                handle.write("stopped\n")
