"""`streams mirror mm2.properties [--clusters A,B]` (MirrorMaker 2, as connect-mirror-maker.sh)
and `streams mirror translate --config mm2.properties --source A --target B --group G` (the
offsets a group resumes at on B, as RemoteClusterUtils.translateOffsets)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

PROG = "streams mirror"


def add_parser(sub: argparse._SubParsersAction) -> None:
    mirror = sub.add_parser(
        "mirror", help="MirrorMaker 2: replicate topics and consumer offsets between clusters",
        description="streams mirror mm2.properties [--clusters A,B] | streams mirror translate "
                    "--config mm2.properties --source A --target B --group G")
    mirror.add_argument("args", nargs=argparse.REMAINDER,
                        help="mm2.properties [--clusters A,B], or translate ...")
    mirror.set_defaults(func=run)


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("config", help="mm2.properties (clusters, A.bootstrap.servers, "
                                       "A->B.enabled, ...)")
    parser.add_argument("--clusters", help="run only the flows whose target is one of these "
                                           "(comma-separated aliases)")
    return parser


def _translate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{PROG} translate")
    parser.add_argument("--config", required=True, help="mm2.properties")
    parser.add_argument("--source", required=True, help="alias of the cluster the group used")
    parser.add_argument("--target", required=True, help="alias of the cluster to fail over to")
    parser.add_argument("--group", required=True, help="consumer group id")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    return parser


def run(args: argparse.Namespace) -> int:
    rest = list(args.args)
    if rest and rest[0] == "translate":
        return translate(_translate_parser().parse_args(rest[1:]))
    return mirror(_run_parser().parse_args(rest))


def _load(path: str) -> object:
    from connect.mirror.maker import MirrorMakerConfig
    from connect.runtime.config import load_config_file

    return MirrorMakerConfig(load_config_file(path), where=path)


def mirror(args: argparse.Namespace) -> int:
    from connect.config_def import ConfigException
    from connect.mirror.driver import MirrorMaker
    from connect.runtime.gc_policy import tune_gc

    try:
        config = _load(args.config)
        only = [c.strip() for c in args.clusters.split(",")] if args.clusters else None
        maker = MirrorMaker(config, only)  # type: ignore[arg-type]
        config.validate_connectors()  # type: ignore[attr-defined]
    except (ValueError, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        tune_gc()
        await maker.run(stop)

    try:
        asyncio.run(main())
    except ConfigException as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"{PROG}: cannot start: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line, no traceback
        print(f"{PROG}: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def translate(args: argparse.Namespace) -> int:
    from connect.mirror.client import remote_consumer_offsets
    from connect.mirror.config import cluster_clients
    from connect.mirror.policy import replication_policy

    try:
        config = _load(args.config)
        for alias in (args.source, args.target):
            if alias not in config.clusters:  # type: ignore[attr-defined]
                raise ValueError(f"cluster '{alias}' is not in clusters = "
                                 f"{', '.join(config.clusters)}")  # type: ignore[attr-defined]
        props = {f"target.cluster.{k}": v
                 for k, v in config.cluster_props(args.target).items()}  # type: ignore[attr-defined]
        target = cluster_clients(props, "target", args.target)
        flow_props = config.raw  # type: ignore[attr-defined]
        policy_props = {k: v for k, v in flow_props.items() if k.startswith("replication.")}
        prefix = f"{args.source}->{args.target}."
        policy_props.update({k[len(prefix):]: v for k, v in flow_props.items()
                             if k.startswith(prefix + "replication.")})
        policy = replication_policy(policy_props, args.source)
    except (ValueError, OSError) as exc:
        print(f"{PROG} translate: {exc}", file=sys.stderr)
        return 2
    try:
        checkpoints = asyncio.run(remote_consumer_offsets(target, policy, args.source,
                                                          args.group, args.timeout))
    except Exception as exc:  # noqa: BLE001 - one line
        print(f"{PROG} translate: cannot read checkpoints from {args.target}: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if not checkpoints:
        print(f"{PROG} translate: no checkpoints for group {args.group!r} from {args.source} "
              f"on {args.target} (topic {policy.checkpoints_topic(args.source)})",
              file=sys.stderr)
        return 1
    rows = [("GROUP", "TOPIC", "PARTITION", "OFFSET", "UPSTREAM-OFFSET")]
    rows += [(args.group, tp.topic, str(tp.partition), str(c.downstream_offset),
              str(c.upstream_offset)) for tp, c in sorted(checkpoints.items())]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0
