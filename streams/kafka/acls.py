"""ACL requests (CreateAcls, DescribeAcls, DeleteAcls) built and read in one place.

aiokafka ships the request classes but no admin methods for them. The CLI (``streams acls``),
the console's security page and MirrorMaker 2's ACL sync all go through here; each caller
words the refusals for its own user (a CLI line, a page message, a task error).

The codes are Kafka's (AclOperation, ResourceType, PatternType, AclPermissionType), written
here so that a client loads nothing of the broker's.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from .admin import send

OPERATIONS = {"ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
              "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11,
              "IDEMPOTENT_WRITE": 12, "CREATE_TOKENS": 13, "DESCRIBE_TOKENS": 14}
RESOURCE_TYPES = {"ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
                  "DELEGATION_TOKEN": 6, "USER": 7}
PATTERN_TYPES = {"ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
PERMISSIONS = {"ANY": 1, "DENY": 2, "ALLOW": 3}
NAMES_OF = {kind: {code: name for name, code in table.items()} for kind, table in
            (("operation", OPERATIONS), ("resource", RESOURCE_TYPES),
             ("pattern", PATTERN_TYPES), ("permission", PERMISSIONS))}
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name
SECURITY_DISABLED = 54  # Kafka's answer to ACL requests when the broker has no authorizer


class AclRequestError(Exception):
    """The broker refused an ACL request: Kafka's error code and its message (may be None)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"error {code}: {message or ''}".strip())
        self.code = code
        self.message = message


class SecurityDisabled(AclRequestError):
    """The broker has no authorizer: there are no ACLs to read or write."""


@dataclass(frozen=True)
class AclBinding:
    """One ACL (resource type, name, pattern type, principal, host, operation, permission),
    as Kafka's codes."""

    resource_type: int
    name: str
    pattern: int
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True)
class AclFilter:
    """What DescribeAcls/DeleteAcls match: ANY codes and None strings match everything."""

    resource_type: int = RESOURCE_TYPES["ANY"]
    name: str | None = None
    pattern: int = PATTERN_TYPES["ANY"]
    principal: str | None = None
    host: str | None = None
    operation: int = OPERATIONS["ANY"]
    permission: int = PERMISSIONS["ANY"]

    @classmethod
    def exactly(cls, binding: AclBinding) -> AclFilter:
        """A filter matching only ``binding`` (every field given)."""
        return cls(binding.resource_type, binding.name, binding.pattern, binding.principal,
                   binding.host, binding.operation, binding.permission)

    def fields(self) -> tuple[int, str | None, int, str | None, str | None, int, int]:
        return (self.resource_type, self.name, self.pattern, self.principal, self.host,
                self.operation, self.permission)


def _refused(code: int, message: str | None) -> AclRequestError:
    return (SecurityDisabled if code == SECURITY_DISABLED else AclRequestError)(code, message)


async def describe_acls(admin: AIOKafkaAdminClient, match: AclFilter | None = None
                        ) -> list[AclBinding]:
    """DescribeAcls: every binding matching ``match`` (all of them by default); raises
    SecurityDisabled without an authorizer, AclRequestError on any other refusal."""
    response = await send(admin, DescribeAclsRequest(*(match or AclFilter()).fields()))
    if response.error_code:
        raise _refused(response.error_code, response.error_message)
    return [AclBinding(rtype, name, pattern, principal, host, operation, permission)
            for rtype, name, pattern, acls in response.resources
            for principal, host, operation, permission in acls]


async def create_acl(admin: AIOKafkaAdminClient, binding: AclBinding) -> None:
    """CreateAcls of one binding; raises AclRequestError (SecurityDisabled) if refused."""
    response = await send(admin, CreateAclsRequest(
        binding.resource_type, binding.name, binding.pattern, binding.principal, binding.host,
        binding.operation, binding.permission))
    code, message = response.creation_responses[0]
    if code:
        raise _refused(code, message)


async def delete_acls(admin: AIOKafkaAdminClient, match: AclFilter) -> list[AclBinding]:
    """DeleteAcls of one filter: the bindings it deleted; raises AclRequestError
    (SecurityDisabled) if refused."""
    response = await send(admin, DeleteAclsRequest(*match.fields()))
    code, message, matching = response.filter_responses[0]
    if code:
        raise _refused(code, message)
    return [AclBinding(rtype, name, pattern, principal, host, operation, permission)
            for _code, _message, rtype, name, pattern, principal, host, operation, permission
            in matching]


def describe_binding(binding: AclBinding) -> str:
    """One line, as ``streams acls`` prints it: "ALLOW User:a READ from host * on
    TOPIC:LITERAL:t"."""
    return (f"{NAMES_OF['permission'][binding.permission]} {binding.principal} "
            f"{NAMES_OF['operation'][binding.operation]} from host {binding.host} on "
            f"{NAMES_OF['resource'][binding.resource_type]}:"
            f"{NAMES_OF['pattern'][binding.pattern]}:{binding.name}")
