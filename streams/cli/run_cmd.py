"""`streams run APP` and `streams describe APP`: a thin layer over streams.runtime."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ..config import ConfigError, read_properties


def add_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run a topology (APP = file.py[:attr] or module[:attr])")
    run.add_argument("app")
    run.add_argument("--bootstrap-servers",
                     help="HOST:PORT of the cluster (default: start the bundled broker)")
    run.add_argument("--config", help="Kafka Streams .properties file")
    run.add_argument("--processes", type=int, default=1,
                     help="worker processes to start in the same group (default 1)")
    run.add_argument("--state-dir", help="overrides state.dir")
    run.add_argument("--metrics-listener", metavar="http://HOST:PORT",
                     help="serve Prometheus /metrics and /health there (metrics.listener)")
    run.set_defaults(func=run_run)
    describe = sub.add_parser("describe", help="print an application's topology")
    describe.add_argument("app")
    describe.add_argument("--format", choices=("text", "mermaid"), default="text")
    describe.set_defaults(func=run_describe)


def run_describe(args: argparse.Namespace) -> int:
    from ..runtime.launcher import AppLoadError, load_app

    try:
        topology, _config, _name = load_app(args.app)
    except AppLoadError as exc:
        print(f"streams describe: {exc}", file=sys.stderr)
        return 2
    description = topology.describe()
    print(description.to_mermaid() if args.format == "mermaid" else description)
    return 0


def _config(args: argparse.Namespace, module_config: dict[str, Any], name: str) -> dict[str, Any]:
    config: dict[str, Any] = {"application.id": name, **module_config}
    if args.config:
        config.update(read_properties(args.config))
    if args.state_dir:
        config["state.dir"] = args.state_dir
    if args.bootstrap_servers:
        config["bootstrap.servers"] = args.bootstrap_servers
    if getattr(args, "metrics_listener", None):
        config["metrics.listener"] = args.metrics_listener
    return config


def run_run(args: argparse.Namespace) -> int:
    from ..runtime import KafkaStreams, State, StreamsConfig
    from ..runtime.launcher import (
        DEFAULT_PORT,
        AppLoadError,
        BundledBroker,
        create_source_topics,
        load_app,
        spawn_workers,
    )

    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    debug = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    if not debug:
        # aiokafka's INFO lines are noise to a user, and until the app is running its errors
        # repeat what the app reports in one line (--log-level debug shows them all).
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        topology, module_config, name = load_app(args.app)
        raw = _config(args, module_config, name)
        config = StreamsConfig.from_mapping(raw)
    except (AppLoadError, ConfigError, OSError) as exc:
        print(f"streams run: {exc}", file=sys.stderr)
        return 2
    if args.processes > 1 and config.metrics_listener:
        print("streams run: metrics.listener serves one process; with --processes N give "
              "each worker its own (streams run APP --metrics-listener ... per process)",
              file=sys.stderr)
        return 2
    broker = None
    if "bootstrap.servers" not in raw and "bootstrap_servers" not in raw:
        broker = BundledBroker(Path(config.state_dir) / "broker").start()
        reach = ("" if broker.port == DEFAULT_PORT else
                 f"; port {DEFAULT_PORT} was busy, so other commands need "
                 f"--bootstrap-servers {broker.bootstrap}")
        print(f"started the bundled broker on {broker.bootstrap} (data in "
              f"{broker.data_dir}; it stops with this command){reach}", flush=True)
        config = StreamsConfig.from_mapping({**raw, "bootstrap.servers": broker.bootstrap})
        created = create_source_topics(broker.bootstrap, topology, config.application_id)
        if created:
            print(f"created input topic(s) {', '.join(created)} on the bundled broker", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if args.processes > 1:
            workers = spawn_workers(args.app, args.processes, config.bootstrap_servers,
                                    args.config, Path(config.state_dir))
            while not stop.wait(0.5) and all(w.poll() is None for w in workers):
                pass
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
            return max(w.wait() for w in workers)
        streams = KafkaStreams(topology, config)
        streams.start()
        named = (" (application.id from the file name: set it in --config or the module's "
                 "config dict)" if "application.id" not in raw and "application_id" not in raw
                 and config.application_id == name else "")
        _say(f"running {config.application_id}{named} ({config.processing_guarantee}) on "
             f"{config.bootstrap_servers}, state in {config.app_state_dir}; Ctrl-C stops", stop)
        last = -1
        while not stop.wait(2.0) and streams.state is not State.ERROR:
            if streams.state is State.RUNNING and not debug:
                logging.getLogger("aiokafka").setLevel(logging.WARNING)
            thread = streams._stream_thread  # noqa: SLF001 - progress display only
            processed = thread.processed if thread is not None else 0
            if processed != last:
                _say(f"[{streams.state.value}] tasks {', '.join(streams.local_task_ids())} "
                     f"- {processed} records processed", stop)
                last = processed
        streams.close(timeout=60)
        if streams.state is State.ERROR:
            print(f"streams run: {one_line(streams.error)}", file=sys.stderr)
            return 1
        return 0
    finally:
        if broker is not None:
            broker.stop()


def _say(text: str, stop: threading.Event) -> None:
    """Print a progress line; a closed stdout (``streams run ... | head``) stops the app
    cleanly instead of killing it with BrokenPipeError mid-commit."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to say, and no error at exit
        stop.set()


def one_line(exc: BaseException | None) -> str:
    """An exception as the one line a user reads (aiokafka's errors repeat their class name
    in their text: "KafkaConnectionError: ...")."""
    text = str(exc) if exc is not None else "unknown error"
    name = type(exc).__name__ if exc is not None else ""
    while name and text.startswith(f"{name}: "):
        text = text[len(name) + 2:]
    return text.splitlines()[0] if text else name
