"""Fixtures for the broker's security tests: a test PKI and a broker with secured listeners."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import EmbeddedBroker, free_port
from tests.security.certs import Pki, make_pki

ADMIN, ADMIN_PW = "admin", "admin-secret"
ALICE, ALICE_PW = "alice", "alice-secret"
EVE, EVE_PW = "eve", "eve-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="{ADMIN}" password="{ADMIN_PW}" user_{ADMIN}="{ADMIN_PW}" '
        f'user_{ALICE}="{ALICE_PW}" user_{EVE}="{EVE_PW}";')


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


class SecuredBroker(EmbeddedBroker):
    """An embedded broker with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners on fixed
    free ports (so a restart keeps them)."""

    def __init__(self, data_dir: Path, pki: Pki, **overrides: Any) -> None:
        self.ports = {name: free_port() for name in
                      ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        listeners = ",".join(f"{n}://127.0.0.1:{p}" for n, p in self.ports.items())
        settings: dict[str, Any] = {
            "listeners": listeners,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.truststore),
            "ssl.client.auth": "requested",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            **overrides,
        }
        super().__init__(data_dir, port=self.ports["PLAINTEXT"], **settings)
        self.overrides.pop("port", None)

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture
def secured(tmp_path: Path, pki: Pki) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "data", pki).start()
    try:
        yield broker
    finally:
        broker.stop()
