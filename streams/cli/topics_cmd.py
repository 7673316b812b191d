"""`streams topics create | list | describe | delete`, shaped like kafka-topics.sh."""

from __future__ import annotations

import argparse
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from .acls_cmd import authorization_hint
from .client import (
    CliError,
    add_bootstrap_argument,
    admin_client,
    error_message,
    partition_offsets,
    positive_int,
    run_command,
)

PROG = "streams topics"
DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source: set on the topic, not a default


def config_pair(value: str) -> tuple[str, str]:
    """argparse type for --config: split key=value at the first '='."""
    key, sep, setting = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {value!r}")
    return key.strip(), setting.strip()


def add_parser(sub: argparse._SubParsersAction) -> None:
    topics = sub.add_parser("topics", help="create, list, describe and delete topics")
    topics_sub = topics.add_subparsers(dest="topics_command", required=True)

    create = topics_sub.add_parser("create", help="create a topic")
    create.add_argument("name")
    create.add_argument("--partitions", type=positive_int, default=1,
                        help="number of partitions (default 1)")
    create.add_argument("--replication-factor", type=positive_int, default=1,
                        help="replicas per partition (default 1)")
    create.add_argument("--config", type=config_pair, action="append", default=[],
                        metavar="KEY=VALUE", help="topic config, e.g. cleanup.policy=compact")
    create.set_defaults(func=lambda a: run_command(PROG, lambda: create_topic(a)))

    listing = topics_sub.add_parser("list", help="list topic names")
    listing.set_defaults(func=lambda a: run_command(PROG, lambda: list_topics(a)))

    describe = topics_sub.add_parser("describe", help="partitions, leaders, offsets, configs")
    describe.add_argument("name")
    describe.set_defaults(func=lambda a: run_command(PROG, lambda: describe_topic(a)))

    delete = topics_sub.add_parser("delete", help="delete a topic and its data")
    delete.add_argument("name")
    delete.set_defaults(func=lambda a: run_command(PROG, lambda: delete_topic(a)))

    alter = topics_sub.add_parser("alter", help="set or remove topic configs")
    alter.add_argument("name")
    alter.add_argument("--config", type=config_pair, action="append", default=[],
                       metavar="KEY=VALUE", help="config to set, e.g. retention.ms=60000")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="config to return to its default")
    alter.set_defaults(func=lambda a: run_command(PROG, lambda: alter_topic(a)))

    for parser in (create, listing, describe, delete, alter):
        add_bootstrap_argument(parser)


async def create_topic(args: argparse.Namespace) -> int:
    configs = dict(args.config)
    topic = NewTopic(args.name, args.partitions, args.replication_factor, topic_configs=configs)
    async with admin_client(args) as admin:
        response = await admin.create_topics([topic])
    for name, code, *rest in response.topic_errors:
        if code:
            raise CliError(f"cannot create topic {name!r}: "
                           f"{error_message(code, rest[0] if rest else None)}")
    print(f"Created topic {args.name}.")
    return 0


async def list_topics(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        names = await admin.list_topics()
    for name in sorted(names):
        print(name)
    return 0


async def _require_topic(admin: AIOKafkaAdminClient, name: str,
                         args: argparse.Namespace) -> None:
    """Fail if the topic is missing; asking Metadata for it directly could auto-create it."""
    if name not in await admin.list_topics():
        raise CliError(f"topic {name!r} does not exist{await authorization_hint(args)}")


async def describe_topic(args: argparse.Namespace) -> int:
    name = args.name
    async with admin_client(args) as admin:
        await _require_topic(admin, name, args)
        (topic,) = await admin.describe_topics([name])
        if topic["error_code"]:
            raise CliError(f"cannot describe topic {name!r}: {error_message(topic['error_code'])}")
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name)])
    overrides = _topic_overrides(responses, name)
    partitions = sorted(topic["partitions"], key=lambda p: p["partition"])
    tps = [TopicPartition(name, p["partition"]) for p in partitions]
    starts, ends = await partition_offsets(args, tps)
    replication = len(partitions[0]["replicas"]) if partitions else 0
    configs = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
    print(f"Topic: {name}\tPartitionCount: {len(partitions)}\t"
          f"ReplicationFactor: {replication}\tConfigs: {configs}")
    for p, tp in zip(partitions, tps, strict=True):
        print(f"\tTopic: {name}\tPartition: {p['partition']}\tLeader: {p['leader']}\t"
              f"Replicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}\t"
              f"LogStartOffset: {starts[tp]}\tHighWatermark: {ends[tp]}")
    return 0


def _ids(nodes: list[int]) -> str:
    return ",".join(str(n) for n in nodes)


def _topic_overrides(responses: list[Any], name: str) -> dict[str, str]:
    """The configs set on the topic itself (kafka-topics.sh shows only these)."""
    overrides: dict[str, str] = {}
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"]:
                raise CliError(f"cannot read configs of topic {name!r}: "
                               f"{error_message(resource['error_code'], resource['error_message'])}")
            for entry in resource["config_entries"]:
                source = entry.get("config_source")
                dynamic = (source == DYNAMIC_TOPIC_CONFIG if source is not None
                           else not entry.get("is_default", True))
                if dynamic and entry["config_value"] is not None:
                    overrides[entry["config_names"]] = entry["config_value"]
    return overrides


async def delete_topic(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        await _require_topic(admin, args.name, args)
        response = await admin.delete_topics([args.name])
    for name, code, *rest in response.topic_error_codes:
        if code:
            raise CliError(f"cannot delete topic {name!r}: "
                           f"{error_message(code, rest[0] if rest else None)}")
    print(f"Deleted topic {args.name}.")
    return 0


async def alter_topic(args: argparse.Namespace) -> int:
    """Merge the changes into the topic's current overrides and write them back.

    aiokafka speaks only the legacy AlterConfigs API, which replaces every override, so the
    current overrides are read first (what kafka-configs.sh --add-config does incrementally).
    """
    if not args.config and not args.delete_config:
        raise CliError("nothing to alter: give --config KEY=VALUE or --delete-config KEY", 2)
    name = args.name
    async with admin_client(args) as admin:
        await _require_topic(admin, name, args)
        current = _topic_overrides(
            await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)]), name
        )
        updated = {**current, **dict(args.config)}
        for key in args.delete_config:
            updated.pop(key, None)
        responses = await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name, configs=updated)]
        )
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"]:
                raise CliError(f"cannot alter topic {name!r}: "
                               f"{error_message(resource['error_code'], resource['error_message'])}")
    changes = ", ".join([f"{k}={v}" for k, v in args.config] +
                        [f"{k} (default)" for k in args.delete_config])
    print(f"Altered topic {name}: {changes}.")
    return 0
