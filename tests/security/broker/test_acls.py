"""ACLs on our broker: the admin APIs (CreateAcls/DescribeAcls/DeleteAcls through confluent-kafka
and the wire), enforcement per API for each operation class with Kafka's error codes, hidden
topics, authorized-operations bitfields, certificate principals, and persistence."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from streams.broker.security.authorizer import (
    ALL,
    ALLOW,
    ALTER,
    CLUSTER,
    CREATE,
    DELETE,
    DENY,
    DESCRIBE,
    GROUP,
    IDEMPOTENT_WRITE,
    LITERAL,
    PREFIXED,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from tests.reference.wire import Connection
from tests.security.broker.clients import CLIENTS
from tests.security.broker.conftest import (
    ADMIN,
    ADMIN_PW,
    ALICE,
    ALICE_PW,
    EVE,
    EVE_PW,
    SecuredBroker,
)
from tests.security.certs import Pki

pytestmark = pytest.mark.compat

ALICE_P = f"User:{ALICE}"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def login(broker: SecuredBroker, user: str, password: str) -> Connection:
    conn = Connection(broker.address("SASL_PLAINTEXT"), timeout=15)
    conn.send(17, 1, {"mechanism": "PLAIN"})
    answer = conn.send(36, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
    assert answer is not None and answer["error_code"] == "none", answer
    return conn


def acl(resource_type: int, name: str, principal: str, operation: int,
        permission: int = ALLOW, pattern: int = LITERAL, host: str = "*") -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name,
            "resource_pattern_type": pattern, "principal": principal, "host": host,
            "operation": operation, "permission_type": permission}


def grant(conn: Connection, *acls: dict[str, Any]) -> None:
    answer = conn.send(30, 3, {"creations": list(acls)})
    assert answer is not None
    assert [r["error_code"] for r in answer["results"]] == ["none"] * len(acls), answer


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:
    running = SecuredBroker(
        tmp_path_factory.mktemp("acl-broker"), pki,
        **{"authorizer.class.name": AUTHORIZER, "super.users": f"User:{ADMIN}",
           "listener.name.ssl.ssl.client.auth": "required"}).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def admin(broker: SecuredBroker) -> Iterator[Connection]:
    with login(broker, ADMIN, ADMIN_PW) as conn:
        yield conn


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(conn: Connection, name: str) -> str:
    answer = conn.send(19, 7, {"topics": [{"name": name, "num_partitions": 1,
                                           "replication_factor": 1}], "timeout": 10000})
    assert answer is not None
    return answer["topics"][0]["error_code"]


def _metadata(conn: Connection, topics: list[str] | None, auto: bool = False
              ) -> dict[str, Any]:
    answer = conn.send(3, 12, {"topics": None if topics is None else
                               [{"name": t} for t in topics],
                               "allow_auto_topic_creation": auto,
                               "include_topic_authorized_operations": True})
    assert answer is not None
    return {t["name"]: t for t in answer["topics"]}


def test_acl_admin_apis_need_cluster_permission(broker: SecuredBroker, admin: Connection
                                                ) -> None:
    with login(broker, ALICE, ALICE_PW) as alice:
        denied = alice.send(30, 3, {"creations": [acl(TOPIC, "x", ALICE_P, READ)]})
        assert denied is not None
        assert denied["results"][0]["error_code"] == "cluster_authorization_failed"
        described = alice.send(29, 3, {"resource_type_filter": 1, "pattern_type_filter": 1,
                                       "operation": 1, "permission_type": 1})
        assert described is not None
        assert described["error_code"] == "cluster_authorization_failed"
    invalid = admin.send(30, 3, {"creations": [acl(CLUSTER, "other", ALICE_P, ALTER),
                                               acl(TOPIC, "x", "alice", READ),
                                               acl(TOPIC, "x", ALICE_P, READ, pattern=2)]})
    assert invalid is not None
    assert [r["error_code"] for r in invalid["results"]] == ["invalid_request"] * 3


def test_confluent_admin_create_describe_delete(broker: SecuredBroker) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.address("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": ADMIN, "sasl.password": ADMIN_PW})
    prefix = _name("conf")
    bindings = [AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED,
                           "User:carl", "*", AclOperation.READ, AclPermissionType.ALLOW),
                AclBinding(ResourceType.GROUP, prefix, ResourcePatternType.LITERAL,
                           "User:carl", "10.0.0.1", AclOperation.READ, AclPermissionType.DENY)]
    for future in admin.create_acls(bindings).values():
        future.result(15)
    match = AclBindingFilter(ResourceType.TOPIC, f"{prefix}-orders", ResourcePatternType.MATCH,
                             None, None, AclOperation.ANY, AclPermissionType.ANY)
    found = admin.describe_acls(match).result(15)
    assert [(b.name, b.resource_pattern_type) for b in found] == \
        [(prefix, ResourcePatternType.PREFIXED)]
    anything_of_carl = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                        "User:carl", None, AclOperation.ANY,
                                        AclPermissionType.ANY)
    assert len(admin.describe_acls(anything_of_carl).result(15)) == 2
    deleted = admin.delete_acls([anything_of_carl])
    assert sorted(b.restype.name for f in deleted.values() for b in f.result(15)) == \
        ["GROUP", "TOPIC"]
    assert admin.describe_acls(anything_of_carl).result(15) == []


def test_topic_describe_hides_and_refuses(broker: SecuredBroker, admin: Connection) -> None:
    visible, hidden = _name("vis"), _name("hid")
    for topic in (visible, hidden):
        assert _create_topic(admin, topic) == "none"
    grant(admin, acl(TOPIC, visible, ALICE_P, READ))  # READ implies DESCRIBE
    with login(broker, ALICE, ALICE_PW) as alice:
        everything = _metadata(alice, None)
        assert visible in everything and hidden not in everything
        assert everything[visible]["topic_authorized_operations"] == (1 << READ) | (
            1 << DESCRIBE)
        named = _metadata(alice, [visible, hidden, "never-existed-" + hidden])
        assert named[visible]["error_code"] == "none"
        # Refused whether or not the topic exists (Kafka 1.0+): existence does not leak.
        assert named[hidden]["error_code"] == "topic_authorization_failed"
        assert named["never-existed-" + hidden]["error_code"] == "topic_authorization_failed"
        assert named[hidden]["partitions"] == []
        hidden_id = uuid.UUID(_metadata(admin, [hidden])[hidden]["topic_id"])
        by_id = alice.send(3, 12, {"topics": [{"topic_id": hidden_id, "name": None}],
                                   "allow_auto_topic_creation": False})
        assert by_id is not None  # an id lookup does not learn the name either
        assert [(t["name"], t["error_code"]) for t in by_id["topics"]] == \
            [(None, "topic_authorization_failed")]
        deleted = alice.send(20, 6, {"topics": [{"name": None, "topic_id": hidden_id}],
                                     "timeout": 10000})
        assert deleted is not None
        assert [(t["name"], t["error_code"]) for t in deleted["responses"]] == \
            [(None, "unknown_topic_id")]
        offsets = alice.send(2, 7, {"replica_id": -1, "topics": [
            {"name": hidden, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        assert offsets is not None
        assert offsets["topics"][0]["partitions"][0]["error_code"] == \
            "topic_authorization_failed"


def test_topic_create_delete_alter(broker: SecuredBroker, admin: Connection) -> None:
    prefix = _name("own")
    with login(broker, ALICE, ALICE_PW) as alice:
        assert _create_topic(alice, f"{prefix}-a") == "topic_authorization_failed"
        grant(admin, acl(TOPIC, prefix, ALICE_P, CREATE, pattern=PREFIXED))
        assert _create_topic(alice, f"{prefix}-a") == "none"
        assert _create_topic(alice, _name("elsewhere")) == "topic_authorization_failed"
        grown = alice.send(37, 3, {"topics": [{"name": f"{prefix}-a", "count": 2,
                                               "assignments": None}],
                                   "timeout": 10000, "validate_only": False})
        assert grown is not None and grown["results"][0]["error_code"] == \
            "topic_authorization_failed"
        deleted = alice.send(20, 6, {"topics": [{"name": f"{prefix}-a"}], "timeout": 10000})
        assert deleted is not None and deleted["responses"][0]["error_code"] == \
            "topic_authorization_failed"
        grant(admin, acl(TOPIC, prefix, ALICE_P, ALTER, pattern=PREFIXED),
              acl(TOPIC, prefix, ALICE_P, DELETE, pattern=PREFIXED))
        grown = alice.send(37, 3, {"topics": [{"name": f"{prefix}-a", "count": 2,
                                               "assignments": None}],
                                   "timeout": 10000, "validate_only": False})
        assert grown is not None and grown["results"][0]["error_code"] == "none"
        deleted = alice.send(20, 6, {"topics": [{"name": f"{prefix}-a"}], "timeout": 10000})
        assert deleted is not None and deleted["responses"][0]["error_code"] == "none"
        # Auto-creation through Metadata needs CREATE as well.
        auto = _name("auto")
        grant(admin, acl(TOPIC, auto, ALICE_P, DESCRIBE))
        assert _metadata(alice, [auto], auto=True)[auto]["error_code"] == \
            "topic_authorization_failed"


def test_produce_and_fetch_with_aiokafka(broker: SecuredBroker, admin: Connection) -> None:
    """WRITE and READ through a real client; a DENY beats an ALLOW; group READ is needed to
    commit and join."""
    topic, group = _name("flow"), _name("grp")
    assert _create_topic(admin, topic) == "none"
    settings = {"bootstrap_servers": broker.address("SASL_PLAINTEXT"),
                "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                "sasl_plain_username": ALICE, "sasl_plain_password": ALICE_PW}

    async def produce() -> None:
        producer = AIOKafkaProducer(request_timeout_ms=5000, **settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"v")
        finally:
            await producer.stop()

    async def consume() -> bytes:
        consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                                    **settings)
        await consumer.start()
        try:
            async with asyncio.timeout(20):
                message = await consumer.getone()
                await consumer.commit()
                return message.value
        finally:
            await consumer.stop()

    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(produce())
    grant(admin, acl(TOPIC, topic, ALICE_P, WRITE))
    asyncio.run(produce())
    with pytest.raises((TopicAuthorizationFailedError, GroupAuthorizationFailedError)):
        asyncio.run(consume())
    grant(admin, acl(TOPIC, topic, ALICE_P, READ), acl(GROUP, group, ALICE_P, READ))
    assert asyncio.run(consume()) == b"v"
    grant(admin, acl(TOPIC, topic, "User:*", WRITE, permission=DENY))
    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(produce())


def test_groups_cluster_and_transactional_ids(broker: SecuredBroker, admin: Connection) -> None:
    group, txn = _name("g"), _name("txn")
    with login(broker, ALICE, ALICE_PW) as alice:
        joined = alice.send(11, 9, {"group_id": group, "session_timeout": 10000,
                                    "rebalance_timeout": 10000, "member_id": "",
                                    "protocol_type": "consumer",
                                    "protocols": [{"name": "range", "metadata": b""}]})
        assert joined is not None and joined["error_code"] == "group_authorization_failed"
        described = alice.send(15, 5, {"groups": [group],
                                       "include_authorized_operations": True})
        assert described is not None
        assert described["groups"][0]["error_code"] == "group_authorization_failed"
        removed = alice.send(42, 2, {"groups_names": [group]})
        assert removed is not None
        assert removed["results"][0]["error_code"] == "group_authorization_failed"
        grant(admin, acl(GROUP, group, ALICE_P, DESCRIBE))
        described = alice.send(15, 5, {"groups": [group],
                                       "include_authorized_operations": True})
        assert described is not None and described["groups"][0]["error_code"] == "none"
        assert described["groups"][0]["authorized_operations"] == 1 << DESCRIBE
        listed = alice.send(16, 5, {"states_filter": [], "types_filter": []})
        assert listed is not None  # only describable groups, never an error
        assert listed["error_code"] == "none"

        found = alice.send(10, 4, {"key_type": 1, "coordinator_keys": [txn]})
        assert found is not None
        assert found["coordinators"][0]["error_code"] == "transactional_id_authorization_failed"
        init = alice.send(22, 4, {"transactional_id": txn, "transaction_timeout": 10000,
                                  "producer_id": -1, "producer_epoch": -1})
        assert init is not None
        assert init["error_code"] == "transactional_id_authorization_failed"
        grant(admin, acl(TRANSACTIONAL_ID, txn, ALICE_P, WRITE),
              acl(CLUSTER, "kafka-cluster", ALICE_P, IDEMPOTENT_WRITE))
        init = alice.send(22, 4, {"transactional_id": txn, "transaction_timeout": 10000,
                                  "producer_id": -1, "producer_epoch": -1})
        assert init is not None and init["error_code"] == "none"
    idempotent_request = {"transactional_id": None, "transaction_timeout": 10000,
                          "producer_id": -1, "producer_epoch": -1}
    with login(broker, EVE, EVE_PW) as eve:
        # KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on any topic.
        idempotent = eve.send(22, 4, idempotent_request)
        assert idempotent is not None
        assert idempotent["error_code"] == "cluster_authorization_failed"
        grant(admin, acl(TOPIC, _name("eve"), f"User:{EVE}", WRITE))
        idempotent = eve.send(22, 4, idempotent_request)
        assert idempotent is not None and idempotent["error_code"] == "none"
    with login(broker, ALICE, ALICE_PW) as alice:

        cluster = alice.send(60, 0, {"include_cluster_authorized_operations": True})
        assert cluster is not None
        assert cluster["cluster_authorized_operations"] == 1 << IDEMPOTENT_WRITE
        configs = alice.send(32, 4, {"resources": [{"resource_type": 4, "resource_name": "0",
                                                    "configuration_keys": None}],
                                     "include_synonyms": False,
                                     "include_documentation": False})
        assert configs is not None
        assert configs["results"][0]["error_code"] == "cluster_authorization_failed"
    with login(broker, ADMIN, ADMIN_PW) as boss:  # super user: everything allowed
        cluster = boss.send(60, 0, {"include_cluster_authorized_operations": True})
        assert cluster is not None and cluster["cluster_authorized_operations"] == 8096


def test_certificate_principal_and_all(broker: SecuredBroker, admin: Connection, pki: Pki
                                       ) -> None:
    """mTLS: the principal is the certificate subject in RFC 2253 form (CN first)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    topic = _name("mtls")
    assert _create_topic(admin, topic) == "none"
    assert pki.client.subject == "CN=client,O=streams-tests"
    settings = {"bootstrap.servers": broker.address("SSL"), "security.protocol": "SSL",
                "ssl.ca.location": str(pki.truststore),
                "ssl.certificate.location": str(pki.client.keystore),
                "ssl.key.location": str(pki.client.keystore)}
    client = AdminClient(settings)
    assert topic not in client.list_topics(timeout=10).topics
    grant(admin, acl(TOPIC, topic, f"User:{pki.client.subject}", ALL))
    assert topic in client.list_topics(timeout=10).topics
    without_cert = AdminClient({k: v for k, v in settings.items()
                                if not k.startswith(("ssl.certificate", "ssl.key"))})
    with pytest.raises(KafkaException):  # ssl.client.auth=required on this listener
        without_cert.list_topics(timeout=3)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_mtls_roundtrip_as_certificate_principal(broker: SecuredBroker, admin: Connection,
                                                 pki: Pki, client: str) -> None:
    """Each client library over mutual TLS (ssl.client.auth=required), authorized only by ACLs
    on its certificate's principal."""
    principal = f"User:{pki.client.subject}"
    grant(admin, acl(TOPIC, "mtls-rt-", principal, ALL, pattern=PREFIXED),
          acl(GROUP, "g-", principal, READ, pattern=PREFIXED))
    settings, roundtrip = CLIENTS[client]
    assert roundtrip(broker.address("SSL"),
                     settings("SSL", pki.truststore, cert=pki.client.keystore),
                     f"mtls-rt-{client}-{uuid.uuid4().hex[:6]}")


def test_acls_survive_restart(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> None:
    running = SecuredBroker(tmp_path_factory.mktemp("acl-restart"), pki,
                            **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                               "super.users": f"User:{ADMIN}"}).start()
    try:
        with login(running, ADMIN, ADMIN_PW) as conn:
            grant(conn, acl(TOPIC, "kept", ALICE_P, READ, pattern=PREFIXED))
        running.restart()
        with login(running, ADMIN, ADMIN_PW) as conn:
            found = conn.send(29, 3, {"resource_type_filter": 1, "pattern_type_filter": 1,
                                      "operation": 1, "permission_type": 1})
        assert found is not None and found["resources"] == [
            {"resource_type": TOPIC, "resource_name": "kept", "pattern_type": PREFIXED,
             "acls": [{"principal": ALICE_P, "host": "*", "operation": READ,
                       "permission_type": ALLOW}]}]
        with login(running, ALICE, ALICE_PW) as alice:
            assert "kept-x" not in _metadata(alice, None)
            assert _metadata(alice, ["kept-x"])["kept-x"]["error_code"] != \
                "topic_authorization_failed"
    finally:
        running.stop()
