"""`streams connect standalone|distributed`: run a Kafka-Connect-style worker in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    connect = sub.add_parser("connect", help="run a Connect worker (standalone or distributed)")
    modes = connect.add_subparsers(dest="connect_mode", required=True)
    standalone = modes.add_parser("standalone", help="one worker; offsets in a file")
    standalone.add_argument("worker_config", help="worker .properties file")
    standalone.add_argument("connector_configs", nargs="*",
                            help="connector configs (.properties or .json)")
    _add_overrides(standalone)
    standalone.set_defaults(func=run_standalone)
    distributed = modes.add_parser("distributed", help="a worker of a group (group.id)")
    distributed.add_argument("worker_config", help="worker .properties file")
    _add_overrides(distributed)
    distributed.set_defaults(func=run_distributed)


def _add_overrides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                        help="overrides the worker file's bootstrap.servers")


def _worker_config(args: argparse.Namespace) -> dict[str, object]:
    from connect.runtime.config import load_config_file

    settings = dict(load_config_file(args.worker_config))
    if args.bootstrap_servers:
        settings["bootstrap.servers"] = args.bootstrap_servers
    return settings


def _serve(process: object) -> int:
    from connect.runtime.gc_policy import tune_gc

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await process.start()  # type: ignore[attr-defined]
        tune_gc()
        print(f"connect worker REST API on {process.url}", flush=True)  # type: ignore[attr-defined]
        try:
            await stop.wait()
        finally:
            await process.stop()  # type: ignore[attr-defined]

    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    try:
        asyncio.run(main())
    except (ValueError, OSError) as exc:
        print(f"streams connect: cannot start: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"streams connect: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def run_standalone(args: argparse.Namespace) -> int:
    from connect.runtime.config import WorkerConfig, load_config_file
    from connect.runtime.standalone import StandaloneWorker

    try:
        config = WorkerConfig.parse(_worker_config(args))
        connectors = [load_config_file(path) for path in args.connector_configs]
        process = StandaloneWorker(config, connectors)
    except (ValueError, OSError) as exc:
        print(f"streams connect: {exc}", file=sys.stderr)
        return 2
    return _serve(process)


def run_distributed(args: argparse.Namespace) -> int:
    from connect.runtime.config import WorkerConfig
    from connect.runtime.distributed import DistributedWorker

    try:
        config = WorkerConfig.parse(_worker_config(args))
        process = DistributedWorker(config)
    except (ValueError, OSError) as exc:
        print(f"streams connect: {exc}", file=sys.stderr)
        return 2
    return _serve(process)
