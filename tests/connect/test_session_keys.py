"""KIP-507 session keys are rotated: the leader writes a new key to the config topic every
``inter.worker.key.ttl.ms``, generated with ``inter.worker.key.generation.algorithm`` and
``inter.worker.key.size``; requests signed with a replaced key get 403 (as Kafka, only the
current key verifies), with an algorithm outside ``inter.worker.verification.algorithms`` 400.
Settings that contradict each other are refused at start, naming the key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import wait_until
from test_distributed import worker_properties
from test_rest_kafka_answers import fence
from worker_helpers import WorkerProcess, consume_all, http

from connect.runtime.session_key import SessionKey

pytestmark = pytest.mark.slow

TTL_MS = 2500
KEYS = {"inter.worker.key.ttl.ms": str(TTL_MS),
        "inter.worker.key.generation.algorithm": "HmacSHA512",
        "inter.worker.key.size": "512",
        "inter.worker.signature.algorithm": "HmacSHA512",
        "inter.worker.verification.algorithms": "HmacSHA512,HmacSHA256"}


def session_keys(bootstrap: str) -> list[SessionKey]:
    records = consume_all(bootstrap, "connect-configs", 1, timeout=10)
    return [key for r in records if r.key == b"session-key" and r.value
            for key in [SessionKey.from_record(json.loads(r.value))] if key is not None]


def test_the_leader_rotates_the_session_key(tmp_path: Path, broker) -> None:
    props, url = worker_properties(tmp_path, broker.bootstrap, "w")
    with props.open("a") as handle:
        handle.write("".join(f"{k}={v}\n" for k, v in KEYS.items()))
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "w.log", url).start()
    try:
        assert http("PUT", f"{url}/connectors/src/config", {
            "connector.class": "FileStreamSource", "topic": "t",
            "file": str(tmp_path / "in.txt")})[0] == 201
        keys = wait_until(lambda: (k := session_keys(broker.bootstrap)) and len(k) >= 3 and k,
                          60, interval=0.5, message="three session keys in the config topic")
        assert len({k.key for k in keys}) == len(keys)  # each one new
        assert all(k.algorithm == "HmacSHA512" and len(k.key) == 64 for k in keys)
        gaps = [b.created_ms - a.created_ms for a, b in zip(keys, keys[1:], strict=False)]
        assert all(gap >= TTL_MS for gap in gaps), gaps

        # A replaced key no longer verifies; the current one does, under either permitted
        # algorithm (a rotation may land between reading the key and the request: poll).
        old = keys[0]
        code, body = fence(url, old.sign(b"", "HmacSHA512"))
        assert (code, body.get("message")) == (403, "Internal request contained invalid "
                                                    "signature."), body

        def current_verifies(algorithm: str) -> bool:
            return fence(url, session_keys(broker.bootstrap)[-1].sign(b"", algorithm))[0] == 204

        wait_until(lambda: current_verifies("HmacSHA512"), 30, interval=0.2,
                   message="the current key verifying (HmacSHA512)")
        wait_until(lambda: current_verifies("HmacSHA256"), 30, interval=0.2,
                   message="the current key verifying (HmacSHA256)")
        code, body = fence(url, session_keys(broker.bootstrap)[-1].sign(b"", "HmacSHA1"))
        assert code == 400 and "does not support the 'HmacSHA1' key signing algorithm" in \
            body["message"], body
    finally:
        worker.stop()


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("inter.worker.signature.algorithm", "HmacSHA1",
     "Signature algorithm must be present in inter.worker.verification.algorithms list"),
    ("inter.worker.key.generation.algorithm", "HmacMD5", "inter.worker.key.generation.algorithm"),
    ("inter.worker.key.ttl.ms", "-1", "inter.worker.key.ttl.ms"),
    ("inter.worker.key.size", "12", "inter.worker.key.size"),
])
def test_inconsistent_key_settings_are_refused(tmp_path: Path, key: str, value: str,
                                               expected: str) -> None:
    props, _url = worker_properties(tmp_path, "127.0.0.1:1", "w")
    with props.open("a") as handle:
        handle.write(f"{key}={value}\n")
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                             str(props)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert expected in result.stderr and "Traceback" not in result.stderr, result.stderr
