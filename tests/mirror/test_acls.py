"""Topic ACL sync (sync.topic.acls.enabled, Kafka's default): literal ACLs of replicated topics
reach the replica as read access: ALLOW ALL becomes ALLOW READ, ALLOW WRITE stays behind (only
MirrorMaker writes a replica), DENY is copied. Brokers with an authorizer, each its own process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers import BrokerProcess, wait_until
from mirror_helpers import MirrorProcess, admin_call, create_topic, write_mm2

from connect.mirror import admin as mm_admin

pytestmark = pytest.mark.slow

AUTHORIZER = ("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
              "super.users=User:ANONYMOUS\n")


def _acls(bootstrap: str) -> set[tuple[str, str, int, int]]:
    async def read(admin):  # noqa: ANN001, ANN202
        return await mm_admin.topic_acls(admin)

    return {(b.name, b.principal, b.operation, b.permission)
            for b in admin_call(bootstrap, read)}


def test_topic_acls_follow_as_read_access(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(AUTHORIZER)
    a = BrokerProcess(tmp_path / "a" / "data", extra=["--config", str(props)]).start()
    b = None
    mirror = None
    try:
        b = BrokerProcess(tmp_path / "b" / "data", extra=["--config", str(props)]).start()
        create_topic(a.bootstrap, "secret", 1)
        create_topic(a.bootstrap, "other", 1)
        literal, allow, deny = mm_admin.PATTERN_LITERAL, mm_admin.PERMISSION_ALLOW, 2
        bindings = [("secret", "User:alice", mm_admin.OPERATION_ALL, allow),
                    ("secret", "User:bob", mm_admin.OPERATION_WRITE, allow),
                    ("secret", "User:eve", mm_admin.OPERATION_READ, deny),
                    ("other", "User:carol", mm_admin.OPERATION_READ, allow)]

        async def grant(admin):  # noqa: ANN001, ANN202
            return await mm_admin.create_acls(admin, [
                mm_admin.AclBinding(mm_admin.TOPIC_RESOURCE, name, literal, principal, "*", op,
                                    perm) for name, principal, op, perm in bindings])

        assert admin_call(a.bootstrap, grant) == {}
        config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap},
                           ["A->B.enabled = true", "A->B.topics = secret",
                            "sync.topic.acls.interval.seconds = 1"])
        mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
        wanted = {("A.secret", "User:alice", mm_admin.OPERATION_READ, allow),
                  ("A.secret", "User:eve", mm_admin.OPERATION_READ, deny)}
        wait_until(lambda: _acls(b.bootstrap) == wanted, 60, interval=1,
                   message="the replica's ACLs")
    finally:
        if mirror is not None:
            mirror.stop()
        if b is not None:
            b.stop()
        a.stop()
    _ = asyncio
