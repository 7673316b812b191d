"""Incremental cooperative rebalancing (KIP-415) between worker processes.

Three workers run twelve tasks. A fourth joins: at most ceil(12/4)+1 tasks move and no task that
stays is stopped (the status topic shows no record for it). The fourth is killed: its tasks wait
``scheduled.rebalance.max.delay.ms`` for it to come back, then move to the others.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, consume_all, http

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TASKS = 12
DELAY_MS = 10000


def owners(url: str) -> dict[int, str]:
    """Task id -> worker id of the RUNNING tasks, as ``url`` answers."""
    code, body = http("GET", f"{url}/connectors/coop/status")
    if code != 200:
        return {}
    return {t["id"]: t["worker_id"] for t in body["tasks"] if t["state"] == "RUNNING"}


def spread(urls: list[str]) -> dict[str, int] | None:
    """Tasks per worker once all twelve run on live workers and every worker agrees."""
    seen = [owners(u) for u in urls]
    if len(seen[0]) != TASKS or any(s != seen[0] for s in seen):
        return None
    live = {u.removeprefix("http://") for u in urls}
    if not set(seen[0].values()) <= live:
        return None
    return {w: list(seen[0].values()).count(w) for w in sorted(live)}


def status_records(bootstrap: str) -> list[tuple[tuple[int, int], str, dict]]:
    """((partition, offset), key, value) of the task status records."""
    return [((r.partition, r.offset), r.key.decode(), json.loads(r.value))
            for r in consume_all(bootstrap, "connect-status", 1)
            if r.key and r.value and r.key.decode().startswith("status-task-coop-")]


def ends(records: list[tuple[tuple[int, int], str, dict]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for (partition, offset), _, _ in records:
        out[partition] = max(out.get(partition, -1), offset)
    return out


def start(tmp_path: Path, bootstrap: str, name: str, protocol: str) -> WorkerProcess:
    props, url = worker_properties(tmp_path, bootstrap, name)
    with props.open("a") as handle:
        handle.write(f"connect.protocol={protocol}\n"
                     f"scheduled.rebalance.max.delay.ms={DELAY_MS}\n")
    return WorkerProcess(["distributed", str(props)], tmp_path / f"{name}.log", url,
                         pythonpath=[str(HERE)]).start()


def join_and_kill(tmp_path: Path, bootstrap: str, protocol: str) -> dict[str, object]:
    """The scenario; returns what moved (also run by hand with ``eager`` for comparison)."""
    workers = [start(tmp_path, bootstrap, n, protocol) for n in ("a", "b", "c")]
    try:
        urls = [w.url for w in workers]
        code, _ = http("PUT", f"{urls[0]}/connectors/coop/config", {
            "connector.class": "stuck_plugins.SlowStopSourceConnector", "stop.seconds": "0",
            "tasks.max": str(TASKS)})
        assert code == 201
        wait_until(lambda: spread(urls) == {u.removeprefix("http://"): 4 for u in urls}, 90,
                   message="12 tasks over 3 workers")
        before = owners(urls[0])
        mark = ends(status_records(bootstrap))

        workers.append(start(tmp_path, bootstrap, "d", protocol))
        urls.append(workers[3].url)
        new = urls[3].removeprefix("http://")
        wait_until(lambda: (spread(urls) or {}).get(new) == TASKS // 4, 90,
                   message="the fourth worker runs its share")
        after = owners(urls[0])
        moved = {t for t in after if after[t] != before[t]}
        touched = {int(key.rpartition("-")[2]) for (part, offset), key, _ in
                   status_records(bootstrap) if offset > mark.get(part, -1)}

        # Kill the fourth: its tasks wait for the delay, then move.
        leader_logs = [tmp_path / f"{n}.log" for n in ("a", "b", "c")]
        mine = {t for t, w in after.items() if w == new}
        workers[3].kill()
        urls.pop()
        held_line = re.compile(r"lost connectors and tasks wait")

        def held() -> bool:
            return any(held_line.search(p.read_text(errors="replace")) for p in leader_logs)

        wait_until(held, 60, message="the leader holding the dead worker's tasks")
        still = owners(urls[0])
        waited = {t for t in mine if still.get(t) == new}
        wait_until(lambda: spread(urls) == {u.removeprefix("http://"): 4 for u in urls}, 90,
                   message="the dead worker's tasks moved after the delay")
        return {"moved_on_join": sorted(moved), "touched_on_join": sorted(touched),
                "held_after_kill": sorted(waited), "dead_workers_tasks": sorted(mine)}
    finally:
        for worker in workers:
            worker.kill()


def test_a_joining_worker_takes_only_its_share_and_a_dead_ones_tasks_wait(
        tmp_path: Path, broker) -> None:
    result = join_and_kill(tmp_path, broker.bootstrap, "sessioned")
    moved, touched = set(result["moved_on_join"]), set(result["touched_on_join"])  # type: ignore[call-overload]
    assert 0 < len(moved) <= math.ceil(TASKS / 4) + 1, result
    assert touched == moved, result  # no task that stayed was stopped or restarted
    assert result["held_after_kill"] == result["dead_workers_tasks"], result


def test_eager_workers_stop_everything_before_a_rebalance(tmp_path: Path, broker) -> None:
    """connect.protocol=eager, as Kafka's: before rejoining, every worker stops all it runs, so
    a fourth worker joining restarts all twelve tasks (the cooperative protocols: only the
    moved ones, test above)."""
    workers = [start(tmp_path, broker.bootstrap, n, "eager") for n in ("a", "b", "c")]
    try:
        urls = [w.url for w in workers]
        code, _ = http("PUT", f"{urls[0]}/connectors/coop/config", {
            "connector.class": "stuck_plugins.SlowStopSourceConnector", "stop.seconds": "0",
            "tasks.max": str(TASKS)})
        assert code == 201
        wait_until(lambda: spread(urls) == {u.removeprefix("http://"): 4 for u in urls}, 90,
                   message="12 tasks over 3 workers")
        mark = ends(status_records(broker.bootstrap))
        workers.append(start(tmp_path, broker.bootstrap, "d", "eager"))
        urls.append(workers[3].url)
        wait_until(lambda: spread(urls) == {u.removeprefix("http://"): 3 for u in urls}, 90,
                   message="12 tasks over 4 workers")
        unassigned = {int(key.rpartition("-")[2]) for (part, offset), key, value in
                      status_records(broker.bootstrap)
                      if offset > mark.get(part, -1) and value["state"] == "UNASSIGNED"}
        assert unassigned == set(range(TASKS))
        assert all("eager rebalance: stopping" in (tmp_path / f"{n}.log").read_text()
                   for n in ("a", "b", "c"))
    finally:
        for worker in workers:
            worker.kill()
