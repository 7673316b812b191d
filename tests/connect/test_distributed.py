"""`streams connect distributed`: two workers share tasks; SIGKILL one and the other takes over."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port, wait_until
from worker_helpers import WorkerProcess, consume_all, http

pytestmark = pytest.mark.slow


def worker_properties(tmp_path: Path, bootstrap: str, name: str) -> tuple[Path, str]:
    port = free_port()
    path = tmp_path / f"{name}.properties"
    path.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "group.id=connect-cluster\n"
        "config.storage.topic=connect-configs\n"
        "offset.storage.topic=connect-offsets\n"
        "status.storage.topic=connect-status\n"
        "config.storage.replication.factor=1\n"
        "offset.storage.replication.factor=1\n"
        "status.storage.replication.factor=1\n"
        "offset.storage.partitions=5\n"
        "status.storage.partitions=2\n"
        "offset.flush.interval.ms=200\n"
        "session.timeout.ms=6000\n"
        "heartbeat.interval.ms=500\n"
        # A dead worker's tasks move after 3 s (Kafka's default waits 5 minutes for it).
        "scheduled.rebalance.max.delay.ms=3000\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter.schemas.enable=false\n")
    return path, f"http://127.0.0.1:{port}"


def task_workers(url: str, name: str) -> dict[int, str]:
    code, status = http("GET", f"{url}/connectors/{name}/status")
    if code != 200:
        return {}
    return {t["id"]: t["worker_id"] for t in status["tasks"] if t["state"] == "RUNNING"}


def test_two_workers_share_tasks_and_survive_sigkill(tmp_path: Path, broker) -> None:
    props_a, url_a = worker_properties(tmp_path, broker.bootstrap, "a")
    props_b, url_b = worker_properties(tmp_path, broker.bootstrap, "b")
    a = WorkerProcess(["distributed", str(props_a)], tmp_path / "a.log", url_a).start()
    b = None
    try:
        b = WorkerProcess(["distributed", str(props_b)], tmp_path / "b.log", url_b).start()
        total = 3000
        config = {"connector.class": "DataGen", "quickstart": "orders", "kafka.topic": "orders",
                  "tasks.max": "2", "iterations": str(total), "max.rate": "300"}
        # Either worker accepts the request: a follower forwards it to the leader.
        code, body = http("PUT", url_b + "/connectors/gen/config", config)
        assert code == 201, body
        assert http("GET", url_a + "/connectors")[1] == ["gen"]
        ids_a, ids_b = url_a.removeprefix("http://"), url_b.removeprefix("http://")
        wait_until(lambda: set(task_workers(url_a, "gen").values()) == {ids_a, ids_b}, 60,
                   message="the two tasks on the two workers")
        # Statuses reach each worker through the status topic: B may see them a moment later.
        wait_until(lambda: task_workers(url_b, "gen") == task_workers(url_a, "gen"), 30,
                   message="both workers report the same task placement")

        # Both workers answer reads and forward writes.
        code, body = http("PUT", url_a + "/connectors/gen/pause")
        assert code == 202
        wait_until(lambda: http("GET", url_b + "/connectors/gen/status")[1]["connector"]["state"]
                   in ("PAUSED",), 30, message="paused seen by the other worker")
        assert http("PUT", url_b + "/connectors/gen/resume")[0] == 202
        wait_until(lambda: len(task_workers(url_a, "gen")) == 2, 30, message="resumed")

        wait_until(lambda: http("GET", url_a + "/connectors/gen/offsets")[1]["offsets"], 60,
                   message="offsets committed")
        b.kill()
        wait_until(lambda: task_workers(url_a, "gen") == {0: ids_a, 1: ids_a}, 90,
                   message="both tasks on the surviving worker")

        def order_ids() -> set[int]:
            records = consume_all(broker.bootstrap, "orders", total, timeout=30)
            return {json.loads(r.value)["orderid"] for r in records}

        # Nothing lost (a crash may repeat some records, never drop one).
        wait_until(lambda: order_ids() == set(range(1, total + 1)), 120, interval=1.0,
                   message="every order id in the topic")

        # The rest of the lifecycle goes through the config topic too.
        code, body = http("POST", url_a + "/connectors/gen/restart?includeTasks=true")
        assert code == 202 and body["connector"]["state"] == "RESTARTING"
        wait_until(lambda: len(task_workers(url_a, "gen")) == 2, 60, message="restarted")
        assert http("POST", url_a + "/connectors/gen/tasks/1/restart")[0] == 204
        assert http("PUT", url_a + "/connectors/gen/stop")[0] == 204
        wait_until(lambda: http("GET", url_a + "/connectors/gen/status")[1]["connector"]["state"]
                   == "STOPPED", 30, message="stopped")
        code, offsets = http("GET", url_a + "/connectors/gen/offsets")
        assert sum(o["offset"]["count"] for o in offsets["offsets"]) == total
        code, body = http("DELETE", url_a + "/connectors/gen/offsets")
        assert code == 200
        assert http("GET", url_a + "/connectors/gen/offsets")[1] == {"offsets": []}
        assert http("DELETE", url_a + "/connectors/gen")[0] == 204
        assert http("GET", url_a + "/connectors") == (200, [])
    finally:
        if b is not None:
            b.stop()
        a.stop()


def test_config_topic_must_have_one_partition(tmp_path: Path, broker) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("connect-configs", 3, 1)])
        finally:
            await admin.close()

    asyncio.run(create())
    props, _url = worker_properties(tmp_path, broker.bootstrap, "a")
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                             str(props)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "single partition" in result.stderr and "connect-configs" in result.stderr

    missing = tmp_path / "missing.properties"
    missing.write_text(f"bootstrap.servers={broker.bootstrap}\ngroup.id=g\n")
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                             str(missing)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "config.storage.topic" in result.stderr
