"""SIGTERM while requests are still in flight: long-polling ShareFetch requests whose MaxWaitMs
is days. The broker closes their connections and exits 0, with nothing but its
usual lines in the log (fuzzing the share-group seeds found shutdowns that logged
CancelledError tracebacks from the connections the stop had not ended, and some that needed
SIGKILL)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import uuid
from pathlib import Path

import pytest
from helpers import BrokerProcess, create_topics

from tests.fuzz.group_seeds import request_payload

DAYS_MS = 2**31 - 1


def _open(bootstrap: str, *payloads: bytes) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(b"".join(struct.pack(">i", len(p)) + p for p in payloads))
    return sock


def test_sigterm_with_long_polls_in_flight_exits_cleanly(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    clients: list[socket.socket] = []
    try:
        create_topics(broker.bootstrap, {"idle": 1})
        host, port = broker.bootstrap.rsplit(":", 1)
        from tests.fuzz.group_seeds import Connection

        with Connection((host, int(port))) as c:
            topic_id = uuid.UUID(c.send(3, 12, {"topics": [{"name": "idle", "topic_id": None}],
                                                "allow_auto_topic_creation": False}
                                        )["topics"][0]["topic_id"])
            joined = c.send(76, 1, {"group_id": "sg", "member_id": "m1", "member_epoch": 0,
                                    "subscribed_topic_names": ["idle"]})
            assert joined["error_code"] == 0
        share_fetch = request_payload(78, 1, 1, {
            "group_id": "sg", "member_id": "m1", "share_session_epoch": 0,
            "max_wait": DAYS_MS, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10,
            "batch_size": 10, "topics": [{"topic_id": topic_id, "partitions": [
                {"partition_index": 0, "acknowledgement_batches": []}]}]})
        for _ in range(5):
            clients.append(_open(broker.bootstrap, share_fetch))
        for sock in clients:  # each long poll is parked: no answer, connection open
            sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                sock.recv(1)
        assert broker.proc is not None
        broker.proc.send_signal(signal.SIGTERM)
        try:
            code = broker.proc.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, "the broker did not exit on SIGTERM"
        log = broker.log_path.read_text(errors="replace")
        assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]
        assert "broker stopped" in log
    finally:
        for sock in clients:
            sock.close()
        broker.stop()
