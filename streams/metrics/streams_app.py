"""The metrics of a Kafka Streams application, named as Kafka Streams names them (KIP-444):
thread (``stream-thread-metrics``), task (``stream-task-metrics``), state store
(``stream-state-metrics``, DEBUG), processor node (``stream-processor-node-metrics``
``process-total``, DEBUG) and the consumer's ``records-lag-max``.

The runtime keeps plain counters (``StreamThread.processed``, ``ThreadStats``, a task's
``dropped_records``); this module only reads them, at scrape time. It knows the runtime by
its attributes, not by import (metrics sits below the runtime).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

from .registry import COUNTER, GAUGE, MetricsRegistry, RecordingLevel, Sample, WindowedStat

DOMAIN = "kafka.streams"
THREAD = "stream-thread-metrics"
TASK = "stream-task-metrics"
STATE = "stream-state-metrics"
NODE = "stream-processor-node-metrics"


class ThreadStats:
    """Counters the stream thread bumps outside the per-record path (once per poll, per
    commit, per processing slice)."""

    __slots__ = ("polls", "commits", "commit_seconds", "process_seconds")

    def __init__(self) -> None:
        self.polls = 0
        self.commits = 0
        self.commit_seconds = 0.0
        self.process_seconds = 0.0

    def instrument(self, committer: Any) -> None:
        """Count and time every ``committer.commit`` call (Kafka's commit-total/latency)."""
        commit = committer.commit
        clock = time.perf_counter

        async def timed_commit(*args: Any, **kwargs: Any) -> None:
            start = clock()
            try:
                await commit(*args, **kwargs)
            finally:
                self.commits += 1
                self.commit_seconds += clock() - start

        committer.commit = timed_commit


STATES = ("CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING",
          "PENDING_ERROR", "ERROR")


def register_streams_metrics(registry: MetricsRegistry, thread: Any, thread_id: str,
                             state: Any = None) -> None:
    """Thread metrics read from ``thread`` (a StreamThread), plus collectors for the tasks,
    their stores and the consumer's lag; with ``state`` (() -> KafkaStreams' state name), the
    client's state as ``stream-metrics`` ``state{state=...}`` = 1 for the current one."""
    stats: ThreadStats = thread.stats
    if state is not None:
        registry.add_collector(lambda: _client_samples(state(), thread.app_id))
    tags = {"thread-id": thread_id}

    def reg(kind: str, name: str, read: Any, description: str) -> None:
        registry.add(THREAD, name, kind, read, tags=tags, description=description,
                     domain=DOMAIN)

    process = WindowedStat(lambda: thread.processed, lambda: stats.process_seconds * 1000)
    commit = WindowedStat(lambda: stats.commits, lambda: stats.commit_seconds * 1000)
    poll = WindowedStat(lambda: stats.polls)
    reg(COUNTER, "process-total", lambda: thread.processed, "Records processed by the thread")
    reg(GAUGE, "process-rate", process.rate, "Records processed per second (30 s window)")
    reg(GAUGE, "process-latency-avg", process.avg,
        "Average processing time per record in ms (30 s window)")
    reg(COUNTER, "commit-total", lambda: stats.commits, "Commits of all the thread's tasks")
    reg(GAUGE, "commit-rate", commit.rate, "Commits per second (30 s window)")
    reg(GAUGE, "commit-latency-avg", commit.avg, "Average commit time in ms (30 s window)")
    reg(COUNTER, "poll-total", lambda: stats.polls, "Consumer polls of the thread")
    reg(GAUGE, "poll-rate", poll.rate, "Consumer polls per second (30 s window)")
    reg(GAUGE, "active-tasks", lambda: len(thread.tasks), "Tasks assigned to the thread")
    registry.add_collector(lambda: _task_samples(thread, thread_id))
    registry.add_collector(lambda: _consumer_samples(thread, f"{thread_id}-consumer"))
    if registry.should_record(RecordingLevel.DEBUG):
        registry.add_collector(lambda: _store_samples(thread, thread_id))
        registry.add_collector(lambda: _node_samples(thread, thread_id))


def _client_samples(current: str, app_id: str) -> Iterator[Sample]:
    for each in STATES:
        yield Sample(DOMAIN, "stream-metrics", "state", GAUGE,
                     {"application-id": app_id, "state": each}, 1 if each == current else 0,
                     "1 for the instance's current KafkaStreams state")


def _task_samples(thread: Any, thread_id: str) -> Iterator[Sample]:
    for task_id, task in list(thread.tasks.items()):
        tags = {"thread-id": thread_id, "task-id": str(task_id)}
        yield Sample(DOMAIN, TASK, "dropped-records-total", COUNTER, tags,
                     getattr(task, "dropped_records", 0),
                     "Records dropped by the task (handler said continue, invalid timestamp)")
        count = getattr(task, "e2e_samples", 0)
        if count:
            yield Sample(DOMAIN, TASK, "record-e2e-latency-avg", GAUGE, tags,
                         task.e2e_sum_ms / count,
                         "Wall clock minus record timestamp when processed, ms (sampled once "
                         "per processed chunk)")
            yield Sample(DOMAIN, TASK, "record-e2e-latency-max", GAUGE, tags, task.e2e_max_ms)
            yield Sample(DOMAIN, TASK, "record-e2e-latency-min", GAUGE, tags, task.e2e_min_ms)
        yield Sample(DOMAIN, TASK, "stream-time", GAUGE, tags, task.stream_time,
                     "Largest record timestamp the task has processed")


def _consumer_samples(thread: Any, client_id: str) -> Iterator[Sample]:
    """``records-lag`` per partition and ``records-lag-max`` (Kafka's
    consumer-fetch-manager-metrics): the high watermark (last stable offset under EOS)
    minus the consumer's position, from what the consumer already knows (no request).
    ``client_id`` is Kafka Streams' name for the thread's consumer (``<thread>-consumer``)."""
    gen = getattr(thread, "gen", None)
    consumer = getattr(gen, "consumer", None)
    if consumer is None:
        return
    from aiokafka import TopicPartition

    from ..kafka.internals import fetch_position

    try:
        assigned = list(consumer.assignment())
    except Exception:  # not subscribed yet, or closing
        return
    lag_max = math.nan
    for tp in assigned:
        tp = TopicPartition(tp.topic, tp.partition)
        end = thread.guarantee.end_offset(consumer, tp)
        position = fetch_position(consumer, tp)
        if end is None or position is None:
            continue
        lag = max(end - position, 0)
        lag_max = lag if math.isnan(lag_max) else max(lag_max, lag)
        yield Sample("kafka.consumer", "consumer-fetch-manager-metrics", "records-lag", GAUGE,
                     {"client-id": client_id, "topic": tp.topic, "partition": tp.partition},
                     lag, "Records the consumer is behind the end of the partition")
    yield Sample("kafka.consumer", "consumer-fetch-manager-metrics", "records-lag-max", GAUGE,
                 {"client-id": client_id}, lag_max,
                 "Largest records-lag over the assigned partitions (NaN before any fetch)")


def _node_samples(thread: Any, thread_id: str) -> Iterator[Sample]:
    """Kafka's DEBUG ``stream-processor-node-metrics`` ``process-total``: records each node
    of each task received (the counter ``streams console`` turns into records/s per node)."""
    for task_id, task in list(thread.tasks.items()):
        for name, node in list(getattr(task, "nodes", {}).items()):
            yield Sample(DOMAIN, NODE, "process-total", COUNTER,
                         {"thread-id": thread_id, "task-id": str(task_id),
                          "processor-node-id": name}, node.processed,
                         "Records the processor node received")


def _store_samples(thread: Any, thread_id: str) -> Iterator[Sample]:
    for task_id, task in list(thread.tasks.items()):
        for name, store in list(task.stores.items()):
            stats = getattr(store, "stats", None)
            if not isinstance(stats, dict):
                continue
            tags = {"thread-id": thread_id, "task-id": str(task_id), "store": name}
            for op, op_stats in stats.items():
                op_name = op.replace("_", "-")
                yield Sample(DOMAIN, STATE, f"{op_name}-total", COUNTER, tags, op_stats.count)
                avg = op_stats.seconds * 1000 / op_stats.count if op_stats.count else math.nan
                yield Sample(DOMAIN, STATE, f"{op_name}-latency-avg", GAUGE, tags, avg,
                             f"Average {op} latency in ms since the task started")
                yield Sample(DOMAIN, STATE, f"{op_name}-latency-max", GAUGE, tags,
                             op_stats.max_seconds * 1000)


def store_wrapper(registry: MetricsRegistry) -> Any:
    """What TaskConfig.store_wrapper gets: a Metered layer at DEBUG, nothing at INFO."""
    if not registry.should_record(RecordingLevel.DEBUG):
        return None
    from ..state.metered import MeteredStore

    return MeteredStore
