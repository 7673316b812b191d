"""The connector plugin API, like Kafka's ``org.apache.kafka.connect.{connector,source,sink}``.

A plugin is a :class:`SourceConnector` or :class:`SinkConnector` that splits its job into task
configs; the worker runs one :class:`SourceTask`/:class:`SinkTask` per config. Task methods may be
plain functions or coroutines: the worker awaits coroutines on its event loop and runs plain
functions in a thread, so a blocking ``poll()`` or ``put()`` never stalls the worker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from aiokafka.structs import RecordMetadata, TopicPartition

from connect.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)

if TYPE_CHECKING:
    from connect.records import SinkRecord, SinkRecordBatch, SourceRecord


class ConnectException(Exception):
    """A connector or task failed; the worker marks it FAILED with this message as the trace."""


class RetriableException(ConnectException):
    """A transient failure: the worker retries the same operation (``put`` gets the same batch)."""


class NotFoundException(ConnectException):
    pass


class AlreadyExistsException(ConnectException):
    pass


# -- contexts ------------------------------------------------------------------------------------


class ConnectorContext:
    """Given to a connector by the worker: ask for new task configs, or report a fatal error."""

    def __init__(self, request_reconfiguration: Callable[[], None] | None = None,
                 raise_error: Callable[[BaseException], None] | None = None) -> None:
        self._request = request_reconfiguration
        self._raise = raise_error

    def request_task_reconfiguration(self) -> None:
        if self._request is not None:
            self._request()

    def raise_error(self, error: BaseException) -> None:
        if self._raise is not None:
            self._raise(error)


class OffsetStorageReader:
    """Read the last committed source offsets of this connector (after a restart, for example)."""

    def __init__(self, lookup: Callable[[Mapping[str, Any]], dict[str, Any] | None]) -> None:
        self._lookup = lookup

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._lookup(partition)

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[tuple[dict, dict | None]]:
        """``[(partition, offset-or-None), ...]`` (dicts are unhashable, hence pairs)."""
        return [(dict(p), self._lookup(p)) for p in partitions]


class ExactlyOnceSupport(StrEnum):
    """Whether a source connector can deliver exactly once with a configuration (KIP-618,
    Kafka's ``org.apache.kafka.connect.source.ExactlyOnceSupport``)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(StrEnum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class TransactionBoundary(StrEnum):
    """The values of a source connector's ``transaction.boundary`` (Kafka's
    ``SourceTask.TransactionBoundary``): a transaction per ``poll()`` batch, per
    ``transaction.boundary.interval.ms``, or where the task says through its
    :class:`TransactionContext`."""

    POLL = "poll"
    INTERVAL = "interval"
    CONNECTOR = "connector"


class TransactionContext:
    """Lets a source task define its own transactions when ``transaction.boundary=connector``
    (Kafka's ``org.apache.kafka.connect.source.TransactionContext``).

    ``commit_transaction()`` commits after the batch the current ``poll()`` returns;
    ``commit_transaction(record)`` right after ``record`` is dispatched. ``abort_*`` drop the
    records of the open transaction (their source offsets are still committed, so they are not
    read again). Safe to call from the task's thread.
    """

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._commit_batch = False
        self._abort_batch = False
        self._commit_records: set[int] = set()
        self._abort_records: set[int] = set()

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._commit_batch = True
            else:
                self._commit_records.add(id(record))

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._abort_batch = True
            else:
                self._abort_records.add(id(record))

    # -- read by the worker ---------------------------------------------------------------------
    def has_record_requests(self) -> bool:
        return bool(self._commit_records or self._abort_records)

    def take_record_request(self, record: SourceRecord) -> str | None:
        """'abort', 'commit' or None for a record just dispatched (abort wins, as Kafka's)."""
        key = id(record)
        with self._lock:
            abort = key in self._abort_records
            commit = key in self._commit_records
            self._abort_records.discard(key)
            self._commit_records.discard(key)
        return "abort" if abort else "commit" if commit else None

    def take_batch_request(self) -> str | None:
        with self._lock:
            abort, commit = self._abort_batch, self._commit_batch
            self._abort_batch = self._commit_batch = False
        return "abort" if abort else "commit" if commit else None


class SourceTaskContext:
    def __init__(self, configs: dict[str, str], reader: OffsetStorageReader,
                 transactions: TransactionContext | None = None) -> None:
        self._configs = configs
        self._reader = reader
        self._transactions = transactions

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    def transaction_context(self) -> TransactionContext | None:
        """The task's :class:`TransactionContext` when exactly-once support is enabled on the
        worker and the connector has ``transaction.boundary=connector``; None otherwise."""
        return self._transactions


class ErrantRecordReporter:
    """Send a record the sink task could not write to the dead-letter queue (or fail the task)."""

    def __init__(self, report: Callable[[Any, BaseException], Awaitable[None] | None]) -> None:
        self._report = report

    def report(self, record: SinkRecord, error: BaseException) -> Awaitable[None] | None:
        return self._report(record, error)


class SinkTaskContext:
    """Lets a sink task rewind offsets, back off, pause partitions and ask for a commit.

    Requests are recorded here and applied by the worker between ``put`` calls, which is why
    they are safe to make from inside ``put`` running in another thread.
    """

    def __init__(self, configs: dict[str, str],
                 reporter: ErrantRecordReporter | None = None) -> None:
        self._configs = configs
        self._reporter = reporter
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms: int | None = None
        self.paused: set[TopicPartition] = set()
        self.commit_requested = False
        self._assignment: set[TopicPartition] = set()

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset(self, tp_or_offsets: TopicPartition | Mapping[TopicPartition, int],
               offset: int | None = None) -> None:
        """Rewind: ``offset(tp, 42)`` or ``offset({tp: 42, ...})``; the next fetch starts there."""
        if isinstance(tp_or_offsets, Mapping):
            self.rewinds.update({TopicPartition(*tp): int(o) for tp, o in tp_or_offsets.items()})
        else:
            if offset is None:
                raise ValueError("offset(tp, offset) needs an offset")
            self.rewinds[TopicPartition(*tp_or_offsets)] = int(offset)

    def timeout(self, timeout_ms: int) -> None:
        """Wait this long before redelivering after a RetriableException from ``put``."""
        self.timeout_ms = int(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(TopicPartition(*tp) for tp in partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(TopicPartition(*tp) for tp in partitions)

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter


# -- connectors ----------------------------------------------------------------------------------


class Connector:
    """Splits a job into task configs. Subclass :class:`SourceConnector` or :class:`SinkConnector`."""

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    def start(self, props: dict[str, str]) -> None:
        raise NotImplementedError

    def task_class(self) -> type[Task]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        raise NotImplementedError

    def stop(self) -> None:
        pass

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def validate(self, props: dict[str, str]) -> list[ConfigValue]:
        return self.config_def().validate(props)

    def reconfigure(self, props: dict[str, str]) -> None:
        self.stop()
        self.start(props)

    def version(self) -> str:
        from streams import __version__

        return __version__


class SourceConnector(Connector):
    def exactly_once_support(self, props: dict[str, str]) -> ExactlyOnceSupport | None:
        """Whether this connector delivers exactly once with ``props`` when the worker has
        ``exactly.once.source.support=enabled``; None: it does not say (KIP-618). A connector
        whose answer is not SUPPORTED cannot be created with ``exactly.once.support=required``."""
        return None

    def can_define_transaction_boundaries(self, props: dict[str, str]
                                          ) -> ConnectorTransactionBoundaries:
        """SUPPORTED if its tasks define transactions through their TransactionContext
        (required for ``transaction.boundary=connector``)."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(self, props: dict[str, str],
                      offsets: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> bool:
        """Validate (raise) or apply a user's offset change; return True if the connector manages
        its offsets itself. ``offsets`` is ``[(partition, offset-or-None-for-reset), ...]``."""
        return False


class SinkConnector(Connector):
    def alter_offsets(self, props: dict[str, str],
                      offsets: dict[TopicPartition, int | None]) -> bool:
        return False


# -- tasks ---------------------------------------------------------------------------------------


class Task:
    def version(self) -> str:
        from streams import __version__

        return __version__

    def start(self, props: dict[str, str]) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        pass


class SourceTask(Task):
    """``poll()`` returns a batch of records or None; it should return within about a second so
    the worker can pause or stop it. It may be ``async def``."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    def poll(self) -> list[SourceRecord] | None | Awaitable[list[SourceRecord] | None]:
        raise NotImplementedError

    def commit(self) -> None:
        """Called after each offset flush."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """Called once Kafka acked ``record`` (metadata None: dropped by a transform or skipped)."""


class SinkTask(Task):
    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    def put(self, records: list[SinkRecord]) -> None | Awaitable[None]:
        raise NotImplementedError

    def put_batches(self, batches: list[SinkRecordBatch]) -> None | Awaitable[None]:
        """``put`` for records delivered as columns, one batch per topic-partition.

        The worker calls it instead of ``put`` when a task overrides it and the records need no
        per-record handling (no transforms, no headers, all converted); the default hands the
        records to ``put``. Same contract as ``put`` (RetriableException redelivers)."""
        return self.put([record for batch in batches for record in batch.records()])

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None | Awaitable[None]:
        """Make everything given to ``put`` so far durable."""

    def pre_commit(
        self, current_offsets: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int] | Awaitable[dict[TopicPartition, int]]:
        """The offsets safe to commit (next offset to read per partition). Default: flush all."""
        result = self.flush(current_offsets)
        if hasattr(result, "__await__"):
            async def after_flush() -> dict[TopicPartition, int]:
                await result  # type: ignore[misc]
                return current_offsets

            return after_flush()
        return current_offsets

    def open(self, partitions: list[TopicPartition]) -> None:
        pass

    def close(self, partitions: list[TopicPartition]) -> None:
        pass


__all__ = [
    "NO_DEFAULT", "AlreadyExistsException", "ConfigDef", "ConfigException", "ConfigKey",
    "ConfigType", "ConfigValue", "ConnectException", "Connector", "ConnectorContext",
    "ErrantRecordReporter", "Importance", "NotFoundException", "OffsetStorageReader", "Range",
    "RecordMetadata", "RetriableException", "SinkConnector", "SinkTask", "SinkTaskContext",
    "SourceConnector", "SourceTask", "SourceTaskContext", "Task", "TopicPartition", "ValidString",
    "non_empty_string",
]
