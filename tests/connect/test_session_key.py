"""connect.protocol=sessioned (KIP-507): internal requests between workers are signed with the
session key the leader writes to the config topic; unsigned or wrongly signed ones are refused
with Kafka's answers. (Signed requests in use: the exactly-once tests' fencing rounds.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, consume_all, http

from connect.runtime.session_key import SessionKey

pytestmark = pytest.mark.slow


def fence(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}/connectors/src/fence", data=b"", method="PUT",
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_internal_requests_are_signed(tmp_path: Path, broker) -> None:
    workers = []
    try:
        for name in ("a", "b"):
            props, url = worker_properties(tmp_path, broker.bootstrap, name)
            workers.append(WorkerProcess(["distributed", str(props)], tmp_path / f"{name}.log",
                                         url).start())
        a, b = (w.url for w in workers)
        code, _ = http("PUT", f"{a}/connectors/src/config", {
            "connector.class": "FileStreamSource", "topic": "t",
            "file": str(tmp_path / "in.txt")})
        assert code == 201

        def key() -> SessionKey | None:
            records = [r for r in consume_all(broker.bootstrap, "connect-configs", 1)
                       if r.key == b"session-key" and r.value]
            return SessionKey.from_record(json.loads(records[-1].value)) if records else None

        session = wait_until(key, 60, message="the leader's session key in the config topic")
        for url in (a, b):  # a follower forwards the request, signature included
            code, body = fence(url, {})
            assert (code, body.get("message")) == (
                400, "Internal request missing required signature"), body
            forged = SessionKey(b"x" * 32, session.algorithm, 0).sign(b"")
            code, body = fence(url, forged)
            assert (code, body.get("message")) == (
                403, "Internal request contained invalid signature."), body
            code, body = fence(url, session.sign(b""))
            assert code == 204, body  # verified; the fencing round ran
    finally:
        for worker in workers:
            worker.stop()
