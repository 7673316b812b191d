"""ACLs and SCRAM users through Kafka's admin APIs (CreateAcls/DescribeAcls/DeleteAcls, KIP-554's
Describe/AlterUserScramCredentials), the same requests ``streams acls`` and ``streams users``
send; the broker's refusals (no authorizer, not authorized) come back as one line."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from ..cli.client import error_message
from ..kafka.acls import (
    NAMES_OF,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    AclBinding,
    AclFilter,
    AclRequestError,
    SecurityDisabled,
    create_acl,
    delete_acls,
    describe_acls,
)
from ..kafka.admin import send
from ..kafka.requests import AlterUserScramCredentials, DescribeUserScramCredentials
from .cluster import Cluster, ConsoleError

# Kafka's ScramMechanism codes (the ACL codes are streams.kafka.acls').
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
NAMES = {code: name for name, (code, _) in MECHANISMS.items()}
SCRAM_ITERATIONS = 4096  # Kafka's default


def _code(kind: str, table: dict[str, int], value: str, allowed: tuple[str, ...]) -> int:
    name = value.strip().upper().replace("-", "_")
    if name not in allowed:
        raise ConsoleError(f"{kind} {value!r}: one of {', '.join(a.lower() for a in allowed)}")
    return table[name]


class Acl(dict[str, Any]):
    """One ACL binding as text fields (resource, name, pattern, principal, host, operation,
    permission): what the page shows and what its forms post back."""

    def binding(self) -> AclBinding:
        resources = tuple(n for n in RESOURCE_TYPES if n != "ANY")
        operations = tuple(n for n in OPERATIONS if n != "ANY")
        principal = str(self.get("principal", "")).strip()
        kind, sep, who = principal.partition(":")
        if not sep or not kind or not who:
            raise ConsoleError(f"principal {principal!r}: expected a principal like User:alice")
        name = str(self.get("name", "")).strip()
        if not name:
            raise ConsoleError("an ACL needs a resource name (kafka-cluster for the cluster)")
        return AclBinding(
            _code("resource type", RESOURCE_TYPES, str(self.get("resource", "")), resources),
            name,
            _code("pattern type", PATTERN_TYPES, str(self.get("pattern", "literal")),
                  ("LITERAL", "PREFIXED")),
            principal, str(self.get("host") or "*").strip(),
            _code("operation", OPERATIONS, str(self.get("operation", "")), operations),
            _code("permission", PERMISSIONS, str(self.get("permission", "allow")),
                  ("ALLOW", "DENY")))


class Security:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def _send(self, request: Any) -> Any:
        assert self.cluster.admin is not None
        return await send(self.cluster.admin, request)

    async def acls(self) -> list[Acl] | None:
        """Every ACL, or None when the broker has no authorizer."""
        assert self.cluster.admin is not None
        try:
            found = await describe_acls(self.cluster.admin)
        except SecurityDisabled:
            return None
        except AclRequestError as exc:
            raise ConsoleError("cannot list ACLs: "
                               + error_message(exc.code, exc.message)) from None
        rows = [Acl(resource=NAMES_OF["resource"][b.resource_type], name=b.name,
                    pattern=NAMES_OF["pattern"][b.pattern], principal=b.principal,
                    host=b.host, operation=NAMES_OF["operation"][b.operation],
                    permission=NAMES_OF["permission"][b.permission])
                for b in found]
        return sorted(rows, key=lambda a: (a["resource"], a["name"], a["principal"],
                                           a["operation"], a["permission"]))

    async def create_acl(self, acl: Acl) -> None:
        binding = acl.binding()
        assert self.cluster.admin is not None
        try:
            await create_acl(self.cluster.admin, binding)
        except AclRequestError as exc:
            raise ConsoleError("cannot add the ACL: "
                               + error_message(exc.code, exc.message)) from None

    async def delete_acl(self, acl: Acl) -> int:
        """Delete exactly this binding (a filter with every field given); how many matched."""
        match = AclFilter.exactly(acl.binding())
        assert self.cluster.admin is not None
        try:
            return len(await delete_acls(self.cluster.admin, match))
        except AclRequestError as exc:
            raise ConsoleError("cannot delete the ACL: "
                               + error_message(exc.code, exc.message)) from None

    async def users(self) -> list[dict[str, Any]]:
        """Every SCRAM user with its mechanisms and iterations (never a credential)."""
        response = await self._send(DescribeUserScramCredentials(None))
        if response.error_code:
            raise ConsoleError("cannot list SCRAM users: " + error_message(
                response.error_code, response.error_message))
        users = []
        for user, code, message, infos, *_tags in response.results:
            users.append({"user": user, "error": error_message(code, message) if code else None,
                          "mechanisms": [{"mechanism": NAMES.get(m, str(m)), "iterations": i}
                                         for m, i, *_ in infos]})
        return sorted(users, key=lambda u: u["user"])

    async def set_user(self, name: str, mechanism: str, password: str) -> None:
        """Create the user or change its password: the client salts and hashes (RFC 5802's
        Hi, PBKDF2) and sends only the salted password, as kafka-configs.sh does."""
        if not name.strip():
            raise ConsoleError("a SCRAM user needs a name")
        if mechanism not in MECHANISMS:
            raise ConsoleError(f"mechanism {mechanism!r}: one of {', '.join(MECHANISMS)}")
        if not password:
            raise ConsoleError("the password is empty")
        code, digest = MECHANISMS[mechanism]
        salt = secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, SCRAM_ITERATIONS)
        response = await self._send(AlterUserScramCredentials(
            [], [(name, code, SCRAM_ITERATIONS, salt, salted)]))
        self._check(response, "set the credentials of")

    async def delete_user(self, name: str) -> None:
        """Delete every SCRAM credential of ``name``."""
        present = [u for u in await self.users() if u["user"] == name]
        if not present or not present[0]["mechanisms"]:
            raise ConsoleError(f"no SCRAM user {name!r}")
        deletions = [(name, MECHANISMS[m["mechanism"]][0]) for m in present[0]["mechanisms"]
                     if m["mechanism"] in MECHANISMS]
        self._check(await self._send(AlterUserScramCredentials(deletions, [])),
                    "delete the credentials of")

    @staticmethod
    def _check(response: Any, action: str) -> None:
        for user, code, message, *_tags in response.results:
            if code:
                raise ConsoleError(f"cannot {action} {user}: {error_message(code, message)}")
