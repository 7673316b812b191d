"""The processes of one run: the broker and the app instances, each an OS process.

Every process started here is stopped by ``Cluster.close()`` (stopped ones get SIGCONT first),
which the harness calls in a ``finally``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from helpers import BrokerProcess, ReferenceCluster, ReferenceKafka, wait_until

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0  # a loaded 2-core machine starts a process slowly; success ends it early
MAX_INCIDENTS = 10  # instance failures restarted per run; beyond that the run gives up


class AppInstance:
    """``python -m tests.faults.app_runner`` with its own state directory and log."""

    def __init__(self, name: str, args: list[str], state_dir: Path, log: Path) -> None:
        self.name, self.args, self.state_dir, self.log = name, args, state_dir, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        self.stopped = False  # stopped on purpose (scale in): not expected to run
        self.starts = 0

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """The process to start: its command line and environment (None: this one's)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        return ([sys.executable, "-m", "tests.faults.app_runner", *self.args,
                 "--state-dir", str(self.state_dir)], env)

    def start(self) -> None:
        command, env = self.command()
        self.starts += 1
        self.stopped = False
        with open(self.log, "a") as out:
            out.write(f"=== start {self.starts}\n")
            out.flush()
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         cwd=ROOT)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def current_output(self) -> str:
        return self.output().rsplit("=== start", 1)[-1]

    def status(self) -> str:
        """``running``, ``error`` (the process died or its streams hit ERROR) or ``busy``."""
        text = self.current_output()
        if not self.alive() or "STATE ERROR" in text:
            return "error"
        states = [line for line in text.splitlines() if line.startswith("STATE ")]
        return "running" if states and states[-1] == "STATE RUNNING" else "busy"

    def last_error(self) -> str:
        """What happened to this start (for incident reports): ERROR or the exit code, and
        the last logged exception line if any (a CancelledError is not logged by KafkaStreams)."""
        text = self.current_output()
        what = ("entered state ERROR" if "STATE ERROR" in text
                else f"exited with code {self.proc.poll() if self.proc else None}")
        errors = [line for line in text.splitlines()
                  if ("Error" in line or "Exception" in line) and not line.startswith(" ")
                  and "NodeNotReady" not in line and "Unable connect" not in line]
        return f"{what}; last error logged: {errors[-1][:300] if errors else '(none)'}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if self.paused:
                self.resume()
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.proc is not None and self.paused:
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self, timeout: float = 60.0) -> bool:
        """SIGTERM and wait for a clean close; True if it closed cleanly."""
        self.stopped = True
        if self.proc is None or self.proc.poll() is not None:
            return True
        self.resume()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        return "CLOSED" in self.current_output()


@dataclass
class Cluster:
    """A broker subprocess and the scenario's app instances. ``kafka`` picks the broker: ours
    (``bundled``), Apache Kafka (``reference``) or a 3-node Apache Kafka cluster (``cluster``,
    replication factor 3, min.insync.replicas 2); each restarts on the same data directories
    and ports, so broker_restart and broker_outage mean the same on all. ``kill_broker`` is a
    crash: SIGKILL (on the cluster: of one node, whose partitions' leaders move), then a
    restart."""

    workdir: Path
    app_args: list[str]
    kafka: str = "bundled"
    broker: BrokerProcess | ReferenceKafka | ReferenceCluster = field(init=False)
    instances: list[AppInstance] = field(default_factory=list)
    incidents: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        settings = {"group.initial.rebalance.delay.ms": 0, "num.partitions": 4}
        if self.kafka == "reference":
            self.broker = ReferenceKafka(self.workdir / "kafka-data", properties=settings)
            return
        if self.kafka == "cluster":
            self.broker = ReferenceCluster(self.workdir / "kafka-cluster", properties=settings)
            return
        config = self.workdir / "broker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self.broker = BrokerProcess(self.workdir / "broker-data",
                                    extra=["--config", str(config)])

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def start_broker(self) -> None:
        self.broker.start()

    def stop_broker(self) -> None:
        self.broker.stop()

    @property
    def replication(self) -> int:
        """The replication factor of the topics the harness creates."""
        return getattr(self.broker, "replication", 1)

    def kill_broker(self, pick: int) -> int | None:
        """SIGKILL a broker: on the cluster node ``pick % nodes`` (returned, for the restart),
        otherwise the only one (None)."""
        if isinstance(self.broker, ReferenceCluster):
            node = pick % self.broker.nodes
            self.broker.kill_node(node)
            return node
        self.broker.kill()
        return None

    def restart_killed_broker(self, node: int | None) -> None:
        if node is None:
            self.broker.start()
        else:
            assert isinstance(self.broker, ReferenceCluster)
            self.broker.start_node(node)

    def add_instance(self, make: Callable[[str, Path, Path], AppInstance] | None = None
                     ) -> AppInstance:
        """Start the next instance: ours (app_runner with ``app_args``), or what ``make``
        builds from its name, state directory and log (e.g. a Kafka Streams app)."""
        n = len(self.instances)
        name, state_dir, log = f"app{n}", self.workdir / f"state-{n}", self.workdir / f"app{n}.log"
        instance = make(name, state_dir, log) if make is not None else AppInstance(
            name, [*self.app_args, "--bootstrap", self.bootstrap], state_dir, log)
        self.instances.append(instance)
        instance.start()
        return instance

    def live(self) -> list[AppInstance]:
        return [i for i in self.instances if i.alive() and not i.stopped]

    def wait_running(self, timeout: float = START_TIMEOUT) -> None:
        """Poll until every live instance is RUNNING. An instance that died or hit ERROR is an
        incident (recorded, then restarted as an operator would) and the wait goes on."""
        def check() -> bool:
            states = {}
            for instance in self.instances:
                if instance.proc is None or instance.stopped:
                    continue
                status = instance.status()
                if status == "error" and len(self.incidents) < MAX_INCIDENTS:
                    self.incidents.append(f"{instance.name} failed: {instance.last_error()}")
                    instance.kill()
                    instance.start()
                    status = "busy"
                states[instance.name] = status
            return all(status == "running" for status in states.values())

        wait_until(check, timeout=timeout, interval=0.2,
                   message=f"instances RUNNING (incidents: {self.incidents})")

    def close(self) -> list[str]:
        """Stop every instance (SIGCONT first if paused), then the broker; unclean closes."""
        unclean = []
        try:
            for instance in self.instances:
                try:
                    if instance.alive() and not instance.stop(timeout=45):
                        unclean.append(instance.name)
                finally:
                    instance.kill()  # a no-op unless stopping it failed
        finally:
            self.broker.stop()
            self.broker.kill()
        return unclean
