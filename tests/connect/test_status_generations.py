"""Status by generation: every distributed worker answers the same status for every task.

Workers in separate processes; tasks move when a worker joins and when one stops. Each status
record carries the group generation that assigned the task to its writer; an older generation
never overwrites a newer one, and an owner that stops or loses a task writes UNASSIGNED.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, consume_all, http

from connect.runtime.config import WorkerConfig
from connect.runtime.distributed import DistributedHerder
from connect.runtime.status import State, Status, StatusStore, TargetState, TaskId

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TASKS = 6


def running_here(url: str, connector: str) -> set[int]:
    """The tasks of ``connector`` this worker runs (its own metrics, not the status store)."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    out = set()
    for labels in re.findall(r"^\S*connector_task_metrics_status\{([^}]*)\} 1(?:\.0)?$", text,
                             re.M):
        tags = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if tags.get("connector") == connector and tags.get("status") in ("running", "paused"):
            out.add(int(tags["task"]))
    return out


def views(urls: list[str], name: str) -> list[dict | None]:
    out = []
    for url in urls:
        code, body = http("GET", f"{url}/connectors/{name}/status")
        out.append(body if code == 200 else None)
    return out


def settled(urls: list[str], name: str, state: str) -> bool:
    """Every worker answers the same status; every task is ``state`` on the worker that
    really runs it."""
    answers = views(urls, name)
    first = answers[0]
    if first is None or any(a != first for a in answers) or len(first["tasks"]) != TASKS:
        return False
    if any(t["state"] != state for t in first["tasks"]):
        return False
    runs = {url.removeprefix("http://"): running_here(url, name) for url in urls}
    return all(t["id"] in runs.get(t["worker_id"], set()) for t in first["tasks"])


def test_every_worker_answers_the_same_status_as_tasks_move(tmp_path: Path, broker) -> None:
    workers: list[WorkerProcess] = []
    try:
        for name in ("a", "b"):
            props, url = worker_properties(tmp_path, broker.bootstrap, name)
            workers.append(WorkerProcess(["distributed", str(props)], tmp_path / f"{name}.log",
                                         url, pythonpath=[str(HERE)]).start())
        urls = [w.url for w in workers]
        # Tasks that take a while to stop: the new owner runs a moved task before the old one
        # has given it up, and their status records arrive in either order.
        code, _ = http("PUT", f"{urls[0]}/connectors/gen/config", {
            "connector.class": "stuck_plugins.SlowStopSourceConnector", "stop.seconds": "2",
            "tasks.max": str(TASKS)})
        assert code == 201
        wait_until(lambda: settled(urls, "gen", "RUNNING"), 90, message="two workers agree")

        # A third worker joins: tasks move to it; the old owners give them up.
        props, url = worker_properties(tmp_path, broker.bootstrap, "c")
        workers.append(WorkerProcess(["distributed", str(props)], tmp_path / "c.log",
                                     url, pythonpath=[str(HERE)]).start())
        urls.append(url)
        wait_until(lambda: settled(urls, "gen", "RUNNING") and any(
            t["worker_id"] == url.removeprefix("http://")
            for t in (views([url], "gen")[0] or {"tasks": []})["tasks"]), 90,
            message="three workers agree, the new one runs tasks")

        assert http("PUT", f"{urls[1]}/connectors/gen/pause")[0] == 202
        wait_until(lambda: settled(urls, "gen", "PAUSED"), 60, message="all agree on PAUSED")
        assert http("PUT", f"{urls[2]}/connectors/gen/resume")[0] == 202
        wait_until(lambda: settled(urls, "gen", "RUNNING"), 60, message="all agree on RUNNING")

        # The third worker stops: its tasks go back to the others, everyone agrees again.
        workers[2].stop()
        urls.pop()
        wait_until(lambda: settled(urls, "gen", "RUNNING"), 90,
                   message="two workers agree after the third left")

        # In the status topic: owners that gave a task up wrote UNASSIGNED, in an older
        # generation than the next owner's RUNNING.
        records = [(r.key.decode(), json.loads(r.value))
                   for r in consume_all(broker.bootstrap, "connect-status", 1)
                   if r.key.decode().startswith("status-task-gen-") and r.value]
        handovers = 0
        for i, (key, value) in enumerate(records):
            if value["state"] != "UNASSIGNED":
                continue
            later = [v for k, v in records[i + 1:] if k == key and v["state"] == "RUNNING"
                     and v["worker_id"] != value["worker_id"]]
            if later:
                handovers += 1
                assert later[0]["generation"] > value["generation"], (key, value, later[0])
        assert handovers >= 2, records
    finally:
        for worker in workers:
            worker.stop()


def test_an_older_generation_never_overwrites_a_newer_one() -> None:
    store = StatusStore()
    tid = TaskId("c", 0)
    assert store.put_task(tid, Status(State.RUNNING, "b:1", generation=5))
    # The old owner's late UNASSIGNED (it held the task in generation 4) loses ...
    assert not store.put_task(tid, Status(State.UNASSIGNED, "a:1", generation=4))
    assert store.task(tid) == Status(State.RUNNING, "b:1", generation=5)
    # ... while the owner's own later word, and any newer generation, win.
    assert store.put_task(tid, Status(State.PAUSED, "b:1", generation=5))
    assert store.put_task(tid, Status(State.UNASSIGNED, "b:1", generation=5))
    assert store.put_task(tid, Status(State.RUNNING, "a:1", generation=6))
    assert store.task(tid) == Status(State.RUNNING, "a:1", generation=6)


def test_a_worker_that_lost_its_assignment_stops_its_connectors_too(tmp_path: Path) -> None:
    """A worker paused past its session timeout lost its assignment; it restarts what it is
    given afterwards. A connector it kept running wrote no new status when it was assigned
    here again, so its interim owner's UNASSIGNED stood for good (fault soak seeds 7020 and
    7032): the connector is stopped like the tasks, and starts again with a new status."""
    config = WorkerConfig.parse({
        "bootstrap.servers": "127.0.0.1:1", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s"})
    source = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"),
              "topic": "t"}

    async def run() -> None:
        herder = DistributedHerder(config, "w:1", "http://w:1")
        written: list[tuple[str, Status]] = []
        herder.worker._on_status = lambda name, task, status: written.append((name, status))
        try:
            assert await herder.worker.start_connector("src", source, TargetState.STARTED)
            await herder.drop_lost_assignment()
            assert herder.worker.connectors == {}
            assert [(n, s.state) for n, s in written] == [("src", State.RUNNING),
                                                           ("src", State.UNASSIGNED)]
        finally:
            await herder.worker.stop()

    asyncio.run(run())
