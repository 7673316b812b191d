"""One row per API and operation class: as a principal without ACLs the request is refused with
Kafka's error code; after the one ACL Kafka's operation table names, the same request passes
authorization (it may still fail for other reasons, e.g. an unknown member)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from streams.broker.security.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from tests.reference.wire import Connection
from tests.security.broker.conftest import ADMIN, ADMIN_PW, SecuredBroker
from tests.security.broker.test_acls import acl, grant, login
from tests.security.certs import Pki

pytestmark = pytest.mark.compat

USER, USER_PW = "eve", "eve-secret"
PRINCIPAL = f"User:{USER}"


@dataclass(frozen=True)
class Names:
    topic: str
    group: str
    txn: str


@dataclass(frozen=True)
class Case:
    api: str
    request: Callable[[Names], tuple[int, int, dict[str, Any]]]
    code: Callable[[dict[str, Any]], str]
    grants: Callable[[Names], list[tuple[int, str, int]]]
    refused: str


def _partition(answer: dict[str, Any], topics: str = "topics", parts: str = "partitions",
               field: str = "error_code") -> str:
    return answer[topics][0][parts][0][field]


T29, G30, C31, X53 = ("topic_authorization_failed", "group_authorization_failed",
                      "cluster_authorization_failed", "transactional_id_authorization_failed")

CASES = [
    Case("CreateTopics/cluster CREATE",
         lambda n: (19, 7, {"topics": [{"name": n.topic + "-new", "num_partitions": 1,
                                        "replication_factor": 1}], "timeout": 10000}),
         lambda a: a["topics"][0]["error_code"],
         lambda n: [(CLUSTER, "kafka-cluster", CREATE)], T29),
    Case("ListOffsets/topic DESCRIBE",
         lambda n: (2, 7, {"replica_id": -1, "topics": [
             {"name": n.topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
         _partition, lambda n: [(TOPIC, n.topic, DESCRIBE)], T29),
    Case("DeleteRecords/topic DELETE",
         lambda n: (21, 2, {"topics": [{"name": n.topic, "partitions": [
             {"partition_index": 0, "offset": 0}]}], "timeout": 10000}),
         _partition, lambda n: [(TOPIC, n.topic, DELETE)], T29),
    Case("CreatePartitions/topic ALTER",
         lambda n: (37, 3, {"topics": [{"name": n.topic, "count": 2, "assignments": None}],
                            "timeout": 10000, "validate_only": True}),
         lambda a: a["results"][0]["error_code"], lambda n: [(TOPIC, n.topic, ALTER)], T29),
    Case("DescribeConfigs/topic DESCRIBE_CONFIGS",
         lambda n: (32, 4, {"resources": [{"resource_type": 2, "resource_name": n.topic,
                                           "configuration_keys": None}],
                            "include_synonyms": False, "include_documentation": False}),
         lambda a: a["results"][0]["error_code"],
         lambda n: [(TOPIC, n.topic, DESCRIBE_CONFIGS)], T29),
    Case("IncrementalAlterConfigs/topic ALTER_CONFIGS",
         lambda n: (44, 1, {"resources": [{"resource_type": 2, "resource_name": n.topic,
                                           "configs": [{"name": "retention.ms",
                                                        "config_operation": 0,
                                                        "value": "60000"}]}],
                            "validate_only": True}),
         lambda a: a["responses"][0]["error_code"],
         lambda n: [(TOPIC, n.topic, ALTER_CONFIGS)], T29),
    Case("OffsetCommit/group READ + topic READ",
         lambda n: (8, 8, {"group_id": n.group, "generation_id_or_member_epoch": -1,
                           "member_id": "", "group_instance_id": None, "topics": [
                               {"name": n.topic, "partitions": [
                                   {"partition_index": 0, "committed_offset": 0,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": None}]}]}),
         _partition, lambda n: [(GROUP, n.group, READ), (TOPIC, n.topic, READ)], G30),
    Case("OffsetFetch/group DESCRIBE",
         lambda n: (9, 7, {"group_id": n.group, "topics": None, "require_stable": False}),
         lambda a: a["error_code"], lambda n: [(GROUP, n.group, DESCRIBE)], G30),
    Case("FindCoordinator/transactional id DESCRIBE",
         lambda n: (10, 4, {"key_type": 1, "coordinator_keys": [n.txn]}),
         lambda a: a["coordinators"][0]["error_code"],
         lambda n: [(TRANSACTIONAL_ID, n.txn, DESCRIBE)], X53),
    Case("AddOffsetsToTxn/transactional id WRITE",
         lambda n: (25, 3, {"transactional_id": n.txn, "producer_id": 1, "producer_epoch": 0,
                            "group_id": n.group}),
         lambda a: a["error_code"],
         lambda n: [(TRANSACTIONAL_ID, n.txn, WRITE), (GROUP, n.group, READ)], X53),
    Case("EndTxn/transactional id WRITE",
         lambda n: (26, 3, {"transactional_id": n.txn, "producer_id": 1, "producer_epoch": 0,
                            "committed": True}),
         lambda a: a["error_code"], lambda n: [(TRANSACTIONAL_ID, n.txn, WRITE)], X53),
    Case("DescribeAcls/cluster DESCRIBE",
         lambda n: (29, 3, {"resource_type_filter": 1, "pattern_type_filter": 1,
                            "operation": 1, "permission_type": 1}),
         lambda a: a["error_code"], lambda n: [(CLUSTER, "kafka-cluster", DESCRIBE)], C31),
    Case("CreateAcls/cluster ALTER",
         lambda n: (30, 3, {"creations": [{
             "resource_type": 2, "resource_name": n.topic, "resource_pattern_type": 3,
             "principal": "User:someone", "host": "*", "operation": 3,
             "permission_type": 3}]}),
         lambda a: a["results"][0]["error_code"],
         lambda n: [(CLUSTER, "kafka-cluster", ALTER)], C31),
    Case("DescribeUserScramCredentials/cluster DESCRIBE",
         lambda n: (50, 0, {"users": None}),
         lambda a: a["error_code"], lambda n: [(CLUSTER, "kafka-cluster", DESCRIBE)], C31),
    Case("DescribeLogDirs/cluster DESCRIBE",
         lambda n: (35, 4, {"topics": None}),
         lambda a: a["error_code"], lambda n: [(CLUSTER, "kafka-cluster", DESCRIBE)], C31),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:
    running = SecuredBroker(
        tmp_path_factory.mktemp("acl-matrix"), pki,
        **{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "super.users": f"User:{ADMIN}"}).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.parametrize("case", CASES, ids=[c.api for c in CASES])
def test_refused_then_allowed(broker: SecuredBroker, case: Case,
                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "streams.broker.authorizer")
    tag = uuid.uuid4().hex[:8]
    names = Names(f"m-{tag}", f"mg-{tag}", f"mx-{tag}")
    with login(broker, ADMIN, ADMIN_PW) as admin, login(broker, USER, USER_PW) as user:
        created = admin.send(19, 7, {"topics": [{"name": names.topic, "num_partitions": 1,
                                                 "replication_factor": 1}], "timeout": 10000})
        assert created is not None and created["topics"][0]["error_code"] == "none"

        def ask(conn: Connection) -> str:
            answer = conn.send(*case.request(names))
            assert answer is not None
            return case.code(answer)

        assert ask(user) == case.refused
        denials = [r.getMessage() for r in caplog.records
                   if r.name == "streams.broker.authorizer"]
        assert any(m.startswith(f"Principal = {PRINCIPAL} is Denied operation = ")
                   for m in denials), denials  # the audit line Kafka's authorizer logger writes
        assert ask(admin) != case.refused  # the super user passes
        grant(admin, *(acl(rtype, name, PRINCIPAL, operation)
                       for rtype, name, operation in case.grants(names)))
        try:
            allowed = ask(user)
        finally:  # the next row starts from no ACL again
            admin.send(31, 3, {"filters": [{
                "resource_type_filter": 1, "resource_name_filter": None,
                "pattern_type_filter": 1, "principal_filter": PRINCIPAL, "host_filter": None,
                "operation": 1, "permission_type": 1}]})
        assert allowed not in (T29, G30, C31, X53), allowed
