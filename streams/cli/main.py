"""Entry point of the `streams` command: one subcommand module per area."""

from __future__ import annotations

import argparse
import sys

from . import (
    app_cmd,
    broker_cmd,
    connect_cmd,
    consume_cmd,
    groups_cmd,
    produce_cmd,
    run_cmd,
    topics_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streams", description="streams command line")
    sub = parser.add_subparsers(dest="command", required=True)
    broker_cmd.add_parser(sub)
    topics_cmd.add_parser(sub)
    produce_cmd.add_parser(sub)
    consume_cmd.add_parser(sub)
    groups_cmd.add_parser(sub)
    run_cmd.add_parser(sub)
    connect_cmd.add_parser(sub)
    app_cmd.add_parser(sub)
    from . import registry_cmd  # noqa: I001 - kept apart to keep this edit small

    registry_cmd.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
