"""A zombie leader cannot change the cluster's configuration (KIP-618, as Kafka with
``exactly.once.source.support=enabled``): the leader writes the config topic through a
transactional producer (``transactional.id`` ``connect-cluster-${group.id}``); a new leader's
claim fences the old one, whose writes then fail and never reach ``read_committed`` readers.

The writer itself against a real broker, and two worker processes: the leader is paused past
its session timeout, the other takes over, and a write sent to the paused leader fails."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import create_topics, wait_until
from test_exactly_once import read_committed, worker_properties
from worker_helpers import WorkerProcess, http

from connect.runtime.config import WorkerConfig
from connect.runtime.config_writer import FencedConfigWriter, PrivilegedWriteError

pytestmark = pytest.mark.slow


def test_a_newer_leaders_claim_fences_the_older_writer(broker) -> None:
    create_topics(broker.bootstrap, {"cfg": 1})
    config = WorkerConfig.parse({"bootstrap.servers": broker.bootstrap, "group.id": "g",
                                 "exactly.once.source.support": "enabled"})

    async def run() -> None:
        old, new = FencedConfigWriter(config, "cfg"), FencedConfigWriter(config, "cfg")
        await old.claim()
        await old.send([("connector-a", {"properties": {"x": "1"}})])
        await new.claim()  # InitProducerId of connect-cluster-g: the old writer is fenced
        with pytest.raises(PrivilegedWriteError):
            await old.send([("connector-b", {"properties": {"x": "2"}}),
                            ("commit-b", {"tasks": 0})])
        assert not old.claimed  # privileges given up
        with pytest.raises(PrivilegedWriteError):
            await old.send([("connector-c", None)])
        await new.send([("connector-d", {"properties": {}})])
        await new.relinquish()

    asyncio.run(run())
    keys = [r.key.decode() for r in read_committed(broker.bootstrap, "cfg", 2, timeout=20)]
    assert keys == ["connector-a", "connector-d"]


def test_a_paused_leaders_write_is_fenced(tmp_path: Path, broker) -> None:
    props_a, url_a = worker_properties(tmp_path, broker.bootstrap, "a")
    a = WorkerProcess(["distributed", str(props_a)], tmp_path / "a.log", url_a).start()
    props_b, url_b = worker_properties(tmp_path, broker.bootstrap, "b")
    b = WorkerProcess(["distributed", str(props_b)], tmp_path / "b.log", url_b).start()
    paused = False
    answers: list[tuple[int, Any]] = []
    try:
        sink = {"connector.class": "FileStreamSink", "topics": "t",
                "file": str(tmp_path / "out.txt")}
        assert http("PUT", f"{url_b}/connectors/first/config", sink)[0] == 201
        assert "claimed write privileges" in (tmp_path / "a.log").read_text()  # a leads
        assert a.proc is not None
        os.kill(a.proc.pid, signal.SIGSTOP)
        paused = True
        wait_until(lambda: "claimed write privileges" in (tmp_path / "b.log").read_text(), 60,
                   interval=0.2, message="b leading and claiming the config topic")
        # Sent to the paused leader, which still believes it leads when it wakes up.
        caller = threading.Thread(target=lambda: answers.append(http(
            "PUT", f"{url_a}/connectors/zombie/config?forward=false", sink)), daemon=True)
        caller.start()
        wait_until(lambda: _queued(url_a), 10, interval=0.1, message="the request queued")
        os.kill(a.proc.pid, signal.SIGCONT)
        paused = False
        caller.join(90)
        assert answers, "no answer from the former leader"
        code, body = answers[0]
        assert code == 500 and "Failed to write to config topic" in body["message"], answers
        # Nobody sees the zombie's write; the cluster goes on under its new leader.
        records = read_committed(broker.bootstrap, "eos-configs", 1, timeout=20)
        assert not [r for r in records if r.key == b"connector-zombie"]
        assert http("GET", f"{url_b}/connectors")[1] == ["first"]
        code, body = http("PUT", f"{url_a}/connectors/second/config", sink)  # forwarded to b
        assert code == 201, body
        wait_until(lambda: http("GET", f"{url_a}/connectors")[1] == ["first", "second"], 30,
                   message="both connectors seen by the former leader")
        assert json.dumps(http("GET", f"{url_b}/connectors/second/config")[1])
    finally:
        if paused and a.proc is not None:
            os.kill(a.proc.pid, signal.SIGCONT)
        b.stop()
        a.stop()


def _queued(url: str) -> bool:
    """The request has reached the paused worker's listening socket (the kernel accepted the
    connection; the process reads it when it resumes)."""
    port = int(url.rsplit(":", 1)[1])
    with open("/proc/net/tcp") as table:
        lines = table.read().splitlines()[1:]
    # State 01 = ESTABLISHED on the server side of our port.
    return any(int(line.split()[1].split(":")[1], 16) == port and line.split()[3] == "01"
               for line in lines)
