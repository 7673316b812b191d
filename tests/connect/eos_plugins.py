"""Source connectors for tests/connect/test_exactly_once.py. BoundarySource defines its own
transaction boundaries (KIP-618's TransactionContext): records 0..N-1, a commit after every
hundredth, and the transaction holding the records in ABORTED dropped by the task. PollSource
writes 0..N-1 in fixed polls and can block in one commit() so the worker is killed there."""

from __future__ import annotations

import time
from pathlib import Path

from connect.api import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTask,
)
from connect.data import Schema
from connect.records import SourceRecord

COMMIT_EVERY = 100
ABORT_AT = 449  # the transaction 400..449 is aborted after this record


class BoundarySource(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return BoundaryTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"topic": self.props["topic"], "count": self.props.get("count", "2000")}]

    def exactly_once_support(self, props: dict[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED

    def can_define_transaction_boundaries(self, props: dict[str, str]
                                          ) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.SUPPORTED


class BoundaryTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        self.topic = props["topic"]
        self.count = int(props["count"])
        last = self.context.offset_storage_reader().offset({"source": "seq"})
        self.next = int((last or {}).get("next", 0))

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            return None
        transactions = self.context.transaction_context()
        assert transactions is not None, "transaction.boundary=connector gives a context"
        records = []
        for n in range(self.next, min(self.next + 250, self.count)):
            record = SourceRecord({"source": "seq"}, {"next": n + 1}, self.topic, None,
                                  Schema.STRING_SCHEMA, str(n), Schema.STRING_SCHEMA, str(n))
            if n == ABORT_AT:
                transactions.abort_transaction(record)
            elif n % COMMIT_EVERY == COMMIT_EVERY - 1:
                transactions.commit_transaction(record)
            records.append(record)
        self.next += len(records)
        return records


POLL_SIZE = 250  # records per poll of PollSource, about 55 kB: several producer batches


class PollSource(SourceConnector):
    """Records 0..N-1 in polls of POLL_SIZE (transaction.boundary=poll: one transaction each).
    Its ``block.at``-th ``commit()`` (called once that transaction committed, while the worker
    goes on with the next) writes ``marker`` and blocks, once per marker file, so a test can
    kill the worker at that point."""

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return PollTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def exactly_once_support(self, props: dict[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED


class PollTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        self.topic = props["topic"]
        self.count = int(props["count"])
        self.block_at = int(props.get("block.at", "0"))
        self.marker = Path(props["marker"]) if props.get("marker") else None
        self.commits = 0
        last = self.context.offset_storage_reader().offset({"source": "poll"})
        self.next = int((last or {}).get("next", 0))

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            time.sleep(0.05)
            return None
        records = [SourceRecord({"source": "poll"}, {"next": n + 1}, self.topic, 0,
                                Schema.STRING_SCHEMA, str(n), Schema.STRING_SCHEMA,
                                f"{n}:" + "x" * 200)
                   for n in range(self.next, min(self.next + POLL_SIZE, self.count))]
        self.next += len(records)
        return records

    def commit(self) -> None:
        self.commits += 1
        if self.commits == self.block_at and self.marker is not None \
                and not self.marker.exists():
            self.marker.write_text(str(self.next))
            time.sleep(120)  # the test kills the worker meanwhile

    def stop(self) -> None:
        pass
