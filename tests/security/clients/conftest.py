"""A secured Apache Kafka 4.4.0 for the client-side security tests (one JVM per session).

Listeners: PLAINTEXT (the test's own admin door: ``User:ANONYMOUS`` is a super user there) and
SASL_SSL with PLAIN and SCRAM-SHA-256/512, a PEM server certificate from tests/security/certs.py,
and the StandardAuthorizer with ``allow.everyone.if.no.acl.found=false``, so a principal can do
only what its ACLs allow. Users: ``admin`` (super user), ``app`` and ``worker`` (restricted).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, reference_unavailable

from security.certs import Pki, make_pki

# tests/connect's worker helpers (a module of that folder, not of a package)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "connect"))

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PASSWORDS = {"admin": "admin-pw-5e5e", "app": "app-pw-7f7f", "worker": "worker-pw-9a9a"}


@dataclass
class SecureKafka:
    plaintext: str  # bootstrap of the PLAINTEXT listener (ANONYMOUS, a super user)
    sasl_ssl: str  # bootstrap of the SASL_SSL listener
    pki: Pki
    ssl: str = ""  # bootstrap of the SSL listener (mutual TLS: ssl.client.auth=required)

    def client_props(self, user: str, mechanism: str = "SCRAM-SHA-512",
                     password: str | None = None) -> dict[str, str]:
        """Kafka client properties for ``user`` on the SASL_SSL listener."""
        module = PLAIN if mechanism == "PLAIN" else SCRAM
        secret = PASSWORDS[user] if password is None else password
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{secret}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.pki.truststore),
        }

    def properties_file(self, path: Path, user: str, mechanism: str = "SCRAM-SHA-512") -> Path:
        """The same as a .properties file (what --command-config and workers read)."""
        lines = [f"{k}={v}" for k, v in self.client_props(user, mechanism).items()]
        path.write_text("\n".join(lines) + "\n")
        return path


def _server_properties(pki: Pki) -> dict[str, str]:
    """The same server.properties for Apache Kafka and for our broker."""
    plain_users = " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items())
    return {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            f'{PLAIN} required username="admin" password="{PASSWORDS["admin"]}" {plain_users};',
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": f"{SCRAM} required;",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": f"{SCRAM} required;",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.truststore),
        "listener.name.ssl.ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "allow.everyone.if.no.acl.found": "false",
    }


def _add_scram_users(bootstrap: str) -> None:
    """SCRAM credentials through AlterUserScramCredentials (what kafka-configs.sh sends)."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), pw.encode())
               for user, pw in PASSWORDS.items()
               for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)


@pytest.fixture(scope="session", params=["reference", "ours"])
def secure_kafka(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """Apache Kafka 4.4.0 and our broker, configured alike (one of each per session)."""
    base = tmp_path_factory.mktemp(f"secure-{request.param}")
    pki = make_pki(base / "pki")
    sasl_port, ssl_port = free_port(), free_port()
    node: Any
    if request.param == "ours":
        from helpers import EmbeddedBroker

        plain_port = free_port()
        node = EmbeddedBroker(base / "data", port=plain_port, **_server_properties(pki), **{
            "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_SSL://127.0.0.1:{sasl_port},"
                         f"SSL://127.0.0.1:{ssl_port}"})
        node.overrides.pop("port", None)  # the listeners say it
        node.start()
        _add_scram_users(node.bootstrap)
    else:
        reason = reference_unavailable()
        if reason:
            pytest.skip(reason)
        from reference import kafka

        scram = [arg for user, pw in PASSWORDS.items()
                 for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                 for arg in ("--add-scram", f"{mech}=[name={user},password={pw}]")]
        node = kafka.KafkaNode(free_port(), base / "data", extra=_server_properties(pki),
                               format_args=scram,
                               listeners={"SASL_SSL": sasl_port, "SSL": ssl_port}).start()
    try:
        yield SecureKafka(node.bootstrap, f"127.0.0.1:{sasl_port}", pki, f"127.0.0.1:{ssl_port}")
    finally:
        node.stop()
        shutil.rmtree(base / "pki", ignore_errors=True)


def create_acls(bootstrap: str, acls: list[tuple[str, str, str, str, str]]) -> None:
    """(resource type, name, pattern, principal, operation) ALLOW entries, through the
    PLAINTEXT listener with confluent-kafka's admin client."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    bindings = [AclBinding(ResourceType[rtype], name, ResourcePatternType[pattern], principal,
                           "*", AclOperation[op], AclPermissionType.ALLOW)
                for rtype, name, pattern, principal, op in acls]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        future.result(timeout=30)
