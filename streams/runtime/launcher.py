"""What ``streams run`` / ``streams describe`` need beyond KafkaStreams: loading an APP spec,
a bundled broker in the background, and N worker processes in one group."""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..topology.topology import Topology


class AppLoadError(RuntimeError):
    """APP does not name a Topology (or a function returning one)."""


DEFAULT_ATTRS = ("topology", "build_topology", "build", "create_topology", "main_topology")


def load_app(spec: str) -> tuple[Topology, dict[str, Any], str]:
    """``path/to/file.py[:attr]`` or ``package.module[:attr]`` -> (topology, module config, name).

    ``attr`` may be a Topology, a StreamsBuilder or a function returning either; without it
    the module's ``topology``/``build_topology``/... is used, else its only Topology. A
    module-level ``config`` dict supplies defaults for the application's config.
    """
    target, _, attr = spec.partition(":") if not Path(spec).exists() else (spec, "", "")
    if target.endswith(".py") or os.sep in target:
        path = Path(target)
        if not path.exists():
            raise AppLoadError(f"no such file: {target}")
        name = path.stem
        module_spec = importlib.util.spec_from_file_location(f"streams_app_{name}", path)
        if module_spec is None or module_spec.loader is None:
            raise AppLoadError(f"cannot import {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: say where, as Python would, in a line
            raise AppLoadError(_user_code_error(exc, f"cannot load {target}")) from exc
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise AppLoadError(_user_code_error(exc, f"cannot import module {target!r}")) from exc
        name = target.rsplit(".", 1)[-1]
    if attr:
        if not hasattr(module, attr):
            raise AppLoadError(f"{target} has no attribute {attr!r}")
        candidate = getattr(module, attr)
    else:
        candidate = next((getattr(module, a) for a in DEFAULT_ATTRS if hasattr(module, a)), None)
        if candidate is None:
            found = [v for v in vars(module).values() if isinstance(v, Topology)]
            if len(found) != 1:
                raise AppLoadError(f"{target}: say which topology to run ({target}:NAME); "
                                   f"found {len(found)} Topology objects")
            candidate = found[0]
    topology = _to_topology(candidate)
    config = dict(getattr(module, "config", None) or {})
    return topology, config, name.replace("_", "-")


def _user_code_error(exc: BaseException, what: str) -> str:
    """One line for an error raised by the user's app code (two for a syntax error: the
    offending line, as Python shows it): where it happened and what it was, no traceback."""
    if isinstance(exc, SyntaxError):
        text = f"{exc.filename}:{exc.lineno}: {exc.msg}" if exc.filename else f"{what}: {exc}"
        return f"{text}\n    {exc.text.strip()}" if exc.text else text
    frames = traceback.extract_tb(exc.__traceback__)
    ours = Path(__file__).resolve().parents[1]
    users = [f for f in frames if not f.filename.startswith(("<", str(ours)))]
    where = f" (at {users[-1].filename}:{users[-1].lineno})" if users else ""
    return f"{what}: {type(exc).__name__}: {exc}{where}"


def _to_topology(candidate: Any) -> Topology:
    try:
        if callable(candidate) and not isinstance(candidate, Topology):
            candidate = candidate()
        if hasattr(candidate, "build") and not isinstance(candidate, Topology):
            candidate = candidate.build()  # a StreamsBuilder
    except Exception as exc:
        raise AppLoadError(_user_code_error(exc, "building the topology failed")) from exc
    if not isinstance(candidate, Topology):
        raise AppLoadError(f"expected a Topology, got {type(candidate).__name__}")
    return candidate


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


DEFAULT_PORT = 9092  # what every client command defaults to (--bootstrap-servers)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BundledBroker:
    """The bundled broker as a background child process, data under the state directory.

    A broker already started for the same directory (by another ``streams run``) is reused,
    so further instances join the same group.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> BundledBroker:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        port_file = self.data_dir / "port"
        if port_file.exists():
            port = int(port_file.read_text().strip() or 0)
            if port and _accepting(port):
                self.port = port
                return self
        # Kafka's port when it is free, so that every other command's default reaches it.
        self.port = DEFAULT_PORT if _bindable(DEFAULT_PORT) else _free_port()
        log = open(self.data_dir.parent / "broker.log", "ab")  # noqa: SIM115 - child keeps it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streams.cli.main", "broker", "start",
             "--data-dir", str(self.data_dir / "data"), "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not _accepting(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the bundled broker exited with {self.proc.returncode}; "
                                   f"see {self.data_dir.parent / 'broker.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError("the bundled broker did not start in time")
            time.sleep(0.05)
        port_file.write_text(str(self.port))
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        (self.data_dir / "port").unlink(missing_ok=True)


def spawn_workers(app: str, count: int, bootstrap: str, config_file: str | None,
                  state_dir: Path) -> list[subprocess.Popen[bytes]]:
    """``count`` single-process ``streams run`` workers, each with its own state directory."""
    workers = []
    for index in range(count):
        cmd = [sys.executable, "-m", "streams.cli.main", "run", app,
               "--bootstrap-servers", bootstrap, "--processes", "1",
               "--state-dir", str(state_dir / f"process-{index}")]
        if config_file:
            cmd += ["--config", config_file]
        workers.append(subprocess.Popen(cmd))
    return workers


def create_source_topics(bootstrap: str, topology: Topology, app_id: str) -> list[str]:
    """Create missing user source topics (one partition) on the bundled broker only, so a
    first ``streams run`` works with nothing else set up; real clusters must have them."""
    import asyncio

    from aiokafka.admin import NewTopic

    from ..kafka import clients
    from ..kafka.client_config import client_settings
    from .topics import describe_partitions

    wanted = {topology.resolve_topic(t, app_id) for sub in topology.sub_topologies()
              for t in sub.source_topics if t not in topology.internal_topics}
    wanted |= {g.source.topics[0] for g in topology.global_stores.values()}

    async def run() -> list[str]:
        admin = clients.admin(client_settings(bootstrap))
        await admin.start()
        try:
            missing = sorted(wanted - set(await describe_partitions(admin)))
            if missing:
                await admin.create_topics([NewTopic(t, 1, 1) for t in missing])
            return missing
        finally:
            await admin.close()

    return asyncio.run(run())
