"""`streams app reset`: kafka-streams-application-reset for our (and Kafka's) applications.

    streams app reset --application-id ID --input-topics T[,T] [--intermediate-topics T[,T]]
        [--internal-topics T[,T]]
        --bootstrap-servers BS [--to-earliest|--to-latest|--to-offset N|--to-datetime ISO|
        --shift-by N|--by-duration PnDTnHnMnS] [--dry-run]

Every instance must be stopped. Input offsets move (to the earliest by default), intermediate
topics' offsets move to their end, internal topics are deleted. Local state is not touched:
call ``KafkaStreams.clean_up()`` on each instance (or delete its state.dir/application.id)
before restarting, as with Kafka's tool.
"""

from __future__ import annotations

import argparse

from ..runtime import reset
from .client import CliError, add_bootstrap_argument, connection_kwargs, run_command
from .groups_cmd import add_scenario_arguments, scenario_from_args

PROG = "streams app reset"


def add_parser(sub: argparse._SubParsersAction) -> None:
    app = sub.add_parser("app", help="application tools (reset)")
    app_sub = app.add_subparsers(dest="app_command", required=True)
    resetting = app_sub.add_parser(
        "reset", help="reset an application to reprocess its input from scratch")
    resetting.add_argument("--application-id", required=True, metavar="ID")
    resetting.add_argument("--input-topics", default="", metavar="T[,T]",
                           help="user input topics: offsets reset (earliest by default)")
    resetting.add_argument("--intermediate-topics", default="", metavar="T[,T]",
                           help="user topics both written and read: offsets to the end")
    resetting.add_argument("--internal-topics", metavar="T[,T]",
                           help="delete only these of the application's internal topics "
                                "(default: every one, inferred from their names)")
    add_scenario_arguments(resetting, default_earliest=True)
    resetting.add_argument("--dry-run", action="store_true",
                           help="print what would be done, change nothing")
    add_bootstrap_argument(resetting)
    resetting.set_defaults(func=lambda a: run_command(PROG, lambda: reset_app(a)))


def _topics(value: str) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()]


async def reset_app(args: argparse.Namespace) -> int:
    spec = scenario_from_args(args)
    inputs, intermediate = _topics(args.input_topics), _topics(args.intermediate_topics)
    try:
        plan = await reset.reset_application(args.bootstrap_servers, args.application_id,
                                             inputs, intermediate, spec, args.dry_run,
                                             client_kwargs=connection_kwargs(args),
                                             internal_topics=None if args.internal_topics is None
                                             else _topics(args.internal_topics))
    except reset.ResetError as exc:
        raise CliError(str(exc)) from None
    if args.dry_run:
        print("----Dry run----")
    if inputs:
        print(f"Reset-offsets for input topics [{', '.join(inputs)}]")
        print("Following input topics offsets will be reset to (for consumer group "
              f"{args.application_id})")
        for change in plan.offsets:
            print(f"Topic: {change.partition.topic} Partition: {change.partition.partition} "
                  f"Offset: {change.new}")
    else:
        print("No input topics specified, skipping seek.")
    for change in plan.intermediate:
        print(f"Topic: {change.partition.topic} Partition: {change.partition.partition} "
              f"Offset: {change.new} (end of intermediate topic)")
    print("Done.")
    which = "inferred" if args.internal_topics is None else "specified"
    print(f"Deleting {which} internal topics [{', '.join(plan.internal_topics)}]")
    print("Done.")
    return 0
