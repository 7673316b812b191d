"""`streams broker start`: run the bundled broker in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from ..broker import Broker, BrokerConfig
from ..broker.security import ListenerError
from ..config import ConfigError, read_properties


def add_parser(sub: argparse._SubParsersAction) -> None:
    broker = sub.add_parser("broker", help="run the bundled Kafka-protocol broker")
    broker_sub = broker.add_subparsers(dest="broker_command", required=True)
    start = broker_sub.add_parser("start", help="start the broker in the foreground")
    start.add_argument("--data-dir", help="directory for logs and metadata")
    start.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    start.add_argument("--port", type=int, help="port of one PLAINTEXT listener (default 9092; "
                       "not needed when the config sets `listeners`)")
    start.add_argument("--config", help="broker .properties file (Kafka broker keys)")
    start.add_argument("--metrics-listener", metavar="http://HOST:PORT",
                       help="serve Prometheus /metrics and /health there (metrics.listener)")
    start.set_defaults(func=run_start)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    values: dict[str, object] = dict(read_properties(args.config)) if args.config else {}
    if values.get("listeners") and (args.port is not None or args.host is not None):
        raise ConfigError("--port/--host give one PLAINTEXT listener, but the config sets "
                          "'listeners': use one or the other")
    for key in ("data_dir", "host", "port", "metrics_listener"):
        value = getattr(args, key)
        if value is not None:
            values[key] = value
    config = BrokerConfig.from_mapping(values)
    if config.metrics_listener:
        from ..metrics.listener import parse_listener

        try:
            parse_listener(config.metrics_listener)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return config


async def serve(config: BrokerConfig) -> None:
    broker = Broker(config)
    await broker.start()
    if config.listeners:
        where = ", ".join(f"{item.name}://{item.host}:{broker.listener_ports[item.name]}"
                          for item in broker.security.listeners)
    else:
        where = f"{config.host}:{broker.port}"
    print(f"broker listening on {where} (data in {config.data_dir})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await broker.stop()


def run_start(args: argparse.Namespace) -> int:
    try:
        config = build_config(args)
    except (ConfigError, OSError) as exc:
        print(f"streams broker: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(config))
    except ListenerError as exc:
        print(f"streams broker: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"streams broker: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0
