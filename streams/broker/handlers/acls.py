"""DescribeAcls, CreateAcls, DeleteAcls (KIP-140, KIP-290).

Without `authorizer.class.name` Kafka answers every ACL request with SECURITY_DISABLED: storing
ACLs that nothing enforces would tell operators they are protected when they are not. With an
authorizer, the ACLs live in broker.security's store (persisted) and are enforced by every
handler. Describe needs DESCRIBE on the cluster, Create and Delete need ALTER (Kafka's
AclApis), else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..security.authorizer import (
    ALTER,
    CLUSTER,
    CLUSTER_NAME,
    DESCRIBE,
    AclBinding,
    AclError,
    AclFilter,
    validate_new,
)
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

SECURITY_DISABLED = 54
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_REQUEST = 42
NO_AUTHORIZER = ("No authorizer is configured on the broker: ACLs are neither stored nor "
                 "enforced (all access is allowed)")
DENIED = "Cluster authorization failed."


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message}


def _refusal(broker: Broker, ctx: RequestContext, operation: int) -> dict[str, Any] | None:
    if broker.security.authorizer is None:
        return _error(SECURITY_DISABLED, NO_AUTHORIZER)
    if not broker.security.allowed(ctx, operation, CLUSTER, CLUSTER_NAME):
        return _error(CLUSTER_AUTHORIZATION_FAILED, DENIED)
    return None


class UnknownElements(ValueError):
    """Kafka refuses to parse ACL requests with UNKNOWN (0) codes and closes the connection
    (DescribeAclsRequest/DeleteAclsRequest/CreateAclsRequest.validate)."""


def _filter(entry: Any) -> AclFilter:
    if 0 in (int(entry.resource_type_filter), int(getattr(entry, "pattern_type_filter", 3)),
             int(entry.operation), int(entry.permission_type)):
        raise UnknownElements("ACL filter contains UNKNOWN elements")
    return AclFilter(int(entry.resource_type_filter), entry.resource_name_filter,
                     int(getattr(entry, "pattern_type_filter", 3)), entry.principal_filter,
                     entry.host_filter, int(entry.operation), int(entry.permission_type))


def _acl_fields(acl: AclBinding) -> dict[str, Any]:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
            "permission_type": acl.permission_type}


@handles(29, 1, 3)
async def describe_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    refusal = _refusal(broker, ctx, DESCRIBE)
    if refusal is not None:
        return {"throttle_time": 0, **refusal, "resources": []}
    acl_filter = _filter(request)
    try:
        acl_filter.validate()
    except AclError as exc:
        return {"throttle_time": 0, **_error(INVALID_REQUEST, str(exc)), "resources": []}
    assert broker.security.authorizer is not None
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in broker.security.authorizer.store.acls:
        if acl_filter.matches(acl):
            key = (acl.resource_type, acl.resource_name, acl.pattern_type)
            grouped.setdefault(key, []).append(_acl_fields(acl))
    resources = [{"resource_type": rtype, "resource_name": name, "pattern_type": pattern,
                  "acls": acls} for (rtype, name, pattern), acls in grouped.items()]
    return {"throttle_time": 0, "error_code": 0, "error_message": "",  # Kafka's, not null
            "resources": resources}


@handles(30, 1, 3)
async def create_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    refusal = _refusal(broker, ctx, ALTER)
    if refusal is not None:
        return {"throttle_time": 0, "results": [refusal for _ in request.creations]}
    assert broker.security.authorizer is not None
    results, valid = [], []
    for entry in request.creations:
        if 0 in (int(entry.resource_type), int(getattr(entry, "resource_pattern_type", 3)),
                 int(entry.operation), int(entry.permission_type)):
            raise UnknownElements("CreatableAcls contain UNKNOWN elements")
    for entry in request.creations:
        acl = AclBinding(int(entry.resource_type), entry.resource_name,
                         int(getattr(entry, "resource_pattern_type", 3)), entry.principal,
                         entry.host, int(entry.operation), int(entry.permission_type))
        try:
            validate_new(acl)
        except AclError as exc:
            results.append(_error(INVALID_REQUEST, str(exc)))
            continue
        valid.append(acl)
        results.append({"error_code": 0, "error_message": None})
    if valid:
        broker.security.authorizer.store.add(valid)
    return {"throttle_time": 0, "results": results}


@handles(31, 1, 3)
async def delete_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    refusal = _refusal(broker, ctx, ALTER)
    if refusal is not None:
        return {"throttle_time": 0,
                "filter_results": [{**refusal, "matching_acls": []} for _ in request.filters]}
    assert broker.security.authorizer is not None
    store = broker.security.authorizer.store
    results = []
    doomed: set[AclBinding] = set()
    for entry in request.filters:
        acl_filter = _filter(entry)
        try:
            acl_filter.validate()
        except AclError as exc:
            results.append({**_error(INVALID_REQUEST, str(exc)), "matching_acls": []})
            continue
        matching = [acl for acl in store.acls if acl_filter.matches(acl)]
        doomed.update(matching)
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": acl.resource_type,
             "resource_name": acl.resource_name, "pattern_type": acl.pattern_type,
             **_acl_fields(acl)} for acl in matching]})
    store.remove(doomed)
    return {"throttle_time": 0, "filter_results": results}
