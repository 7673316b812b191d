"""`python tests/reference/kafka.py start` as acceptance checks call it: ready line, SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from helpers import free_port

from . import kafka
from .wire import api_versions


def test_start_prints_one_ready_line_and_stops_on_sigterm(
        reference_kafka: kafka.KafkaNode, tmp_path: Path) -> None:
    """Needs the prepared jars (the fixture's skip applies); starts a second node of its own."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(kafka.__file__)), "start", "--port", str(port),
         "--data-dir", str(tmp_path / "kafka")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the launcher's own deadline bounds this read
        assert line.startswith(f"Apache Kafka {kafka.kafka_version()} ready on 127.0.0.1:{port}")
        assert 3 in api_versions(f"127.0.0.1:{port}")  # it answers the Kafka protocol
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
