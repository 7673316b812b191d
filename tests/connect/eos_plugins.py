"""A source connector that defines its own transaction boundaries (KIP-618's TransactionContext),
for tests/connect/test_exactly_once.py: records 0..N-1, a commit after every hundredth, and the
transaction holding the records in ABORTED dropped by the task."""

from __future__ import annotations

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
