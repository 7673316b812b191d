"""`streams run` (bundled broker, --processes N) and `streams describe`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient
from helpers import wait_until

from .kafka_io import create_topics, latest_by_key, produce, read_all

APP = str(Path(__file__).with_name("wordcount_app.py"))
ROOT = Path(__file__).parents[2]


def _streams(*args: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "streams.cli.main", *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def _group_members(bootstrap: str, group: str) -> int:
    async def run() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            described = await admin.describe_consumer_groups([group])
            return len(described[0].groups[0][-1]) if described else 0
        finally:
            await admin.close()

    return asyncio.run(run())


def test_describe_prints_the_topology() -> None:
    out = subprocess.run([sys.executable, "-m", "streams.cli.main", "describe", APP],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.startswith("Topologies:")
    assert "Sub-topology: 1" in out and "cli-counts" in out
    mermaid = subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "describe", f"{APP}:build_topology",
         "--format", "mermaid"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "cli-text" in mermaid


def test_run_with_two_processes_in_one_group(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"cli-text": 4})
    produce(broker.bootstrap, "cli-text", [(b"k", b"a b a", 1), (b"j", b"c a", 2)])
    proc = _streams("run", APP, "--bootstrap-servers", broker.bootstrap, "--processes", "2",
                    "--state-dir", str(tmp_path / "state"), log=tmp_path / "run.log")
    try:
        read_all(broker.bootstrap, "cli-word-counts",
                 until=lambda rs: latest_by_key(rs) == {"a": 3, "b": 1, "c": 1})
        wait_until(lambda: _group_members(broker.bootstrap, "cli-wordcount") == 2,
                   timeout=60, message="two members in the group")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, (tmp_path / "run.log").read_text()


def test_run_starts_the_bundled_broker(tmp_path) -> None:
    state = tmp_path / "state"
    proc = _streams("run", APP, "--state-dir", str(state), log=tmp_path / "run.log")
    try:
        port_file = state / "broker" / "port"
        wait_until(port_file.exists, timeout=60, message="bundled broker")
        bootstrap = f"127.0.0.1:{port_file.read_text().strip()}"
        log = tmp_path / "run.log"
        wait_until(lambda: "running cli-wordcount" in log.read_text(), timeout=60,
                   message="app running")
        produce(bootstrap, "cli-text", [(b"k", b"x y x", 1)])
        read_all(bootstrap, "cli-word-counts",
                 until=lambda rs: latest_by_key(rs) == {"x": 2, "y": 1})
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    output = (tmp_path / "run.log").read_text()
    assert "started the bundled broker" in output and "created input topic(s) cli-text" in output
    # The defaults a newcomer meets are said where they apply: Kafka's port when it is free
    # (else the exact --bootstrap-servers other commands need), where state lives.
    started = next(line for line in output.splitlines() if "started the bundled broker" in line)
    assert f"on {bootstrap} (data in {state / 'broker'}" in started
    if bootstrap != "127.0.0.1:9092":
        assert started.endswith(f"other commands need --bootstrap-servers {bootstrap}")
    assert f"state in {state / 'cli-wordcount'}" in output
    assert not port_file.exists()  # the bundled broker was stopped with the app
