"""Task configs reach the config topic through the leader in every mode, as Kafka's
DistributedHerder: a connector running on another worker hands them to the leader over the
internal ``POST /connectors/{name}/tasks`` (signed under ``sessioned``), which writes them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, consume_all, http, wait_running

pytestmark = pytest.mark.slow

RECORDS = 200


def _leader(log: Path) -> str | None:
    found = re.findall(r"\(leader (http://[^)]+)\)", log.read_text())
    return found[-1] if found else None


@pytest.mark.parametrize("protocol", ["eager", "sessioned"])
def test_a_followers_connector_hands_its_task_configs_to_the_leader(
        tmp_path: Path, broker, protocol: str) -> None:
    workers = {}
    try:
        for name in ("a", "b"):
            props, url = worker_properties(tmp_path, broker.bootstrap, name)
            with open(props, "a") as handle:
                handle.write(f"connect.protocol={protocol}\n")
            workers[url] = (WorkerProcess(["distributed", str(props)], tmp_path / f"{name}.log",
                                          url).start(), tmp_path / f"{name}.log")
        url_a = next(iter(workers))
        for i in range(2):  # one connector lands on each worker
            config = {"connector.class": "DataGen", "quickstart": "orders",
                      "kafka.topic": f"orders-{i}", "tasks.max": "1",
                      "iterations": str(RECORDS)}
            assert http("PUT", f"{url_a}/connectors/gen-{i}/config", config)[0] == 201
        for i in range(2):
            wait_running(url_a, f"gen-{i}", 1)
        owners = {i: http("GET", f"{url_a}/connectors/gen-{i}/status")[1]["connector"][
            "worker_id"] for i in range(2)}
        assert len(set(owners.values())) == 2, owners
        leader = _leader(workers[url_a][1])
        assert leader in workers, leader
        follower = next(url for url in workers if url != leader)
        on_follower = next(i for i, owner in owners.items() if follower.endswith(owner))

        wait_until(lambda: f"forwarding 1 task configs of connector gen-{on_follower} to the "
                   f"leader {leader}" in workers[follower][1].read_text(), 30,
                   message="the follower forwarding its connector's task configs")
        assert f"writing 1 task configs of connector gen-{on_follower} forwarded by another " \
               "worker" in workers[leader][1].read_text()
        records = consume_all(broker.bootstrap, f"orders-{on_follower}", RECORDS)
        assert sorted(json.loads(r.value)["orderid"] for r in records) == \
            list(range(1, RECORDS + 1))
    finally:
        for process, _log in workers.values():
            process.stop()
