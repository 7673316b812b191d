"""`streams share-groups list | describe | reset-offsets | delete | delete-offsets`, shaped like
Kafka's kafka-share-groups.sh (KIP-932).

A share group's "offset" on a partition is its share-partition start offset: every record
before it is delivered and acknowledged (or archived). Resetting offsets or deleting a group
needs the group to have no members, as Kafka requires; reset-offsets only prints the plan unless
--execute is given.
"""

from __future__ import annotations

import argparse
import sys

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from ..kafka import clients
from ..kafka.admin import (
    ShareGroupInfo,
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group,
    list_groups_with_types,
    share_group_offsets,
)
from ..runtime import reset
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    admin_client,
    connection_kwargs,
    error_message,
    run_command,
    start_client,
)
from .groups_cmd import (
    _print_table,
    _resolve_partitions,
    add_scenario_arguments,
    parse_topic_partitions,
    scenario_from_args,
)

PROG = "streams share-groups"
GROUP_ID_NOT_FOUND = 69


def add_parser(sub: argparse._SubParsersAction) -> None:
    share = sub.add_parser("share-groups", help="list, describe and reset share groups (KIP-932)")
    share_sub = share.add_subparsers(dest="share_groups_command", required=True)
    listing = share_sub.add_parser("list", help="share group ids and their state")
    listing.set_defaults(func=lambda a: run_command(PROG, lambda: list_share_groups(a)))
    describe = share_sub.add_parser(
        "describe", help="start offset and lag per partition (default), members or state")
    describe.add_argument("group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="each member and its partitions")
    view.add_argument("--state", action="store_true", help="the group's state and epoch")
    describe.set_defaults(func=lambda a: run_command(PROG, lambda: describe_group(a)))
    resetting = share_sub.add_parser(
        "reset-offsets", help="move a share group's start offsets (the group must be empty)")
    resetting.add_argument("--group", required=True)
    topics = resetting.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                        help="topic (optionally only some partitions); repeatable")
    topics.add_argument("--all-topics", action="store_true",
                        help="every topic the group has share state for")
    add_scenario_arguments(resetting, shift_by=False)
    mode = resetting.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    mode.add_argument("--execute", action="store_true", help="alter the start offsets")
    resetting.set_defaults(func=lambda a: run_command(PROG, lambda: reset_offsets(a)))
    deleting = share_sub.add_parser("delete", help="delete empty share groups and their state")
    deleting.add_argument("--group", required=True, action="append", help="repeatable")
    deleting.set_defaults(func=lambda a: run_command(PROG, lambda: delete_groups(a)))
    delete_offsets = share_sub.add_parser(
        "delete-offsets", help="delete a share group's state for whole topics")
    delete_offsets.add_argument("--group", required=True)
    delete_offsets.add_argument("--topic", required=True, action="append", help="repeatable")
    delete_offsets.set_defaults(func=lambda a: run_command(PROG, lambda: delete_group_offsets(a)))
    for parser in (listing, describe, resetting, deleting, delete_offsets):
        add_bootstrap_argument(parser)


async def list_share_groups(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        typed = await list_groups_with_types(admin)
    _print_table([("GROUP", "STATE"), *((g, state) for g, kind, state in typed
                                        if kind == "share")])
    return 0


async def _existing_share_group(admin: AIOKafkaAdminClient, group: str) -> ShareGroupInfo:
    info = await describe_share_group(admin, group)
    if info.error_code == GROUP_ID_NOT_FOUND:
        if info.error_message and "not a share group" in info.error_message:
            raise CliError(f"group {group!r} is not a share group")
        raise CliError(f"share group {group!r} does not exist")
    if info.error_code:
        raise CliError(f"cannot describe share group {group!r}: "
                       f"{error_message(info.error_code, info.error_message)}")
    return info


async def describe_group(args: argparse.Namespace) -> int:
    group = args.group
    async with admin_client(args) as admin:
        info = await _existing_share_group(admin, group)
        offsets = await share_group_offsets(admin, group)
    members = info.members
    if args.state:
        _print_table([("GROUP", "STATE", "GROUP-EPOCH", "ASSIGNOR", "#MEMBERS"),
                      (group, info.state, str(info.group_epoch),
                       info.assignor, str(len(members)))])
        return 0
    if args.members:
        rows = [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "MEMBER-EPOCH", "#PARTITIONS",
                 "ASSIGNMENT")]
        for m in sorted(members, key=lambda m: m.member_id):
            assignment = ",".join(f"{t}:{p}" for t, p in m.assigned) or "-"
            rows.append((group, m.member_id, m.host or "-", m.client_id or "-", str(m.epoch),
                         str(len(m.assigned)), assignment))
        _print_table(rows)
        return 0
    print(f"Share group '{group}' is {info.state} with "
          f"{len(members)} member(s).")
    rows = [("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")]
    for (topic, partition), (start, lag, code) in sorted(offsets.items()):
        if code:
            rows.append((group, topic, str(partition), "Error: " + error_message(code), "-"))
            continue
        rows.append((group, topic, str(partition), _dash(start), _dash(lag)))
    _print_table(rows)
    if any(start < 0 for start, _lag, _code in offsets.values()):
        print("Note: '-' is a share-partition not yet initialized (no fetch since it was "
              "assigned or reset to -1); share.auto.offset.reset decides where it starts.")
    return 0


def _dash(value: int) -> str:
    return "-" if value < 0 else str(value)


async def reset_offsets(args: argparse.Namespace) -> int:
    group = args.group
    spec = scenario_from_args(args)
    async with admin_client(args) as admin:
        info = await describe_share_group(admin, group)
        if info.error_code and info.error_code != GROUP_ID_NOT_FOUND:
            raise CliError(f"cannot describe share group {group!r}: "
                           f"{error_message(info.error_code, info.error_message)}")
        if info.error_code == GROUP_ID_NOT_FOUND and info.error_message and (
                "not a share group" in info.error_message):
            raise CliError(f"group {group!r} is not a share group")
        if info.members:
            raise CliError(f"share group {group!r} is not empty: it has {len(info.members)} "
                           "member(s); stop them first")
        current = {TopicPartition(t, p): start for (t, p), (start, _lag, code)
                   in (await share_group_offsets(admin, group)).items()
                   if not code and start >= 0}
        if args.all_topics:
            partitions = sorted(current)
            if not partitions:
                raise CliError(f"share group {group!r} has no share state to reset")
        else:
            try:
                partitions = await _resolve_partitions(admin, parse_topic_partitions(args.topic))
            except reset.ResetError as exc:
                raise CliError(str(exc)) from None
        consumer = clients.consumer(connection_kwargs(args, "consumer"),
                                    enable_auto_commit=False,
                                    request_timeout_ms=REQUEST_TIMEOUT_MS)
        try:
            await start_client(consumer, args.bootstrap_servers)
            new = await reset.target_offsets(consumer, partitions, current, spec)
        finally:
            await consumer.stop()
        if args.execute:
            code, message, results = await alter_share_group_offsets(
                admin, group, {(tp.topic, tp.partition): o for tp, o in new.items()})
            if code:
                raise CliError(f"cannot reset the offsets of share group {group!r}: "
                               f"{error_message(code, message)}")
            failed = {tp: c for tp, c in results.items() if c}
            if failed:
                raise CliError("cannot reset " + ", ".join(
                    f"{t}-{p} ({error_message(c)})" for (t, p), c in sorted(failed.items())))
    if not args.execute and not args.dry_run:
        print("WARN: No action will be performed as the --execute option is missing; "
              "add --dry-run to say so explicitly.", file=sys.stderr)
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET")]
    rows += [(group, tp.topic, str(tp.partition), str(offset))
             for tp, offset in sorted(new.items())]
    _print_table(rows)
    return 0


async def delete_groups(args: argparse.Namespace) -> int:
    from ..kafka.admin import delete_group

    async with admin_client(args) as admin:
        for group in args.group:
            info = await _existing_share_group(admin, group)
            if info.members:
                raise CliError(f"share group {group!r} is not empty: it has "
                               f"{len(info.members)} member(s)")
            code = await delete_group(admin, group)
            if code:
                raise CliError(f"cannot delete share group {group!r}: {error_message(code)}")
    names = ", ".join(f"'{g}'" for g in args.group)
    print(f"Deletion of requested share groups ({names}) was successful.")
    return 0


async def delete_group_offsets(args: argparse.Namespace) -> int:
    group = args.group
    async with admin_client(args) as admin:
        await _existing_share_group(admin, group)
        code, message, results = await delete_share_group_offsets(admin, group, args.topic)
    if code:
        raise CliError(f"cannot delete the offsets of share group {group!r}: "
                       f"{error_message(code, message)}")
    rows = [("TOPIC", "STATUS")]
    rows += [(topic, f"Error: {detail or error_message(c)}" if c else "Successful")
             for topic, (c, detail) in sorted(results.items())]
    failed = any(c for c, _ in results.values())
    if failed:
        print(f"Request failed for deleting offsets of share group {group!r}", file=sys.stderr)
    else:
        print(f"Request succeeded for deleting offsets from share group {group}.")
    _print_table(rows)
    return 1 if failed else 0
