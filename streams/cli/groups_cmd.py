"""`streams groups list | describe GROUP`, shaped like kafka-consumer-groups.sh."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from .client import (
    CliError,
    add_bootstrap_argument,
    admin_client,
    error_message,
    partition_offsets,
    run_command,
)

PROG = "streams groups"
COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
           "CONSUMER-ID", "HOST", "CLIENT-ID")


@dataclass
class Member:
    member_id: str
    client_id: str
    host: str
    partitions: list[TopicPartition]


def add_parser(sub: argparse._SubParsersAction) -> None:
    groups = sub.add_parser("groups", help="list and describe consumer groups")
    groups_sub = groups.add_subparsers(dest="groups_command", required=True)
    listing = groups_sub.add_parser("list", help="list consumer group ids")
    listing.set_defaults(func=lambda a: run_command(PROG, lambda: list_groups(a)))
    describe = groups_sub.add_parser("describe", help="state, members, offsets and lag")
    describe.add_argument("group")
    describe.set_defaults(func=lambda a: run_command(PROG, lambda: describe_group(a)))
    for parser in (listing, describe):
        add_bootstrap_argument(parser)


async def list_groups(args: argparse.Namespace) -> int:
    async with admin_client(args.bootstrap_servers) as admin:
        groups = await admin.list_consumer_groups()
    for group_id in sorted({g[0] for g in groups}):
        print(group_id)
    return 0


def _members(description: dict[str, Any]) -> list[Member]:
    members = []
    for m in description["members"]:
        partitions: list[TopicPartition] = []
        raw = m.get("member_assignment")
        if raw and description.get("protocol_type") == "consumer":
            partitions = ConsumerProtocolMemberAssignment.decode(raw).partitions()
        members.append(Member(m["member_id"], m["client_id"], m["client_host"] or "-",
                              sorted(partitions)))
    return members


async def describe_group(args: argparse.Namespace) -> int:
    group = args.group
    async with admin_client(args.bootstrap_servers) as admin:
        responses = await admin.describe_consumer_groups([group])
        descriptions = [g for r in responses for g in r.to_object()["groups"]]
        if not descriptions:
            raise CliError(f"the broker returned no description for group {group!r}")
        description = descriptions[0]
        if description["error_code"]:
            raise CliError(f"cannot describe group {group!r}: "
                           f"{error_message(description['error_code'])}")
        committed = await admin.list_consumer_group_offsets(group)
    state = description["state"]
    members = _members(description)
    committed = {tp: meta.offset for tp, meta in committed.items() if meta.offset >= 0}
    if state == "Dead" and not committed:
        raise CliError(f"consumer group {group!r} does not exist")

    owner = {tp: m for m in members for tp in m.partitions}
    partitions = sorted(set(committed) | set(owner))
    ends = (await partition_offsets(args.bootstrap_servers, partitions))[1] if partitions else {}

    protocol = description.get("protocol") or "-"
    print(f"Consumer group '{group}' is {state} with {len(members)} member(s) "
          f"(assignor: {protocol}).")
    rows = [COLUMNS]
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if current is not None and end is not None else None
        m = owner.get(tp)
        rows.append((group, tp.topic, str(tp.partition), _dash(current), _dash(end), _dash(lag),
                     m.member_id if m else "-", m.host if m else "-", m.client_id if m else "-"))
    for m in members:
        if not m.partitions:
            rows.append((group, "-", "-", "-", "-", "-", m.member_id, m.host, m.client_id))
    _print_table(rows)
    return 0


def _dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())

