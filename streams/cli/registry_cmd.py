"""`streams registry start`: a schema registry with Confluent's REST API, in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from .client import add_bootstrap_argument, connection_kwargs


def add_parser(sub: argparse._SubParsersAction) -> None:
    registry = sub.add_parser("registry", help="run a schema registry (Confluent's REST API)")
    actions = registry.add_subparsers(dest="registry_action", required=True)
    start = actions.add_parser("start", help="serve until SIGINT/SIGTERM")
    start.add_argument("--port", type=int, default=8081, help="HTTP port (default 8081)")
    start.add_argument("--host", default="127.0.0.1", help="address to listen on")
    add_bootstrap_argument(start)  # --bootstrap-servers and --command-config
    start.add_argument("--topic", default="_schemas",
                       help="compacted topic the schemas live in (kafkastore.topic)")
    start.set_defaults(func=run_start)


def run_start(args: argparse.Namespace) -> int:
    from streams.registry.server import SchemaRegistry

    roles = {role: connection_kwargs(args, role) for role in ("admin", "consumer", "producer")}
    registry = SchemaRegistry(args.bootstrap_servers, port=args.port, host=args.host,
                              topic=args.topic, role_configs=roles)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await registry.start()
        print(f"schema registry on {registry.url} (schemas in topic {args.topic})", flush=True)
        try:
            await stop.wait()
        finally:
            await registry.stop()

    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    try:
        asyncio.run(main())
    except Exception as exc:
        print(f"streams registry: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
