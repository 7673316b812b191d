"""Mutual TLS from the client side: a PEM keystore (file, inline, encrypted key) authenticates
the runtime's clients on an SSL listener with ssl.client.auth=required; none is refused."""

from __future__ import annotations

import pytest
from aiokafka.errors import KafkaError
from helpers import list_topics
from runtime.kafka_io import create_topics

from security.certs import make_pki
from streams.runtime import StreamsConfig

from .conftest import SecureKafka, create_acls


def describe_topics(bootstrap: str, props: dict[str, str]) -> list[str]:
    config = StreamsConfig.from_mapping({"application.id": "mtls", "request.timeout.ms": 10_000,
                                         "bootstrap.servers": bootstrap, **props})
    kwargs = config.client_kwargs("admin")
    return list_topics(kwargs.pop("bootstrap_servers"), **kwargs)


def test_client_certificate_from_a_file_and_inline(secure_kafka: SecureKafka, tmp_path) -> None:
    pki = secure_kafka.pki
    create_topics(secure_kafka.plaintext, {"mtls-visible": 1})
    # The certificate's subject is the principal (Kafka's default principal builder).
    create_acls(secure_kafka.plaintext, [
        ("TOPIC", "mtls-visible", "LITERAL", f"User:{pki.client.subject}", "DESCRIBE")])
    base = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.truststore)}
    from_file = {**base, "ssl.keystore.type": "PEM",
                 "ssl.keystore.location": str(pki.client.keystore)}
    inline = {**base, "ssl.keystore.type": "PEM", "ssl.keystore.key": pki.client.key_pem,
              "ssl.keystore.certificate.chain": pki.client.chain_pem}
    for props in (from_file, inline):
        assert "mtls-visible" in describe_topics(secure_kafka.ssl, props)
    # A certificate from another CA, and no certificate at all, are refused.
    stranger = make_pki(tmp_path / "stranger", key_password="k-pw")
    refused = {**base, "ssl.keystore.location": str(stranger.client.keystore),
               "ssl.key.password": "k-pw"}
    for props in (refused, base):
        with pytest.raises((KafkaError, OSError)):
            describe_topics(secure_kafka.ssl, props)
