"""Differential check: the same SASL/ACL conversation with Apache Kafka 4.4.0 (tests/reference)
and with our broker, configured alike; error codes, messages and bitfields must match.

Skips (one line) only when Java or Kafka's jars are unavailable, like every reference test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import EmbeddedBroker, free_port, reference_unavailable
from tests.reference.wire import Connection
from tests.security.broker.conftest import ADMIN, ADMIN_PW, ALICE, ALICE_PW, JAAS

pytestmark = pytest.mark.compat

SETTINGS = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    # Kafka wants a JAAS entry per mechanism; for SCRAM it only names the broker's own login.
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": f"User:{ADMIN};User:ANONYMOUS",
}
TOPIC = "diff-topic"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = reference_unavailable("the reference Kafka")
    if reason:
        pytest.skip(reason)
    from tests.reference import kafka

    sasl = free_port()
    node = kafka.KafkaNode(free_port(), tmp_path_factory.mktemp("kafka-sasl"),
                           extra=dict(SETTINGS), listeners={"SASL_PLAINTEXT": sasl}).start()
    try:
        yield f"127.0.0.1:{sasl}"
    finally:
        node.stop()


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sasl = free_port()
    broker = EmbeddedBroker(tmp_path_factory.mktemp("ours-sasl"), **{
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        **SETTINGS}).start()
    try:
        yield f"127.0.0.1:{sasl}"
    finally:
        broker.stop()


def _login(address: str, user: str, password: str) -> Connection:
    conn = Connection(address, timeout=15)
    conn.send(17, 1, {"mechanism": "PLAIN"})
    answer = conn.send(36, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
    assert answer is not None and answer["error_code"] == "none", answer
    return conn


def _closed(conn: Connection) -> bool:
    conn.sock.settimeout(10)
    try:
        return conn.sock.recv(1) == b""
    except (ConnectionError, TimeoutError):
        return False


def _keep(answer: dict[str, Any] | None, *keys: str) -> Any:
    assert answer is not None
    return {k: answer[k] for k in keys}


def conversation(address: str, suffix: str) -> list[tuple[str, Any]]:
    """What a client sees, step by step; names are unique per run (the reference is shared)."""
    seen: list[tuple[str, Any]] = []

    def note(step: str, value: Any) -> None:
        seen.append((step, value))

    with Connection(address, timeout=15) as conn:
        note("unknown mechanism", conn.send(17, 1, {"mechanism": "GSSAPI"}))
        note("closed after unknown mechanism", _closed(conn))
    with Connection(address, timeout=15) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        note("wrong password", _keep(conn.send(36, 2, {
            "auth_bytes": f"\0{ALICE}\0nope".encode()}), "error_code", "error_message"))
        note("closed after wrong password", _closed(conn))
    with Connection(address, timeout=15) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        note("garbage", _keep(conn.send(36, 2, {"auth_bytes": b"no separators"}),
                              "error_code", "error_message"))
        note("closed after garbage", _closed(conn))
    with Connection(address, timeout=15) as conn:
        conn.send(17, 1, {"mechanism": "SCRAM-SHA-256"})
        note("scram unknown user", _keep(conn.send(36, 2, {
            "auth_bytes": b"n,,n=nobody,r=abcdefgh"}), "error_code", "error_message"))
    with Connection(address, timeout=15) as conn:
        conn.send(3, 12, {"topics": None}, expect_response=False)
        note("metadata before handshake closes", _closed(conn))
    with Connection(address, timeout=15) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        note("metadata after handshake", conn.send(3, 12, {"topics": None}))
        note("closed after metadata after handshake", _closed(conn))
    with Connection(address, timeout=15) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        note("init producer id after handshake", conn.send(22, 4, {
            "transactional_id": None, "transaction_timeout": 1000, "producer_id": -1,
            "producer_epoch": -1}))
        note("closed after init producer id after handshake", _closed(conn))

    topic, group, txn = f"{TOPIC}-{suffix}", f"g-{suffix}", f"t-{suffix}"
    with _login(address, ADMIN, ADMIN_PW) as admin:
        described = admin.send(32, 4, {"resources": [{
            "resource_type": 4, "resource_name": "0", "configuration_keys": [
                "sasl.enabled.mechanisms", "ssl.client.auth", "authorizer.class.name",
                "ssl.keystore.type", "ssl.truststore.type", "ssl.principal.mapping.rules",
                "ssl.key.password"]}], "include_synonyms": False,
            "include_documentation": False})
        assert described is not None
        note("broker security configs", sorted(
            (c["name"], c["value"], c["read_only"], c["config_source"], c["is_sensitive"],
             c["config_type"]) for c in described["results"][0]["configs"]))
        created = admin.send(19, 7, {"topics": [{"name": topic, "num_partitions": 1,
                                                 "replication_factor": 1}], "timeout": 10000})
        assert created is not None and created["topics"][0]["error_code"] == "none", created
        note("describe unknown scram user", admin.send(50, 0, {"users": [{"name": "nobody"}]}))
        note("scram with too few iterations", admin.send(51, 0, {"deletions": [], "upsertions": [
            {"name": f"u-{suffix}", "mechanism": 1, "iterations": 100, "salt": b"salt",
             "salted_password": b"x" * 32}]}))
        note("delete missing scram credential", admin.send(51, 0, {"upsertions": [],
                                                                   "deletions": [
            {"name": f"u-{suffix}", "mechanism": 2}]}))
        note("invalid acl", [r["error_code"] for r in admin.send(30, 3, {"creations": [
            {"resource_type": 4, "resource_name": "not-the-cluster",
             "resource_pattern_type": 3, "principal": f"User:{ALICE}", "host": "*",
             "operation": 7, "permission_type": 3}]})["results"]])  # type: ignore[index]
    with _login(address, ALICE, ALICE_PW) as alice:
        metadata = alice.send(3, 12, {"topics": [{"name": topic}],
                                      "allow_auto_topic_creation": False,
                                      "include_topic_authorized_operations": True})
        assert metadata is not None
        note("metadata denied", [(t["name"], t["error_code"], t["partitions"])
                                 for t in metadata["topics"]])
        everything = alice.send(3, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert everything is not None
        note("all topics hidden", [t["name"] for t in everything["topics"]
                                   if t["name"] == topic])
        note("create denied", _keep(alice.send(19, 7, {"topics": [
            {"name": f"{topic}-new", "num_partitions": 1, "replication_factor": 1}],
            "timeout": 10000})["topics"][0], "error_code"))  # type: ignore[index]
        note("describe acls denied", _keep(alice.send(29, 3, {
            "resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1,
            "permission_type": 1}), "error_code"))
        note("init txn denied", _keep(alice.send(22, 4, {
            "transactional_id": txn, "transaction_timeout": 10000, "producer_id": -1,
            "producer_epoch": -1}), "error_code"))
        note("idempotent denied", _keep(alice.send(22, 4, {
            "transactional_id": None, "transaction_timeout": 10000, "producer_id": -1,
            "producer_epoch": -1}), "error_code"))
        found = alice.send(10, 4, {"key_type": 1, "coordinator_keys": [txn]})
        assert found is not None
        note("find txn coordinator denied", found["coordinators"][0]["error_code"])
        note("join denied", _keep(alice.send(11, 9, {
            "group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}), "error_code"))
        described = alice.send(15, 5, {"groups": [group], "include_authorized_operations": True})
        assert described is not None
        note("describe group denied", described["groups"][0]["error_code"])
        note("cluster ops", _keep(alice.send(60, 0, {
            "include_cluster_authorized_operations": True}),
            "error_code", "cluster_authorized_operations"))
        note("sasl again", _keep(alice.send(17, 1, {"mechanism": "PLAIN"}), "error_code"))
    with _login(address, ADMIN, ADMIN_PW) as admin:
        granted = admin.send(30, 3, {"creations": [
            {"resource_type": 2, "resource_name": topic, "resource_pattern_type": 3,
             "principal": f"User:{ALICE}", "host": "*", "operation": 3,
             "permission_type": 3}]})
        assert granted is not None and granted["results"][0]["error_code"] == "none"
        note("describe acls (MATCH)", admin.send(29, 3, {
            "resource_type_filter": 2, "resource_name_filter": topic, "pattern_type_filter": 2,
            "principal_filter": None, "host_filter": None, "operation": 1,
            "permission_type": 1}))
    with _login(address, ADMIN, ADMIN_PW) as admin:
        admin.send(29, 3, {"resource_type_filter": 0, "pattern_type_filter": 1,
                           "operation": 1, "permission_type": 1}, expect_response=False)
        note("UNKNOWN in an ACL filter closes", _closed(admin))
    with _login(address, ALICE, ALICE_PW) as alice:
        metadata = alice.send(3, 12, {"topics": [{"name": topic}],
                                      "allow_auto_topic_creation": False,
                                      "include_topic_authorized_operations": True})
        assert metadata is not None
        note("metadata after READ", [(t["error_code"], t["topic_authorized_operations"])
                                     for t in metadata["topics"]])
    with _login(address, ADMIN, ADMIN_PW) as admin:
        note("delete acls", admin.send(31, 3, {"filters": [{
            "resource_type_filter": 2, "resource_name_filter": topic,
            "pattern_type_filter": 3, "principal_filter": f"User:{ALICE}",
            "host_filter": None, "operation": 1, "permission_type": 1}]}))
    return seen


def test_same_answers_as_apache_kafka(reference: str, ours: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    theirs, mine = conversation(reference, suffix), conversation(ours, suffix)
    differences = [(step, t, m) for (step, t), (_, m) in zip(theirs, mine, strict=True)
                   if t != m]
    assert not differences, "\n".join(f"{s}: kafka={t!r} ours={m!r}"
                                      for s, t, m in differences)



def test_cli_gives_the_same_output_on_both(reference: str, ours: str, tmp_path: Path) -> None:
    """`streams users` and `streams acls` go through the admin APIs only, so they manage Apache
    Kafka the same way: the same commands print the same lines on both brokers."""
    from tests.security.broker.test_cli import streams

    admin_config = tmp_path / "admin.properties"
    admin_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{ADMIN}" password="{ADMIN_PW}";\n')
    user = f"cli-{uuid.uuid4().hex[:8]}"

    def session(address: str) -> list[str]:
        common = ["--bootstrap-servers", address, "--command-config", str(admin_config)]
        steps = [
            (["users", "scram-set", user, "--mechanism", "SCRAM-SHA-256", "--iterations",
              "8192", "--password-stdin"], "pw-of-the-user\n"),
            (["users", "describe", user], None),
            (["acls", "add", "--allow-principal", f"User:{user}", "--operation", "read",
              "--operation", "describe", "--topic", f"{user}-", "--resource-pattern-type",
              "prefixed"], None),
            (["acls", "list", "--principal", f"User:{user}"], None),
            (["acls", "remove", "--principal", f"User:{user}"], None),
            (["users", "delete", user], None),
            (["users", "describe", user], None),
        ]
        out = []
        for args, stdin in steps:
            done = streams(*args, *common, stdin=stdin)
            out.append(f"{done.returncode} {sorted(done.stdout.splitlines())} "
                       f"{done.stderr.strip()}")
        return out

    theirs, mine = session(reference), session(ours)
    assert theirs == mine
    assert theirs[1].startswith(f"0 ['{user}: SCRAM-SHA-256 iterations=8192']")
    assert theirs[-1].startswith("1 [] streams users: ") and "does not exist" in theirs[-1]
