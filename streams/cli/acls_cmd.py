"""`streams acls add | list | remove`: manage ACLs through Kafka's admin APIs, shaped like
kafka-acls.sh (--allow-principal/--deny-principal, --operation, --topic/--group/--cluster/
--transactional-id, --resource-pattern-type).

aiokafka ships the CreateAcls/DescribeAcls/DeleteAcls request classes but no admin methods for
them, so the requests go through ``streams.kafka.admin.send``.
"""

from __future__ import annotations

import argparse

from aiokafka.errors import KafkaError
from aiokafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from ..broker.security.authorizer import (
    CLUSTER,
    CLUSTER_NAME,
    GROUP,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    TOPIC,
    TRANSACTIONAL_ID,
)
from ..kafka.admin import send
from .client import (
    CliError,
    add_bootstrap_argument,
    admin_client,
    connection_kwargs,
    error_message,
    run_command,
)

PROG = "streams acls"
_NAMES = {kind: {code: name for name, code in table.items()} for kind, table in
          (("operation", OPERATIONS), ("resource", RESOURCE_TYPES),
           ("pattern", PATTERN_TYPES), ("permission", PERMISSIONS))}


SECURITY_DISABLED = 54  # Kafka's error code for ACL requests to a broker without authorizer


async def authorization_hint(target: argparse.Namespace | str) -> str:
    """", or is not authorized for User:X" when the broker has an authorizer, else "".

    Kafka hides from Metadata the topics a principal may not describe, so "does not exist" is
    what an unauthorized client sees for a topic that exists. One DescribeAcls request tells
    whether an authorizer is on (SECURITY_DISABLED when none is)."""
    try:
        async with admin_client(target) as admin:
            response = await send(admin, DescribeAclsRequest(
                RESOURCE_TYPES["ANY"], None, PATTERN_TYPES["ANY"], None, None, OPERATIONS["ANY"],
                PERMISSIONS["ANY"]))
    except (CliError, KafkaError, OSError):
        return ""
    if response.error_code == SECURITY_DISABLED:
        return ""
    kwargs = connection_kwargs(target)
    protocol = str(kwargs.get("security_protocol", "PLAINTEXT"))
    if protocol.startswith("SASL") and kwargs.get("sasl_plain_username"):
        principal = f"User:{kwargs['sasl_plain_username']}"
    elif protocol == "SSL":
        principal = "this client's certificate principal"
    else:
        principal = "User:ANONYMOUS"
    return f", or is not authorized for {principal} (the broker has an authorizer)"


def _operation(value: str) -> int:
    code = OPERATIONS.get(value.strip().upper().replace("-", "_"))
    if code is None:
        raise argparse.ArgumentTypeError(
            f"unknown operation {value!r}; one of {', '.join(n.lower() for n in OPERATIONS)}")
    return code


def _principal(value: str) -> str:
    kind, sep, name = value.partition(":")
    if not sep or not kind or not name:
        raise argparse.ArgumentTypeError(f"expected a principal like User:alice, got {value!r}")
    return value


def _add_resource_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    resource = parser.add_mutually_exclusive_group(required=required)
    resource.add_argument("--topic", help="topic name (or prefix, or * for all topics)")
    resource.add_argument("--group", help="consumer group id (or prefix, or *)")
    resource.add_argument("--transactional-id", help="transactional id (or prefix, or *)")
    resource.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument("--resource-pattern-type", default=None,
                        choices=["literal", "prefixed", "match", "any"],
                        help="how the resource name matches (add: literal or prefixed, "
                             "default literal; list/remove: default any)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    acls = sub.add_parser("acls", help="add, list and remove ACLs (broker with an authorizer)")
    acls_sub = acls.add_subparsers(dest="acls_command", required=True)

    add = acls_sub.add_parser("add", help="add ALLOW/DENY ACLs")
    add_bootstrap_argument(add)
    _add_resource_arguments(add, required=True)
    add.add_argument("--allow-principal", type=_principal, action="append", default=[],
                     metavar="PRINCIPAL", help="e.g. User:alice (repeatable)")
    add.add_argument("--deny-principal", type=_principal, action="append", default=[],
                     metavar="PRINCIPAL", help="e.g. User:mallory (repeatable)")
    add.add_argument("--host", default="*", help="client IP the ACL applies to (default *)")
    add.add_argument("--operation", type=_operation, action="append", required=True,
                     help="read, write, create, delete, alter, describe, all, ... (repeatable)")
    add.set_defaults(func=lambda a: run_command(PROG, lambda: add_acls(a)))

    for name, helptext, func in (("list", "list ACLs matching a filter", list_acls),
                                 ("remove", "remove the ACLs matching a filter", remove_acls)):
        cmd = acls_sub.add_parser(name, help=helptext)
        add_bootstrap_argument(cmd)
        _add_resource_arguments(cmd, required=False)
        cmd.add_argument("--principal", type=_principal, help="only this principal")
        cmd.add_argument("--host", help="only this host")
        cmd.add_argument("--operation", type=_operation, help="only this operation")
        cmd.add_argument("--permission", choices=["allow", "deny"], help="only ALLOW or DENY")
        cmd.set_defaults(func=lambda a, f=func: run_command(PROG, lambda: f(a)))


def _resource(args: argparse.Namespace) -> tuple[int, str | None]:
    if args.topic is not None:
        return TOPIC, args.topic
    if args.group is not None:
        return GROUP, args.group
    if args.transactional_id is not None:
        return TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return CLUSTER, CLUSTER_NAME
    return RESOURCE_TYPES["ANY"], None


def describe(resource_type: int, name: str, pattern: int, principal: str, host: str,
             operation: int, permission: int) -> str:
    return (f"{_NAMES['permission'][permission]} {principal} {_NAMES['operation'][operation]} "
            f"from host {host} on {_NAMES['resource'][resource_type]}:"
            f"{_NAMES['pattern'][pattern]}:{name}")


async def add_acls(args: argparse.Namespace) -> int:
    if not args.allow_principal and not args.deny_principal:
        raise CliError("give --allow-principal or --deny-principal", 2)
    resource_type, name = _resource(args)
    pattern = PATTERN_TYPES[(args.resource_pattern_type or "literal").upper()]
    entries = [(p, PERMISSIONS["ALLOW"]) for p in args.allow_principal] + \
        [(p, PERMISSIONS["DENY"]) for p in args.deny_principal]
    async with admin_client(args) as admin:
        for principal, permission in entries:
            for operation in args.operation:
                response = await send(admin, CreateAclsRequest(
                    resource_type, name, pattern, principal, args.host, operation, permission))
                code, message = response.creation_responses[0]
                if code:
                    raise CliError(f"cannot add ACL: {error_message(code, message)}")
                print("added " + describe(resource_type, str(name), pattern, principal,
                                          args.host, operation, permission))
    return 0


def _filter(args: argparse.Namespace) -> tuple[int, str | None, int, str | None, str | None,
                                                 int, int]:
    resource_type, name = _resource(args)
    pattern = PATTERN_TYPES[(args.resource_pattern_type or "any").upper()]
    permission = PERMISSIONS[(args.permission or "any").upper()]
    return (resource_type, name, pattern, args.principal, args.host,
            args.operation or OPERATIONS["ANY"], permission)


async def list_acls(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        response = await send(admin, DescribeAclsRequest(*_filter(args)))
    if response.error_code:
        raise CliError(f"cannot list ACLs: "
                       f"{error_message(response.error_code, response.error_message)}")
    for resource_type, name, pattern, acls in response.resources:
        for principal, host, operation, permission in acls:
            print(describe(resource_type, name, pattern, principal, host, operation,
                           permission))
    return 0


async def remove_acls(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        response = await send(admin, DeleteAclsRequest(*_filter(args)))
    code, message, matching = response.filter_responses[0]
    if code:
        raise CliError(f"cannot remove ACLs: {error_message(code, message)}")
    for _code, _message, resource_type, name, pattern, principal, host, operation, \
            permission in matching:
        print("removed " + describe(resource_type, name, pattern, principal, host, operation,
                                    permission))
    if not matching:
        print("no ACL matched")
    return 0
