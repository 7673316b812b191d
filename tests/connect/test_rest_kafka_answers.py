"""REST answers as Kafka Connect gives them (or, where Kafka's is a bug, a clear 400; see
docs/kafka-differences.md), and signed internal requests (KIP-507), against two distributed
workers in separate processes. (Signed requests in use: the exactly-once tests' fencing.)"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from worker_helpers import WorkerProcess, consume_all, http

from connect.runtime.session_key import SessionKey
from streams import __version__

pytestmark = pytest.mark.slow


def put_raw(url: str, body: bytes, content_type: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="PUT",
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def fence(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}/connectors/src/fence", data=b"", method="PUT",
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_rest_answers_and_signed_internal_requests(tmp_path: Path, broker) -> None:
    workers = []
    try:
        for name in ("a", "b"):
            props, url = worker_properties(tmp_path, broker.bootstrap, name)
            workers.append(WorkerProcess(["distributed", str(props)], tmp_path / f"{name}.log",
                                         url).start())
        a, b = (w.url for w in workers)
        sink = {"connector.class": "FileStreamSink", "topics": "t", "tasks.max": "1",
                "file": str(tmp_path / "out.txt")}

        # Ten concurrent identical PUTs (through both workers): one creates it, nine update.
        codes: list[int] = []

        def put(url: str) -> None:
            codes.append(http("PUT", f"{url}/connectors/cc/config", sink)[0])

        threads = [threading.Thread(target=put, args=(a if i % 2 else b,)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(codes) == [200] * 9 + [201], codes

        # A nested object or array value: a clear 400 (Kafka: a 500 from its JSON mapper).
        for value, kind in (({"a": 1}, "an object"), ([1, 2], "an array")):
            code, body = http("PUT", f"{a}/connectors/nested/config", {**sink, "extra": value})
            assert code == 400 and f"'extra' is {kind}" in body["message"], body
        code, body = http("PATCH", f"{a}/connectors/cc/config", {"extra": {"a": 1}})
        assert code == 400, body

        # A name too long to address afterwards is refused (Kafka creates it, then answers
        # 414 to every request naming it).
        code, body = http("POST", f"{b}/connectors", {"name": "n" * 10000, "config": sink})
        assert code == 400 and "too long" in body["message"], body
        assert http("GET", f"{a}/connectors")[1] == ["cc"]

        # Only JSON bodies (Kafka: 415).
        code, body = put_raw(f"{a}/connectors/tp/config", json.dumps(sink).encode(),
                             "text/plain")
        assert (code, body["message"]) == (415, "HTTP 415 Unsupported Media Type")

        code, body = http("PUT", f"{b}/connectors/bad/config", {**sink, "tasks.max": "abc"})
        assert code == 400
        assert "Invalid value abc for configuration tasks.max: Not a number of type INT" \
            in body["message"], body

        # Status bodies carry the connector's and each task's version (Kafka 4.x).
        def versions() -> bool:
            code, status = http("GET", f"{b}/connectors/cc/status")  # 404 until a status
            return code == 200 and status["connector"].get("version") == __version__ and bool(
                status["tasks"]) and all(t.get("version") == __version__
                                         for t in status["tasks"]) and all(
                t["state"] == "RUNNING" for t in status["tasks"])

        wait_until(versions, 60, message="versions in the status")
        # The other worker reads the same status from the status topic, maybe a moment later;
        # until it has, it answers Kafka's 404 (it used to invent an UNASSIGNED naming itself,
        # without a version).
        wait_until(lambda: http("GET", f"{a}/connectors/cc/tasks/0/status")[1].get("version")
                   == __version__, 30, message="the version on the other worker")
        code, body = http("GET", f"{a}/connectors/cc/tasks/7/status")
        assert (code, body["message"]) == (404, "Unknown task cc-7"), body

        # connect.protocol=sessioned (KIP-507): internal requests are signed with the session
        # key the leader wrote to the config topic; unsigned or forged ones get Kafka's answers.
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
