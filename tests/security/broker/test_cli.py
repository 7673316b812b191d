"""The user's path: `streams broker start --config server.properties` with listeners, SASL and
an authorizer (no --port), then `streams users` and `streams acls` with --command-config."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import free_port, wait_until
from tests.security.broker.clients import aiokafka_roundtrip, aiokafka_settings
from tests.security.broker.conftest import ADMIN, ADMIN_PW, JAAS, SecuredBroker
from tests.security.certs import Pki

pytestmark = pytest.mark.compat


def streams(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, object]]:
    plain, sasl = free_port(), free_port()
    properties = tmp_path / "server.properties"
    properties.write_text("\n".join([
        f"listeners=INTERNAL://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,CLIENTS:SASL_PLAINTEXT",
        "inter.broker.listener.name=INTERNAL",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        f"listener.name.clients.plain.sasl.jaas.config={JAAS}",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        f"super.users=User:{ADMIN};User:ANONYMOUS",
        f"data.dir={tmp_path / 'data'}",
        "group.initial.rebalance.delay.ms=0",
    ]) + "\n")
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{ADMIN}" password="{ADMIN_PW}";\n')
    log = open(tmp_path / "broker.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "streams.cli.main", "broker", "start",
                             "--config", str(properties)], stdout=log, stderr=subprocess.STDOUT)

    def accepting() -> bool:
        assert proc.poll() is None, (tmp_path / "broker.log").read_text()
        try:
            with socket.create_connection(("127.0.0.1", sasl), timeout=0.5):
                return True
        except OSError:
            return False

    try:
        wait_until(accepting, 30, message="broker with listeners")
        yield {"sasl": f"127.0.0.1:{sasl}", "plain": f"127.0.0.1:{plain}",
               "admin_config": str(admin_config), "log": tmp_path / "broker.log",
               "properties": properties}
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_broker_start_with_listeners_users_and_acls(cluster: dict[str, object]) -> None:
    sasl, admin_config = str(cluster["sasl"]), str(cluster["admin_config"])
    common = ["--bootstrap-servers", sasl, "--command-config", admin_config]
    started = Path(str(cluster["log"])).read_text()
    assert "INTERNAL://127.0.0.1" in started and "CLIENTS://127.0.0.1" in started

    made = streams("users", "scram-set", "erin", "--mechanism", "SCRAM-SHA-256",
                   "--password-stdin", *common, stdin="erin-secret\n")
    assert made.returncode == 0, made.stderr
    assert "erin-secret" not in made.stdout + made.stderr
    described = streams("users", "describe", *common)
    assert described.returncode == 0 and "erin: SCRAM-SHA-256 iterations=4096" in \
        described.stdout, described

    settings = aiokafka_settings("SASL_PLAINTEXT", None, "SCRAM-SHA-256", "erin", "erin-secret")
    with pytest.raises(Exception, match="[Aa]uthoriz"):  # authenticated, but no ACL yet
        aiokafka_roundtrip(sasl, settings, "erin-orders")

    for args in (["--topic", "erin-", "--resource-pattern-type", "prefixed",
                  "--operation", "all"],
                 ["--group", "g-", "--resource-pattern-type", "prefixed", "--operation",
                  "read"]):
        added = streams("acls", "add", "--allow-principal", "User:erin", *args, *common)
        assert added.returncode == 0, added.stderr
    listed = streams("acls", "list", "--principal", "User:erin", *common)
    assert listed.returncode == 0
    assert "ALLOW User:erin ALL from host * on TOPIC:PREFIXED:erin-" in listed.stdout
    assert "ALLOW User:erin READ from host * on GROUP:PREFIXED:g-" in listed.stdout
    assert aiokafka_roundtrip(sasl, settings, "erin-orders")

    removed = streams("acls", "remove", "--group", "g-", *common)
    assert removed.returncode == 0 and "removed ALLOW User:erin READ" in removed.stdout
    refused = streams("acls", "list", "--bootstrap-servers", sasl, "--command-config",
                      str(cluster["admin_config"]).replace("admin", "nobody"))
    assert refused.returncode != 0

    gone = streams("users", "delete", "erin", *common)
    assert gone.returncode == 0, gone.stderr
    missing = streams("users", "describe", "erin", *common)
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_port_and_listeners_are_exclusive(cluster: dict[str, object]) -> None:
    both = streams("broker", "start", "--config", str(cluster["properties"]), "--port", "1")
    assert both.returncode == 2 and "listeners" in both.stderr


def test_first_scram_user_written_offline(tmp_path: Path, pki: Pki) -> None:
    """A SCRAM-only cluster's first user, written into the data directory before the broker
    starts (what kafka-storage format --add-scram does for Kafka)."""
    data = tmp_path / "data"
    data.mkdir()
    made = streams("users", "scram-set", "root", "--mechanism", "SCRAM-SHA-512",
                   "--data-dir", str(data), "--password-stdin", stdin="root-secret\n")
    assert made.returncode == 0, made.stderr
    too_few = streams("users", "scram-set", "x", "--iterations", "100", "--data-dir", str(data),
                      "--password-stdin", stdin="x\n")
    assert too_few.returncode == 2 and "4096" in too_few.stderr
    broker = SecuredBroker(data, pki, **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}).start()
    try:
        settings = aiokafka_settings("SASL_SSL", pki.truststore, "SCRAM-SHA-512", "root",
                                     "root-secret")
        assert aiokafka_roundtrip(broker.address("SASL_SSL"), settings, "offline-user")
    finally:
        broker.stop()
