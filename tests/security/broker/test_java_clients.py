"""Kafka's own Java clients (kafka-clients 4.4.0, the jars tests/reference prepares) against our
broker: an Admin over mutual TLS with a PEM keystore, then over SASL_SSL an Admin creates a SCRAM
user and ACLs and a producer and a consumer log in as that user (java/JavaClientsCheck.java, run
as a single-file source program)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import reference_unavailable
from tests.security.broker.conftest import ADMIN, ADMIN_PW, SecuredBroker
from tests.security.certs import Pki

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).parent / "java" / "JavaClientsCheck.java"


def _libs() -> Path:
    from tests.reference import kafka

    reason = reference_unavailable("the Java client check")
    if reason:
        pytest.skip(reason)
    return kafka.LIBS


def test_java_admin_producer_consumer_over_sasl_ssl(tmp_path: Path, pki: Pki) -> None:
    libs = _libs()
    broker = SecuredBroker(tmp_path / "data", pki, **{
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN}", "listener.name.ssl.ssl.client.auth": "required"}).start()
    try:
        result = subprocess.run(
            ["java", "-Xmx256m", "-cp", f"{libs}/*", str(SOURCE), broker.address("SASL_SSL"),
             str(pki.truststore), ADMIN, ADMIN_PW, broker.address("SSL"),
             str(pki.client.keystore)],
            capture_output=True, text=True, timeout=180)
    finally:
        broker.stop()
    lines = [line for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert lines[0] == "ok mtls nodes=1"
    assert lines[1] == "ok scram [ScramCredentialInfo{mechanism=SCRAM_SHA_256, iterations=8192}]"
    assert lines[2:] == ["ok acls 2", "ok produced", "ok consumed"]
