"""`streams groups list | describe | reset-offsets | delete | delete-offsets`, shaped like
kafka-consumer-groups.sh (its --reset-offsets, --delete and --delete-offsets).

Changing a group's offsets or deleting it needs the group to have no active members, as
Kafka's tool requires; reset-offsets only prints the plan unless --execute is given."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from ..kafka import clients
from ..kafka.admin import describe_consumer_group, list_groups_with_types
from ..runtime import reset
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    admin_client,
    connection_kwargs,
    error_message,
    partition_offsets,
    run_command,
    start_client,
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
    listing.add_argument("--type", action="store_true", dest="show_type",
                         help="also print each group's type (classic, consumer, share) and "
                              "state, as kafka-consumer-groups.sh --list --type")
    listing.set_defaults(func=lambda a: run_command(PROG, lambda: list_groups(a)))
    describe = groups_sub.add_parser("describe", help="state, members, offsets and lag")
    describe.add_argument("group")
    describe.set_defaults(func=lambda a: run_command(PROG, lambda: describe_group(a)))
    resetting = groups_sub.add_parser(
        "reset-offsets", help="move a group's committed offsets (the group must be inactive)")
    resetting.add_argument("--group", required=True)
    topics = resetting.add_mutually_exclusive_group()
    topics.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                        help="topic (optionally only some partitions); repeatable")
    topics.add_argument("--all-topics", action="store_true",
                        help="every topic the group has committed offsets for")
    add_scenario_arguments(resetting, extra=True)
    resetting.add_argument("--export", action="store_true",
                           help="print the plan as CSV (topic,partition,offset), the format "
                                "--from-file reads")
    mode = resetting.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    resetting.set_defaults(func=lambda a: run_command(PROG, lambda: reset_offsets(a)))
    deleting = groups_sub.add_parser("delete", help="delete inactive groups and their offsets")
    deleting.add_argument("--group", required=True, action="append", help="repeatable")
    deleting.set_defaults(func=lambda a: run_command(PROG, lambda: delete_groups(a)))
    delete_offsets = groups_sub.add_parser(
        "delete-offsets", help="delete a group's committed offsets for topics or partitions")
    delete_offsets.add_argument("--group", required=True)
    delete_offsets.add_argument("--topic", required=True, action="append",
                                metavar="TOPIC[:P,P...]", help="repeatable")
    delete_offsets.set_defaults(func=lambda a: run_command(PROG, lambda: delete_group_offsets(a)))
    for parser in (listing, describe, resetting, deleting, delete_offsets):
        add_bootstrap_argument(parser)


def add_scenario_arguments(parser: argparse.ArgumentParser, default_earliest: bool = False,
                           extra: bool = False, shift_by: bool = True) -> None:
    """Kafka's reset scenarios (exactly one; with ``default_earliest`` none means earliest);
    ``extra`` adds the group tool's --to-current and --from-file; ``shift_by=False`` leaves
    out --shift-by (kafka-share-groups.sh has none)."""
    scenario = parser.add_mutually_exclusive_group(required=not default_earliest)
    if extra:
        scenario.add_argument("--to-current", action="store_true",
                              help="the committed offset (the log end where there is none)")
        scenario.add_argument("--from-file", metavar="CSV",
                              help="topic,partition,offset lines (as --export writes them)")
    scenario.add_argument("--to-earliest", action="store_true")
    scenario.add_argument("--to-latest", action="store_true")
    scenario.add_argument("--to-offset", type=int, metavar="N")
    scenario.add_argument("--to-datetime", metavar="ISO",
                          help="e.g. 2024-01-31T10:00:00.000 (UTC unless a zone is given)")
    if shift_by:
        scenario.add_argument("--shift-by", type=int, metavar="N",
                              help="+N or -N from the current")
    scenario.add_argument("--by-duration", metavar="PnDTnHnMnS",
                          help="the offsets of this long ago, e.g. PT1H")


def scenario_from_args(args: argparse.Namespace) -> reset.OffsetSpec:
    try:
        if getattr(args, "to_latest", False):
            return reset.OffsetSpec("latest")
        if getattr(args, "to_current", False):
            return reset.OffsetSpec("current")
        if getattr(args, "to_offset", None) is not None:
            return reset.OffsetSpec("offset", args.to_offset)
        if getattr(args, "to_datetime", None):
            return reset.OffsetSpec.parse_datetime(args.to_datetime)
        if getattr(args, "shift_by", None) is not None:
            return reset.OffsetSpec("shift", args.shift_by)
        if getattr(args, "by_duration", None):
            return reset.OffsetSpec.parse_duration(args.by_duration)
    except reset.ResetError as exc:
        raise CliError(str(exc)) from None
    return reset.OffsetSpec("earliest")


def parse_topic_partitions(specs: list[str]) -> dict[str, list[int] | None]:
    """``TOPIC`` or ``TOPIC:0,2`` -> {topic: partitions or None for all}."""
    result: dict[str, list[int] | None] = {}
    for spec in specs:
        topic, sep, parts = spec.partition(":")
        if not topic:
            raise CliError(f"--topic {spec!r}: expected TOPIC or TOPIC:PARTITION[,PARTITION]")
        if not sep:
            result[topic] = None
            continue
        try:
            result[topic] = sorted({int(p) for p in parts.split(",") if p.strip()})
        except ValueError:
            raise CliError(f"--topic {spec!r}: partitions must be integers") from None
    return result


async def _resolve_partitions(admin: Any, specs: dict[str, list[int] | None]
                              ) -> list[TopicPartition]:
    existing = set(await admin.list_topics())
    missing = sorted(set(specs) - existing)
    if missing:
        raise CliError(f"topic(s) not found: {', '.join(missing)}")
    result = []
    for tp in await reset.topic_partitions(admin, specs):
        wanted = specs[tp.topic]
        if wanted is None or tp.partition in wanted:
            result.append(tp)
    for topic, wanted in specs.items():
        unknown = sorted(set(wanted or ()) - {tp.partition for tp in result if tp.topic == topic})
        if unknown:
            raise CliError(f"topic {topic!r} has no partition(s) {unknown}")
    return result


async def reset_offsets(args: argparse.Namespace) -> int:

    group = args.group
    spec = scenario_from_args(args)
    from_file = read_offsets_file(args.from_file) if args.from_file else None
    if from_file is None and not args.topic and not args.all_topics:
        raise CliError("one of --topic, --all-topics or --from-file is required")
    async with admin_client(args) as admin:
        try:
            await reset.require_inactive(admin, group)
            current = await reset.committed_offsets(admin, group)
            if from_file is not None:
                wanted = await _resolve_partitions(
                    admin, {t: sorted(p for tt, p in from_file if tt == t)
                            for t in {tp.topic for tp in from_file}})
                spec = reset.OffsetSpec("given")
                current = {**current, **from_file}
                partitions = sorted(wanted)
            elif args.all_topics:
                partitions = sorted(current)
            else:
                partitions = await _resolve_partitions(admin, parse_topic_partitions(args.topic))
            consumer = clients.consumer(connection_kwargs(args, "consumer"),
                                        enable_auto_commit=False,
                                        request_timeout_ms=REQUEST_TIMEOUT_MS)
            try:
                await start_client(consumer, args.bootstrap_servers)
                new = await reset.target_offsets(consumer, partitions, current, spec)
            finally:
                await consumer.stop()
            if args.execute:
                await reset.commit_offsets(admin, group, new)
        except reset.ResetError as exc:
            raise CliError(str(exc)) from None
    if not args.execute and not args.dry_run:
        print("WARN: No action will be performed as the --execute option is missing; "
              "add --dry-run to say so explicitly.", file=sys.stderr)
    if args.export:
        for tp, offset in sorted(new.items()):
            print(f"{tp.topic},{tp.partition},{offset}")
        return 0
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    rows += [(group, tp.topic, str(tp.partition), str(offset))
             for tp, offset in sorted(new.items())]
    _print_table(rows)
    return 0


def read_offsets_file(path: str) -> dict[TopicPartition, int]:
    """``topic,partition,offset`` lines (Kafka's --export format; a leading group column, as
    Kafka writes for several groups, is accepted and ignored)."""
    try:
        text = open(path).read()  # noqa: SIM115 - read at once
    except OSError as exc:
        raise CliError(f"--from-file {path}: {exc.strerror}") from None
    result: dict[TopicPartition, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            topic, partition, offset = fields[-3], int(fields[-2]), int(fields[-1])
        except (IndexError, ValueError):
            raise CliError(f"--from-file {path}:{number}: expected topic,partition,offset, "
                           f"got {line!r}") from None
        result[TopicPartition(topic, partition)] = offset
    if not result:
        raise CliError(f"--from-file {path}: no offsets in it")
    return result


async def delete_groups(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        for group in args.group:
            try:
                state, members = await reset.group_state(admin, group)
                if state == "Dead":
                    raise CliError(f"consumer group {group!r} does not exist")
                if members:
                    raise CliError(f"consumer group {group!r} is not empty: it has {members} "
                                   "active member(s)")
                await reset.delete_group(admin, group)
            except reset.ResetError as exc:
                raise CliError(str(exc)) from None
    names = ", ".join(f"'{g}'" for g in args.group)
    print(f"Deletion of requested consumer groups ({names}) was successful.")
    return 0


async def delete_group_offsets(args: argparse.Namespace) -> int:
    group = args.group
    async with admin_client(args) as admin:
        try:
            state, _ = await reset.group_state(admin, group)
            if state == "Dead":
                raise CliError(f"consumer group {group!r} does not exist")
            partitions = await _resolve_partitions(admin, parse_topic_partitions(args.topic))
            results = await reset.delete_offsets(admin, group, partitions)
        except reset.ResetError as exc:
            raise CliError(str(exc)) from None
    failed = {tp: code for tp, code in results.items() if code}
    rows = [("TOPIC", "PARTITION", "STATUS")]
    rows += [(tp.topic, str(tp.partition),
              "Error: " + error_message(code) if code else "Successful")
             for tp, code in sorted(results.items())]
    if failed:
        print(f"Request failed for deleting offsets of group {group!r}", file=sys.stderr)
    else:
        print(f"Request succeed for deleting offsets from group {group}.")
    _print_table(rows)
    return 1 if failed else 0


async def list_groups(args: argparse.Namespace) -> int:
    if getattr(args, "show_type", False):
        async with admin_client(args) as admin:
            typed = await list_groups_with_types(admin)
        _print_table([("GROUP", "TYPE", "STATE"), *typed])
        return 0
    async with admin_client(args) as admin:
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
    async with admin_client(args) as admin:
        responses = await admin.describe_consumer_groups([group])
        descriptions = [g for r in responses for g in r.to_object()["groups"]]
        if not descriptions:
            raise CliError(f"the broker returned no description for group {group!r}")
        description = descriptions[0]
        if description["error_code"]:
            raise CliError(f"cannot describe group {group!r}: "
                           f"{error_message(description['error_code'])}")
        kip848 = await describe_consumer_group(admin, group)
        committed = await admin.list_consumer_group_offsets(group)
        # Topics that exist now: offsets are asked only for those, because a Metadata request
        # for a deleted topic would auto-create it again (auto.create.topics.enable).
        existing = set(await admin.list_topics())
    state = description["state"]
    members = _members(description)
    if kip848 is not None:  # DescribeGroups reports a KIP-848 group as Dead
        state = kip848.state
        members = [Member(m.member_id, m.client_id, m.host or "-",
                          [TopicPartition(t, p) for t, p in m.assigned])
                   for m in kip848.members]
    committed = {tp: meta.offset for tp, meta in committed.items() if meta.offset >= 0}
    if state == "Dead" and not committed:
        async with admin_client(args) as admin:
            kinds = {g: kind for g, kind, _state in await list_groups_with_types(admin)}
        if kinds.get(group) == "share":
            raise CliError(f"{group!r} is a share group: streams share-groups describe {group}")
        raise CliError(f"consumer group {group!r} does not exist")

    owner = {tp: m for m in members for tp in m.partitions}
    partitions = sorted(set(committed) | set(owner))
    live = [tp for tp in partitions if tp.topic in existing]
    ends = (await partition_offsets(args, live))[1] if live else {}

    if kip848 is not None:
        print(f"Consumer group '{group}' (type consumer, KIP-848) is {state} with "
              f"{len(members)} member(s) (assignor: {kip848.assignor}, group epoch "
              f"{kip848.group_epoch}, assignment epoch {kip848.assignment_epoch}).")
    else:
        protocol = description.get("protocol") or "-"
        print(f"Consumer group '{group}' is {state} with {len(members)} member(s) "
              f"(assignor: {protocol}).")
    rows = [COLUMNS]
    notes: list[str] = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if current is not None and end is not None else None
        if tp.topic not in existing:
            notes.append(f"{tp.topic}-{tp.partition}: the topic no longer exists (deleted); "
                         "its committed offset is kept until the group's offsets are deleted")
        elif lag is not None and lag < 0:
            notes.append(f"{tp.topic}-{tp.partition}: committed offset {current} is past the log "
                         f"end {end} (the topic was re-created or truncated); lag unknown")
            lag = None
        m = owner.get(tp)
        rows.append((group, tp.topic, str(tp.partition), _dash(current), _dash(end), _dash(lag),
                     m.member_id if m else "-", m.host if m else "-", m.client_id if m else "-"))
    for m in members:
        if not m.partitions:
            rows.append((group, "-", "-", "-", "-", "-", m.member_id, m.host, m.client_id))
    _print_table(rows)
    if kip848 is not None:
        _print_table([("CONSUMER-ID", "MEMBER-EPOCH", "ASSIGNED", "TARGET"), *(
            (m.member_id, str(m.epoch), str(len(m.assigned)), str(len(m.target)))
            for m in kip848.members)])
    for note in dict.fromkeys(notes):
        print(f"Note: {note}")
    return 0


def _dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())

