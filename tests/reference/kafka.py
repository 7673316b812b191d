"""The reference Apache Kafka: prepare its jars from Maven Central and run one KRaft node.

    python tests/reference/kafka.py prepare
    python tests/reference/kafka.py start --port P --data-dir D
    python tests/reference/kafka.py cluster --nodes 3 --base-port P --data-dir D

``start`` formats the storage (once per data directory) and runs a combined broker+controller
in the foreground on 127.0.0.1:P; it prints one line when the broker answers Metadata and stops
Kafka cleanly on SIGTERM or Ctrl-C. ``cluster`` runs N combined nodes (node i: broker port P+i,
controller port P+N+i, data D/node-i, pid in D/node-i.pid) whose topics default to
replication factor min(3, N) and min.insync.replicas 2; its first line is the bootstrap servers. Standard library only, so any Python 3.11 runs it; the
pytest fixture (conftest.py) imports the same functions.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
REPO = HERE.parents[1]
# Git-ignored cache inside the checkout: CI on a fresh clone downloads once per run.
CACHE = Path(os.environ.get("KAFKA_REFERENCE_CACHE", REPO / ".reference"))
LIBS = CACHE / "kafka-libs"
M2 = CACHE / "m2"
MARKER = LIBS / ".prepared"
NODE_ID = 0  # the same node id as our broker's default, so replica assignments compare as-is
JAVA_OPTS = ["-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.awt.headless=true"]


class PrepareError(RuntimeError):
    """The jars cannot be prepared (no mvn, no network, a refused artifact)."""


def kafka_version() -> str:
    text = POM.read_text()
    return text.split("<kafka.version>", 1)[1].split("</kafka.version>", 1)[0].strip()


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def prepared() -> bool:
    return MARKER.exists() and MARKER.read_text().strip() == _pom_digest()


@contextmanager
def _lock() -> Iterator[None]:
    """One preparer at a time (make kafka-reference and a test run may race)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "prepare.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare(quiet: bool = True) -> Path:
    """Copy the pinned jars and their runtime dependencies into LIBS (once per pom version)."""
    if prepared():
        return LIBS
    mvn = shutil.which("mvn")
    if mvn is None:
        raise PrepareError("mvn is not on PATH: cannot fetch Apache Kafka's jars")
    with _lock():
        if prepared():
            return LIBS
        shutil.rmtree(LIBS, ignore_errors=True)
        cmd = [mvn, "-B", "-f", str(POM), f"-Dmaven.repo.local={M2}",
               "dependency:copy-dependencies", f"-DoutputDirectory={LIBS}",
               "-DincludeScope=runtime"]
        if quiet:
            cmd.insert(2, "-q")
        try:
            result = subprocess.run(cmd, capture_output=quiet, text=True, timeout=1200)
        except subprocess.TimeoutExpired:
            raise PrepareError("mvn dependency:copy-dependencies took over 20 minutes") from None
        if result.returncode != 0:
            tail = ((result.stdout or "") + (result.stderr or "")).strip().splitlines()[-5:]
            raise PrepareError("mvn failed: " + " | ".join(tail))
        MARKER.write_text(_pom_digest() + "\n")
    return LIBS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_id() -> str:
    """A Kafka Uuid string (URL-safe base64, no padding) that does not start with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(port: int, controller_port: int, data_dir: Path,
                      extra: dict[str, str] | None = None,
                      listeners: dict[str, int] | None = None, node_id: int = NODE_ID,
                      voters: str | None = None) -> str:
    """The node's server.properties; ``listeners`` adds listeners named after their security
    protocol next to the PLAINTEXT one the readiness probe uses ({"SASL_SSL": 9093}), and
    ``extra`` adds or replaces keys. ``voters``: the controller quorum of a cluster
    (``id@host:port,...``); without it the node is a quorum of its own."""
    more = listeners or {}
    names = "".join(f",{name}://127.0.0.1:{p}" for name, p in more.items())
    protocols = "".join(f",{name}:{name}" for name in more)
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.quorum.voters": voters or f"{node_id}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"
                     + names,
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}" + names,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" + protocols,
        "log.dirs": data_dir / "logs",
        "auto.create.topics.enable": "true",
        "num.partitions": 1,
        "offsets.topic.replication.factor": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
    }
    props.update(extra or {})
    return "".join(f"{key}={value}\n" for key, value in props.items())


def log4j_properties(log_file: Path) -> str:
    """INFO to a file in the data directory, only errors on stderr: the foreground stays quiet."""
    return (
        "status = error\n"
        "appender.file.type = File\n"
        "appender.file.name = file\n"
        f"appender.file.fileName = {log_file}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "appender.err.type = Console\n"
        "appender.err.name = err\n"
        "appender.err.target = SYSTEM_ERR\n"
        "appender.err.layout.type = PatternLayout\n"
        "appender.err.layout.pattern = [kafka] %p %m (%c)%n\n"
        "appender.err.filter.threshold.type = ThresholdFilter\n"
        "appender.err.filter.threshold.level = error\n"
        "rootLogger.level = info\n"
        "rootLogger.appenderRef.file.ref = file\n"
        "rootLogger.appenderRef.err.ref = err\n"
    )


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise PrepareError("java is not on PATH: cannot run Apache Kafka")
    return java


def _die_with_parent() -> None:
    """Linux: the JVM gets SIGTERM if the Python process that started it dies (no orphans)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class KafkaNode:
    """One combined broker+controller KRaft node in a child JVM."""

    def __init__(self, port: int, data_dir: Path, extra: dict[str, str] | None = None,
                 format_args: list[str] | None = None,
                 listeners: dict[str, int] | None = None, node_id: int = NODE_ID,
                 controller_port: int | None = None, voters: str | None = None,
                 cluster_id: str | None = None, java_opts: list[str] | None = None) -> None:
        self.port = port
        self.node_id = node_id
        self.controller_port = controller_port  # None: a fresh free port at every start
        self.voters = voters  # a cluster's controller quorum (see server_properties)
        self.cluster_id = cluster_id  # the same for every node of a cluster
        self.data_dir = Path(data_dir).resolve()
        self.extra = dict(extra or {})  # server properties added to or replacing the defaults
        self.format_args = list(format_args or [])  # e.g. --add-scram for SCRAM users
        self.listeners = dict(listeners or {})  # extra listeners: {"SASL_SSL": port}
        # JVM options (None: JAVA_OPTS, quick to start; benchmarks pass Kafka's server defaults)
        self.java_opts = java_opts
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "kafka.log"

    def _java_cmd(self, main: str, *args: str) -> list[str]:
        log4j = self.data_dir / "log4j2.properties"
        opts = JAVA_OPTS if self.java_opts is None else self.java_opts
        return [_java(), *opts, f"-Dlog4j2.configurationFile={log4j}",
                f"-Dkafka.logs.dir={self.data_dir}", "-cp", f"{LIBS}/*", main, *args]

    def configure(self) -> Path:
        """Write server.properties (a fresh controller port each start) and format once."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        props = self.data_dir / "server.properties"
        props.write_text(server_properties(self.port, self.controller_port or _free_port(),
                                           self.data_dir, self.extra, self.listeners,
                                           self.node_id, self.voters))
        (self.data_dir / "log4j2.properties").write_text(log4j_properties(self.log_file))
        if not (self.data_dir / "logs" / "meta.properties").exists():
            cmd = self._java_cmd("kafka.tools.StorageTool", "format", "--config", str(props),
                                 "--cluster-id", self.cluster_id or _cluster_id(),
                                 "--ignore-formatted",
                                 *self.format_args)
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed: {result.stderr.strip()}")
        return props

    def start(self, timeout: float = 120.0) -> KafkaNode:
        self.launch()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> None:
        """Start the JVM without waiting (a cluster's nodes need each other to get ready)."""
        prepare()
        props = self.configure()
        self.proc = subprocess.Popen(self._java_cmd("kafka.Kafka", str(props)),
                                     stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    def wait_ready(self, timeout: float, brokers: int = 1) -> None:
        """Poll until the node's Metadata answer lists ``brokers`` brokers (unfenced ones)."""
        deadline = time.monotonic() + timeout
        while metadata_broker_count(self.port) < brokers:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}; see {self.log_file}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka did not answer Metadata within {timeout}s")
            time.sleep(0.2)

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def kill(self) -> None:
        """SIGKILL: a crash (the broker-kill fault)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class KafkaCluster:
    """``nodes`` combined broker+controller KRaft nodes on loopback, one controller quorum.

    Topics default to replication factor min(3, nodes) and ``min.insync.replicas`` 2 (as the
    internal offsets and transaction topics), so with three nodes one can die (a broker kill:
    its partitions' leadership moves) and acks=all writes and transactions go on."""

    def __init__(self, nodes: int, base_port: int, data_dir: Path,
                 extra: dict[str, str] | None = None) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.data_dir = Path(data_dir).resolve()
        replicas = min(3, nodes)
        isr = min(2, replicas)
        settings = {
            "default.replication.factor": replicas, "min.insync.replicas": isr,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": isr,
            # a killed node's partitions get a new leader at once; the restarted one takes
            # its leadership back as soon as it is in sync
            "unclean.leader.election.enable": "false",
            "leader.imbalance.check.interval.seconds": 5,
        }
        settings.update(extra or {})
        # node i: broker port base_port + i, controller port base_port + nodes + i
        voters = ",".join(f"{i}@127.0.0.1:{base_port + nodes + i}" for i in range(nodes))
        cluster_id = self._cluster_id()
        self.nodes = [
            KafkaNode(base_port + i, self.data_dir / f"node-{i}",
                      {k: str(v) for k, v in settings.items()}, node_id=i,
                      controller_port=base_port + nodes + i, voters=voters,
                      cluster_id=cluster_id)
            for i in range(nodes)]

    def _cluster_id(self) -> str:
        """Kept in the data directory: a restarted cluster keeps its formatted storage."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / "cluster.id"
        if not path.exists():
            path.write_text(_cluster_id())
        return path.read_text().strip()

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    def pid_file(self, index: int) -> Path:
        return self.data_dir / f"node-{index}.pid"

    def start(self, timeout: float = 180.0) -> KafkaCluster:
        try:
            for index, node in enumerate(self.nodes):
                node.launch()
                assert node.proc is not None
                self.pid_file(index).write_text(f"{node.proc.pid}\n")
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float) -> None:
        """Poll until every running node lists every node as a broker (a node that exits
        meanwhile fails the wait)."""
        deadline = time.monotonic() + timeout
        while True:
            for node in self.nodes:
                if node.proc is not None and node.proc.poll() is not None:
                    raise RuntimeError(f"Kafka node {node.node_id} exited with "
                                       f"{node.proc.returncode}; see {node.log_file}")
            if all(metadata_broker_count(node.port) >= len(self.nodes) for node in self.nodes):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {len(self.nodes)} Kafka nodes did not all answer "
                                   f"Metadata within {timeout}s")
            time.sleep(0.2)

    def start_node(self, index: int, timeout: float = 120.0) -> None:
        """(Re)start one node and wait until every node is a registered broker again."""
        node = self.nodes[index]
        node.launch()
        assert node.proc is not None
        self.pid_file(index).write_text(f"{node.proc.pid}\n")
        self.wait_ready(timeout)

    def alive(self) -> list[int]:
        return [i for i, node in enumerate(self.nodes)
                if node.proc is not None and node.proc.poll() is None]

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()  # all at once: a quorum stops faster than one by one
        for node in self.nodes:
            node.stop()

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()


def metadata_broker_count(port: int) -> int:
    """A raw Metadata v1 request for no topics; the number of brokers the answer lists (0 if
    the node does not answer)."""
    client = b"reference-probe"
    body = struct.pack(">hhih", 3, 1, 1, len(client)) + client + struct.pack(">i", 0)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = _recv(sock, 4)
            payload = _recv(sock, struct.unpack(">i", head)[0])
    except OSError:
        return 0
    # correlation id (4), then the brokers array count
    return struct.unpack_from(">i", payload, 4)[0] if len(payload) >= 8 else 0


def _recv(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return bytes(data)


def _run_foreground(port: int, data_dir: Path, extra: dict[str, str] | None = None,
                    listeners: dict[str, int] | None = None) -> int:
    node = KafkaNode(port, data_dir, extra, listeners=listeners)
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        node.start()
    except (PrepareError, RuntimeError) as exc:
        node.stop()
        print(f"kafka.py: {exc}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {kafka_version()} ready on {node.bootstrap} "
          f"(data {node.data_dir}, log {node.log_file})", flush=True)
    assert node.proc is not None
    while not stopping and node.proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.proc.wait(0.5)
    if node.proc.poll() is not None and not stopping:
        print(f"kafka.py: Kafka exited with {node.proc.returncode}; see {node.log_file}",
              file=sys.stderr)
        return 1
    node.stop()
    return 0


def _run_cluster_foreground(nodes: int, base_port: int, data_dir: Path) -> int:
    cluster = KafkaCluster(nodes, base_port, data_dir)
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start()
    except (PrepareError, RuntimeError) as exc:
        cluster.stop()
        print(f"kafka.py: {exc}", file=sys.stderr)
        return 1
    print(cluster.bootstrap, flush=True)
    print(f"Apache Kafka {kafka_version()}: {nodes} KRaft nodes ready (data {cluster.data_dir}, "
          f"pids in node-<i>.pid, logs in node-<i>/kafka.log)", flush=True)
    while not stopping:
        time.sleep(0.5)  # the nodes run on; a killed one may be restarted by whoever killed it
    cluster.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="download the pinned jars into the cache folder")
    start = sub.add_parser("start", help="run a single KRaft node in the foreground")
    start.add_argument("--port", type=int, required=True)
    start.add_argument("--data-dir", type=Path, required=True)
    start.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                       help="an extra server property (repeatable), e.g. a SASL_SSL listener")
    start.add_argument("--listener", action="append", default=[], metavar="PROTOCOL=PORT",
                       help="another listener named after its protocol (repeatable), e.g. "
                            "SASL_SSL=9193; configure it with --property")
    start.add_argument("--properties-file", type=Path,
                       help="extra server properties (key=value lines), applied before --property")
    cluster = sub.add_parser("cluster", help="run N KRaft nodes in the foreground")
    cluster.add_argument("--nodes", type=int, default=3)
    cluster.add_argument("--base-port", type=int, required=True)
    cluster.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "cluster":
        return _run_cluster_foreground(args.nodes, args.base_port, args.data_dir)
    if args.command == "prepare":
        try:
            print(f"Apache Kafka {kafka_version()} jars in {prepare(quiet=False)}")
        except PrepareError as exc:
            print(f"kafka.py: {exc}", file=sys.stderr)
            return 1
        return 0
    extra: dict[str, str] = {}
    lines = args.properties_file.read_text().splitlines() if args.properties_file else []
    for item in [*lines, *args.property]:
        if item.strip() and not item.lstrip().startswith(("#", "!")):
            key, sep, value = item.partition("=")
            if not sep:
                parser.error(f"expected KEY=VALUE, got {item!r}")
            extra[key.strip()] = value.strip()
    listeners: dict[str, int] = {}
    for item in args.listener:
        name, sep, port = item.partition("=")
        if not sep or not port.isdigit():
            parser.error(f"expected PROTOCOL=PORT, got {item!r}")
        listeners[name.strip().upper()] = int(port)
    return _run_foreground(args.port, args.data_dir, extra, listeners)


if __name__ == "__main__":
    sys.exit(main())
