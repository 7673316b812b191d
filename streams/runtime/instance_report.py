"""What ``GET /instance`` on an instance's ``application.server`` answers: the instance's state,
its tasks (active with lag, restoring with progress, standby with the changelog lag), the
topology as data, and the records each node has received so far.

This is what ``streams console`` draws on ``/apps/{application.id}``: Kafka Streams exposes the
same facts through ``KafkaStreams#metadataForLocalThreads()``, ``TopologyDescription`` and the
DEBUG-level processor-node metrics (``process-total``); here they travel as one JSON document so
a console needs no JMX. Read on the stream thread's loop (:func:`report`), so the task maps do
not change underneath.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..processor.api import TaskId
from ..topology.description import Processor, Sink, Source

if TYPE_CHECKING:
    from .app import KafkaStreams


def topology_json(app: KafkaStreams) -> dict[str, Any]:
    """The topology's sub-topologies and global stores with every node's kind, topics, stores
    and successors; internal topics are named as on the broker (``<application.id>-name``)
    and their kind (repartition, changelog) is given."""
    topology = app.topology
    app_id = app.config.application_id

    def topic(name: str) -> str:
        return topology.resolve_topic(name, app_id)

    def node(n: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": n.name, "successors": [s.name for s in n.successors]}
        if isinstance(n, Source):
            entry.update(type="source", topics=[topic(t) for t in n.topics])
        elif isinstance(n, Sink):
            entry.update(type="sink", topic=topic(n.topic) if n.topic is not None else None)
        elif isinstance(n, Processor):
            entry.update(type="processor", stores=list(n.stores))
        return entry

    description = topology.describe()
    internal = {topic(name): t.kind for name, t in topology.internal_topics.items()}
    return {
        "subtopologies": [{"id": sub.id, "nodes": [node(n) for n in sub.nodes]}
                          for sub in description.subtopologies],
        "global_stores": [{"id": g.id, "store": g.store,
                           "nodes": [node(g.source), node(g.processor)]}
                          for g in description.global_stores],
        "internal_topics": internal,
        "stores": sorted([*topology.stores, *topology.global_stores]),
    }


def report(app: KafkaStreams) -> dict[str, Any]:
    """This instance now (call on the stream thread's loop)."""
    thread = app._stream_thread
    gen = getattr(thread, "gen", None)
    manager = getattr(gen, "tasks", None)
    updater = getattr(gen, "updater", None)
    restoring = set(getattr(manager, "restoring", ()))
    active, standby = [], []
    for meta in app.metadata_for_local_threads():
        for task in meta.active_tasks:
            parts = []
            for tp in sorted(task.topic_partitions):
                committed = task.committed_offsets.get(tp)
                end = task.end_offsets.get(tp)
                lag = max(end - committed, 0) if end is not None and committed is not None \
                    else None
                parts.append({"topic": tp.topic, "partition": tp.partition,
                              "committed": committed, "end": end, "lag": lag})
            lags = [p["lag"] for p in parts if p["lag"] is not None]
            entry: dict[str, Any] = {"task": task.task_id, "partitions": parts,
                                     "lag": sum(lags) if lags else None,
                                     "restoring": False}
            if any(str(t) == task.task_id for t in restoring):
                entry["restoring"] = True
                entry["restore"] = _progress(updater, task.task_id)
            active.append(entry)
        for task in meta.standby_tasks:
            standby.append({"task": task.task_id,
                            "changelogs": _progress(updater, task.task_id)})
    nodes: dict[str, int] = {}
    tasks = dict(thread.tasks) if thread is not None else {}
    for task in tasks.values():
        for name, node in task.nodes.items():
            nodes[name] = nodes.get(name, 0) + node.processed
    state_dir = getattr(thread, "state_dir", None)
    return {
        "application_id": app.config.application_id,
        "endpoint": app.config.application_server,
        "process_id": getattr(state_dir, "process_id", None),
        "state": app.state.value,
        "active": active,
        "standby": standby,
        "nodes": nodes,
        "processed": getattr(thread, "processed", 0),
        "time_ms": int(time.time() * 1000),
        "topology": topology_json(app),
    }


def _progress(updater: Any, task_id: str) -> list[dict[str, Any]]:
    return updater.progress(TaskId.parse(task_id)) if updater is not None else []
