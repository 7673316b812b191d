"""Entry point of the `streams` command: one subcommand module per area."""

from __future__ import annotations

import argparse
import os
import sys

from . import (
    app_cmd,
    broker_cmd,
    connect_cmd,
    consume_cmd,
    groups_cmd,
    produce_cmd,
    run_cmd,
    share_groups_cmd,
    topics_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streams", description="streams command line")
    # Taken out of argv before parsing (see main), so they work after any subcommand too.
    parser.add_argument("--log-level", metavar="LEVEL",
                        help="CRITICAL, ERROR, WARNING, INFO (default) or DEBUG; any command")
    parser.add_argument("--log-format", metavar="text|json",
                        help="log lines as text (default) or one JSON object per line")
    sub = parser.add_subparsers(dest="command", required=True)
    broker_cmd.add_parser(sub)
    topics_cmd.add_parser(sub)
    produce_cmd.add_parser(sub)
    consume_cmd.add_parser(sub)
    groups_cmd.add_parser(sub)
    share_groups_cmd.add_parser(sub)
    run_cmd.add_parser(sub)
    connect_cmd.add_parser(sub)
    app_cmd.add_parser(sub)
    from . import registry_cmd  # noqa: I001 - kept apart to keep this edit small

    registry_cmd.add_parser(sub)
    from . import health_cmd  # noqa: I001

    health_cmd.add_parser(sub)
    from . import acls_cmd, users_cmd  # noqa: I001

    acls_cmd.add_parser(sub)
    users_cmd.add_parser(sub)
    from . import mirror_cmd  # noqa: I001

    mirror_cmd.add_parser(sub)
    from . import console_cmd  # noqa: I001

    console_cmd.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..metrics.logs import configure_logging, install_client_log_filter, take_logging_options

    try:
        argv, level, fmt = take_logging_options(list(sys.argv[1:] if argv is None else argv))
        if level or fmt:
            configure_logging(level, fmt)
    except ValueError as exc:
        print(f"streams: {exc}", file=sys.stderr)
        return 2
    install_client_log_filter()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # stdout closed early (`streams ... | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
