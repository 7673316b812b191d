"""Security admin requests built wrong on purpose (a raw client, no library to tidy them up):
SCRAM credentials with an empty name, an unknown mechanism or out-of-range iterations; ACLs with unknown or empty fields. Each gets Kafka's error for that entry,
nothing is stored, and the broker goes on serving. A DeleteAcls filter with UNKNOWN (0) codes
closes the connection, as Kafka's request parser does."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import EmbeddedBroker

from tests.integration.test_hostile_produce import RawClient

UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM, INVALID_REQUEST = 93, 33, 42
API_VERSIONS, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 18, 29, 30, 31
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51


@pytest.fixture
def broker(tmp_path: Path):
    node = EmbeddedBroker(
        tmp_path / "data", authorizer_class_name=(
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
        super_users="User:ANONYMOUS").start()
    try:
        yield node
    finally:
        node.stop()


def ask(client: RawClient, key: int, version: int, body: dict) -> object:
    client.send(key, version, body)
    return client.receive()


def test_bad_scram_credentials_are_refused_one_by_one(broker: EmbeddedBroker) -> None:
    client = RawClient(broker.port)
    try:
        answer = ask(client, ALTER_SCRAM, 0, {"deletions": [], "upsertions": [
            {"name": "", "mechanism": 1, "iterations": 4096, "salt": b"s",
             "salted_password": b"p"},
            {"name": "m", "mechanism": 7, "iterations": 4096, "salt": b"s",
             "salted_password": b"p"},
            {"name": "i0", "mechanism": 1, "iterations": 0, "salt": b"s",
             "salted_password": b"p"},
            {"name": "ibig", "mechanism": 1, "iterations": 10**9, "salt": b"s",
             "salted_password": b"p"},
        ]})
        codes = {r.user: int(r.error_code) for r in answer.results}
        assert codes["m"] == UNSUPPORTED_SASL_MECHANISM, answer
        assert all(codes[u] == UNACCEPTABLE_CREDENTIAL for u in ("", "i0", "ibig")), \
            answer
        described = ask(client, DESCRIBE_SCRAM, 0, {"users": None})
        assert not described.results, "nothing was stored"
    finally:
        client.close()


def test_bad_acls_are_refused_and_unknown_filters_close_the_connection(
        broker: EmbeddedBroker) -> None:
    client = RawClient(broker.port)
    try:
        answer = ask(client, CREATE_ACLS, 3, {"creations": [
            {"resource_type": 99, "resource_name": "t", "resource_pattern_type": 3,
             "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3},
            {"resource_type": 2, "resource_name": "", "resource_pattern_type": 3,
             "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3},
            {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
             "principal": "no-colon", "host": "*", "operation": 3, "permission_type": 3},
        ]})
        assert [int(r.error_code) for r in answer.results] == [INVALID_REQUEST] * 3, answer
        listed = ask(client, DESCRIBE_ACLS, 3, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1,
            "permission_type": 1})
        assert not listed.resources, "nothing was stored"
        client.send(DELETE_ACLS, 3, {"filters": [{
            "resource_type_filter": 0, "resource_name_filter": None, "pattern_type_filter": 0,
            "principal_filter": None, "host_filter": None, "operation": 0,
            "permission_type": 0}]})
        with pytest.raises(ConnectionError):
            client.receive()
    finally:
        client.close()
    fresh = RawClient(broker.port)  # the broker still serves
    try:
        versions = ask(fresh, API_VERSIONS, 3, {"client_software_name": "raw",
                                                "client_software_version": "1"})
        assert int(versions.error_code) == 0
    finally:
        fresh.close()


