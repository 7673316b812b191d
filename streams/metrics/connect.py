"""A Connect worker's metrics, named as Kafka Connect names them (``connect-worker-metrics``,
``connector-metrics``, ``connector-task-metrics``, ``source-task-metrics``,
``sink-task-metrics``, ``task-error-metrics``; domain ``kafka.connect``).

Task runners keep plain counters (``records_polled``, ``records_written``, ``records_read``,
``records_sent``, ``commits_ok``, ``commits_failed``; the error handler's ``failures`` and
``skipped``; the dead-letter reporter's ``produce_requests``). This module reads them, and the
status store, when scraped: it knows the worker by its attributes, not by import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from .listener import ServedMetrics, parse_listener
from .registry import COUNTER, GAUGE, MetricsRegistry, Sample

DOMAIN = "kafka.connect"
STATES = ("unassigned", "running", "paused", "failed", "stopped", "restarting")


class ConnectMetrics:
    """The metrics of one worker process; ``herder()`` gives its herder (None while starting)."""

    def __init__(self, herder: Callable[[], Any], listener: str | None = None) -> None:
        if listener:
            parse_listener(listener)  # a bad value fails when the worker is built
        self.herder = herder
        self.listener = listener
        self.registry = MetricsRegistry(DOMAIN)
        self.registry.add_collector(self._samples)

    def _worker(self) -> Any:
        herder = self.herder()
        return getattr(herder, "worker", None) if herder is not None else None

    def _samples(self) -> Iterator[Sample]:
        worker = self._worker()
        if worker is None:
            return
        # MirrorMaker 2's per-partition metrics, once its connectors run in this process
        # (found by module, not imported: a worker without them pays nothing).
        mirror = sys.modules.get("connect.mirror.metrics")
        if mirror is not None:
            yield from mirror.samples()
        connectors = dict(worker.connectors)
        runners = dict(worker.tasks)
        yield Sample(DOMAIN, "connect-worker-metrics", "connector-count", GAUGE, {},
                     len(connectors), "Connectors run by this worker")
        yield Sample(DOMAIN, "connect-worker-metrics", "task-count", GAUGE, {}, len(runners),
                     "Tasks run by this worker")
        abandoned = getattr(worker, "abandoned_threads", None)
        if abandoned is not None:
            total, alive = abandoned
            yield Sample(DOMAIN, "connect-worker-metrics", "abandoned-thread-total", COUNTER, {},
                         total, "Task and connector threads given up on after "
                         "task.shutdown.graceful.timeout.ms")
            yield Sample(DOMAIN, "connect-worker-metrics", "abandoned-thread-alive", GAUGE, {},
                         alive, "Abandoned threads still stuck in their plugin")
        statuses = worker.statuses
        for name in connectors:
            state = _state(statuses.connector(name) if hasattr(statuses, "connector") else None)
            for each in STATES:
                yield Sample(DOMAIN, "connector-metrics", "status", GAUGE,
                             {"connector": name, "status": each}, 1 if state == each else 0,
                             "1 for the connector's current state")
        for task_id, runner in runners.items():
            tags = {"connector": task_id.connector, "task": task_id.task}
            state = _state(statuses.task(task_id) if hasattr(statuses, "task") else None)
            for each in STATES:
                yield Sample(DOMAIN, "connector-task-metrics", "status", GAUGE,
                             {**tags, "status": each}, 1 if state == each else 0,
                             "1 for the task's current state")
            yield from _task_samples(runner, tags)


def _state(status: Any) -> str:
    state = getattr(status, "state", None)
    value = getattr(state, "value", state)
    return str(value).lower() if value is not None else "unassigned"


def _task_samples(runner: Any, tags: dict[str, Any]) -> Iterator[Sample]:
    ok, failed = getattr(runner, "commits_ok", 0), getattr(runner, "commits_failed", 0)
    yield Sample(DOMAIN, "connector-task-metrics", "offset-commit-success-total", COUNTER,
                 tags, ok, "Offset commits that succeeded")
    yield Sample(DOMAIN, "connector-task-metrics", "offset-commit-failure-total", COUNTER,
                 tags, failed, "Offset commits that failed")
    if ok + failed:
        yield Sample(DOMAIN, "connector-task-metrics", "offset-commit-success-percentage",
                     GAUGE, tags, ok / (ok + failed))
        yield Sample(DOMAIN, "connector-task-metrics", "offset-commit-failure-percentage",
                     GAUGE, tags, failed / (ok + failed))
    if hasattr(runner, "records_polled"):
        yield Sample(DOMAIN, "source-task-metrics", "source-record-poll-total", COUNTER, tags,
                     runner.records_polled, "Records returned by the task's poll()")
        yield Sample(DOMAIN, "source-task-metrics", "source-record-write-total", COUNTER,
                     tags, runner.records_written,
                     "Records after transformations acknowledged by Kafka")
        stats = runner.transaction_metrics.stats() \
            if hasattr(runner, "transaction_metrics") else None
        if stats is not None:  # exactly-once tasks (KIP-618), once a transaction committed
            for name, value in zip(("avg", "min", "max"), stats, strict=True):
                yield Sample(DOMAIN, "source-task-metrics", f"transaction-size-{name}", GAUGE,
                             tags, value, f"The {name} number of records per committed "
                             "transaction (last 60 s)")
        errors = getattr(runner, "_errors", None)
    else:
        yield Sample(DOMAIN, "sink-task-metrics", "sink-record-read-total", COUNTER, tags,
                     getattr(runner, "records_read", 0), "Records read from Kafka")
        yield Sample(DOMAIN, "sink-task-metrics", "sink-record-send-total", COUNTER, tags,
                     getattr(runner, "records_sent", 0),
                     "Records after transformations handed to the task's put()")
        errors = getattr(runner, "errors", None)
    dlq = getattr(errors, "dlq", None)
    group = "task-error-metrics"
    yield Sample(DOMAIN, group, "total-record-errors", COUNTER, tags,
                 getattr(errors, "failures", 0), "Records that failed a stage")
    yield Sample(DOMAIN, group, "total-records-skipped", COUNTER, tags,
                 getattr(errors, "skipped", 0), "Failed records skipped (errors.tolerance=all)")
    yield Sample(DOMAIN, group, "deadletterqueue-produce-requests", COUNTER, tags,
                 getattr(dlq, "produce_requests", 0), "Records written to the dead-letter topic")
    yield Sample(DOMAIN, group, "deadletterqueue-produce-failures", COUNTER, tags,
                 getattr(dlq, "produce_failures", 0), "Dead-letter writes that failed")


class ConnectMetricsServer(ServedMetrics):
    """``metrics.listener`` of a worker: /metrics and /health (200 once the worker joined)."""

    def __init__(self, metrics: ConnectMetrics) -> None:
        self.metrics = metrics

    def health(self) -> tuple[bool, dict[str, Any]]:
        herder = self.metrics.herder()
        ready = bool(herder is not None and getattr(herder, "ready", False))
        worker = self.metrics._worker()
        return ready, {"status": "UP" if ready else "DOWN",
                       "connectors": len(worker.connectors) if worker is not None else 0,
                       "tasks": len(worker.tasks) if worker is not None else 0}

    async def start(self) -> None:
        await self.serve(self.metrics.listener, self.metrics.registry, self.health)
