"""ACLs and the authorization decision, as Kafka's StandardAuthorizer makes it.

Codes are Kafka's (AclOperation, ResourceType, PatternType, AclPermissionType). The decision
(KIP-11, KIP-290; StandardAuthorizerData): super users are always allowed; any matching DENY wins;
an ALLOW for READ, WRITE, DELETE or ALTER also allows DESCRIBE, ALTER_CONFIGS allows
DESCRIBE_CONFIGS, ALL allows everything (implications apply to ALLOW only); a resource with no ACL
at all is decided by `allow.everyone.if.no.acl.found`. ACLs persist in the data directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

# AclOperation
ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS = 13, 14
OPERATIONS = {"ANY": ANY, "ALL": ALL, "READ": READ, "WRITE": WRITE, "CREATE": CREATE,
              "DELETE": DELETE, "ALTER": ALTER, "DESCRIBE": DESCRIBE,
              "CLUSTER_ACTION": CLUSTER_ACTION, "DESCRIBE_CONFIGS": DESCRIBE_CONFIGS,
              "ALTER_CONFIGS": ALTER_CONFIGS, "IDEMPOTENT_WRITE": IDEMPOTENT_WRITE,
              "CREATE_TOKENS": CREATE_TOKENS, "DESCRIBE_TOKENS": DESCRIBE_TOKENS}
# ResourceType
R_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
RESOURCE_TYPES = {"ANY": R_ANY, "TOPIC": TOPIC, "GROUP": GROUP, "CLUSTER": CLUSTER,
                  "TRANSACTIONAL_ID": TRANSACTIONAL_ID, "DELEGATION_TOKEN": DELEGATION_TOKEN,
                  "USER": USER}
# PatternType
P_ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
PATTERN_TYPES = {"ANY": P_ANY, "MATCH": MATCH, "LITERAL": LITERAL, "PREFIXED": PREFIXED}
# AclPermissionType
PERM_ANY, DENY, ALLOW = 1, 2, 3
PERMISSIONS = {"ANY": PERM_ANY, "DENY": DENY, "ALLOW": ALLOW}

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ACL_FILE = "acls.json"
AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "kafka.security.authorizer.AclAuthorizer")

# Supported operations per resource type (AclEntry.supportedOperations; group as in Kafka 3.x,
# which is what clients older than 4.0 expect -- KIP-430 masks).
SUPPORTED = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER,
              DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
}
_IMPLIES_DESCRIBE = (READ, WRITE, DELETE, ALTER)


class AclError(ValueError):
    """An ACL or filter Kafka refuses as INVALID_REQUEST."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class AclFilter:
    resource_type: int = R_ANY
    resource_name: str | None = None
    pattern_type: int = P_ANY
    principal: str | None = None
    host: str | None = None
    operation: int = ANY
    permission_type: int = PERM_ANY

    def matches(self, acl: AclBinding) -> bool:
        """Kafka's AclBindingFilter.matches (ResourcePatternFilter + AccessControlEntryFilter)."""
        if self.resource_type != R_ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (P_ANY, MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (P_ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == LITERAL:
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif acl.pattern_type == PREFIXED:
                if not self.resource_name.startswith(acl.resource_name):
                    return False
            else:
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != ANY and self.operation != acl.operation:
            return False
        return self.permission_type == PERM_ANY or self.permission_type == acl.permission_type

    def validate(self) -> None:
        for value, name in ((self.resource_type, "resource type"),
                            (self.pattern_type, "pattern type"), (self.operation, "operation"),
                            (self.permission_type, "permission type")):
            if value <= 0:
                raise AclError(f"the filter's {name} is UNKNOWN")


def validate_new(acl: AclBinding) -> None:
    """AclControlManager.validateNewAcl: concrete values only, a parseable principal."""
    if acl.resource_type not in (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN,
                                 USER):
        raise AclError("Invalid resourceType " + str(acl.resource_type))
    if acl.pattern_type not in (LITERAL, PREFIXED):
        raise AclError("Invalid patternType " + str(acl.pattern_type))
    if acl.operation not in OPERATIONS.values() or acl.operation == ANY:
        raise AclError("Invalid operation " + str(acl.operation))
    if acl.permission_type not in (ALLOW, DENY):
        raise AclError("Invalid permissionType " + str(acl.permission_type))
    if not acl.resource_name:
        raise AclError("Resource name should not be empty")
    if acl.resource_type == CLUSTER and (acl.resource_name != CLUSTER_NAME
                                         or acl.pattern_type != LITERAL):
        raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind, sep, name = acl.principal.partition(":")
    if not sep or not kind or not name:
        raise AclError(f"Could not parse principal from `{acl.principal}` (no colon is "
                       "present separating the principal type from the principal name)")
    if not acl.host:
        raise AclError("Host should not be empty")


class AclStore:
    """The broker's ACLs, written through to `acls.json` (write, fsync, rename)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / ACL_FILE
        self.acls: list[AclBinding] = []
        # The ACLs of each resource type: a check scans only its own type's.
        self.by_type: dict[int, list[AclBinding]] = {}

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            entries = json.loads(self.path.read_text())
            self.acls = [AclBinding(**entry) for entry in entries]
        except (OSError, ValueError, TypeError) as exc:
            raise RuntimeError(f"cannot read ACLs {self.path}: {exc}") from exc
        self._index()

    def _index(self) -> None:
        by_type: dict[int, list[AclBinding]] = {}
        for acl in self.acls:
            by_type.setdefault(acl.resource_type, []).append(acl)
        self.by_type = by_type

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            json.dump([asdict(acl) for acl in self.acls], handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def add(self, acls: list[AclBinding]) -> None:
        known = set(self.acls)
        for acl in acls:
            if acl not in known:
                self.acls.append(acl)
                known.add(acl)
        self._index()
        self.save()

    def remove(self, doomed: set[AclBinding]) -> None:
        if doomed:
            self.acls = [acl for acl in self.acls if acl not in doomed]
            self._index()
            self.save()


class Authorizer:
    def __init__(self, store: AclStore, super_users: str, allow_if_no_acl: bool) -> None:
        self.store = store
        self.super_users = {u.strip() for u in super_users.split(";") if u.strip()}
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(self, principal: str, host: str, operation: int, resource_type: int,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        found = False
        allowed = False
        for acl in self.store.by_type.get(resource_type, ()):
            if not _pattern_matches(acl, name):
                continue
            found = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) \
                    or acl.host not in (host, WILDCARD):
                continue
            if acl.permission_type == DENY:
                if acl.operation in (operation, ALL):
                    return False
            elif _allow_implies(acl.operation, operation):
                allowed = True
        if not found:
            return self.allow_if_no_acl
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: int,
                              name: str) -> int:
        """The KIP-430 bitfield: bit 1<<op for each supported operation allowed."""
        return sum(1 << op for op in SUPPORTED[resource_type]
                   if self.authorize(principal, host, op, resource_type, name))

    def any_allowed(self, principal: str, host: str, operation: int, resource_type: int
                    ) -> bool:
        """Whether some resource of the type may allow the operation (KIP-679's "WRITE on any
        topic" for idempotent producers): an ALLOW that no resource-wide DENY cancels."""
        if principal in self.super_users:
            return True
        for acl in self.store.by_type.get(resource_type, ()):
            if acl.permission_type != ALLOW:
                continue
            if acl.principal in (principal, WILDCARD_PRINCIPAL) \
                    and acl.host in (host, WILDCARD) and _allow_implies(acl.operation, operation):
                return True
        return False


def _pattern_matches(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type == PREFIXED and name.startswith(acl.resource_name)


def _allow_implies(granted: int, wanted: int) -> bool:
    if granted in (wanted, ALL):
        return True
    if wanted == DESCRIBE:
        return granted in _IMPLIES_DESCRIBE
    return wanted == DESCRIBE_CONFIGS and granted == ALTER_CONFIGS
