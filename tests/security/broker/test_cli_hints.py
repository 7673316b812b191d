"""What a user sees when security gets in the way: a hint at what probably happened, in one
line, instead of "Connection closed" or "topic does not exist"."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.broker.conftest import ADMIN, ADMIN_PW, SecuredBroker
from tests.security.certs import Pki

pytestmark = pytest.mark.compat


def streams(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def acl_broker(tmp_path: Path, pki: Pki) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "data", pki, **{
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN}"}).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL", "SASL_PLAINTEXT"])
def test_a_plaintext_client_on_a_secured_listener_is_told_why(acl_broker, listener) -> None:
    line = one_line(streams("topics", "list", "--bootstrap-servers",
                            acl_broker.address(listener)), 1)
    assert line.startswith(f"streams topics: cannot connect to a broker at "
                           f"{acl_broker.address(listener)}")
    assert ("the broker closed the connection during the handshake: does it expect "
            "security.protocol=SSL, SASL_SSL or SASL_PLAINTEXT? This client used PLAINTEXT"
            in line), line


def test_an_unauthorized_topic_is_not_only_missing(acl_broker, tmp_path) -> None:
    admin = tmp_path / "admin.properties"
    admin.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                     f'required username="{ADMIN}" password="{ADMIN_PW}";\n')
    as_admin = ("--bootstrap-servers", acl_broker.address("SASL_PLAINTEXT"),
                "--command-config", str(admin))
    assert streams("topics", "create", "hidden", *as_admin).returncode == 0
    anonymous = ("--bootstrap-servers", acl_broker.address("PLAINTEXT"))
    hint = ("topic 'hidden' does not exist, or is not authorized for User:ANONYMOUS (the broker "
            "has an authorizer)")
    assert one_line(streams("topics", "describe", "hidden", *anonymous), 1) == \
        f"streams topics: {hint}"
    assert one_line(streams("consume", "hidden", "--from-beginning", *anonymous), 1) == \
        f"streams consume: {hint}"
    # The administrator sees it: the topic is there.
    assert streams("topics", "describe", "hidden", *as_admin).returncode == 0


def test_scram_set_without_a_terminal_names_the_flag(acl_broker) -> None:
    line = one_line(streams("users", "scram-set", "bob", "--bootstrap-servers",
                            acl_broker.address("PLAINTEXT")), 2)
    assert line == ("streams users: no terminal to ask for the password on: pipe it in with "
                    "--password-stdin (or use --password-file, or $STREAMS_SCRAM_PASSWORD)")
