"""`streams acls add | list | remove`: manage ACLs through Kafka's admin APIs, shaped like
kafka-acls.sh (--allow-principal/--deny-principal, --operation, --topic/--group/--cluster/
--transactional-id, --resource-pattern-type).

The requests are built and read by ``streams.kafka.acls`` (aiokafka has no admin methods for
them), as for the console and MirrorMaker 2.
"""

from __future__ import annotations

import argparse

from aiokafka.errors import KafkaError

from ..kafka.acls import (
    CLUSTER_NAME,
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
    describe_binding,
)
from .client import (
    CliError,
    add_bootstrap_argument,
    admin_client,
    connection_kwargs,
    error_message,
    run_command,
)

PROG = "streams acls"


async def authorization_hint(target: argparse.Namespace | str) -> str:
    """", or is not authorized for User:X" when the broker has an authorizer, else "".

    Kafka hides from Metadata the topics a principal may not describe, so "does not exist" is
    what an unauthorized client sees for a topic that exists. One DescribeAcls request tells
    whether an authorizer is on (SECURITY_DISABLED when none is)."""
    try:
        async with admin_client(target) as admin:
            await describe_acls(admin)
    except SecurityDisabled:
        return ""
    except AclRequestError:
        pass  # refused otherwise (not authorized to describe ACLs): an authorizer is on
    except (CliError, KafkaError, OSError):
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
        return RESOURCE_TYPES["TOPIC"], args.topic
    if args.group is not None:
        return RESOURCE_TYPES["GROUP"], args.group
    if args.transactional_id is not None:
        return RESOURCE_TYPES["TRANSACTIONAL_ID"], args.transactional_id
    if args.cluster:
        return RESOURCE_TYPES["CLUSTER"], CLUSTER_NAME
    return RESOURCE_TYPES["ANY"], None


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
                binding = AclBinding(resource_type, str(name), pattern, principal, args.host,
                                     operation, permission)
                try:
                    await create_acl(admin, binding)
                except AclRequestError as exc:
                    raise CliError("cannot add ACL: "
                                   f"{error_message(exc.code, exc.message)}") from None
                print("added " + describe_binding(binding))
    return 0


def _filter(args: argparse.Namespace) -> AclFilter:
    resource_type, name = _resource(args)
    pattern = PATTERN_TYPES[(args.resource_pattern_type or "any").upper()]
    permission = PERMISSIONS[(args.permission or "any").upper()]
    return AclFilter(resource_type, name, pattern, args.principal, args.host,
                     args.operation or OPERATIONS["ANY"], permission)


async def list_acls(args: argparse.Namespace) -> int:
    try:
        async with admin_client(args) as admin:
            found = await describe_acls(admin, _filter(args))
    except AclRequestError as exc:
        raise CliError(f"cannot list ACLs: {error_message(exc.code, exc.message)}") from None
    for binding in found:
        print(describe_binding(binding))
    return 0


async def remove_acls(args: argparse.Namespace) -> int:
    try:
        async with admin_client(args) as admin:
            removed = await delete_acls(admin, _filter(args))
    except AclRequestError as exc:
        raise CliError(f"cannot remove ACLs: {error_message(exc.code, exc.message)}") from None
    for binding in removed:
        print("removed " + describe_binding(binding))
    if not removed:
        print("no ACL matched")
    return 0
