"""Run kafka-python 3.0.12's own integration test suite against our bundled broker.

How to run (from the project root)::

    make test-external
    # or directly, with optional extra pytest arguments after the options:
    .venv/bin/python tests/external/kafka_python_suite.py [--keep] [-- -k test_end_to_end]

What it does:

1. downloads kafka-python's source distribution with ``pip download --no-deps --no-binary :all:``
   into ``.cache/kafka-python-suite/`` (reused when present; the directory ignores itself in git),
2. unpacks it into a temporary directory and writes a small shim of our own (``test/__init__.py``
   and ``test/service.py``) that the suite's fixtures import but the sdist does not ship,
3. installs the suite's test dependencies into this virtualenv when they are missing,
4. starts ``streams broker start`` on a free loopback port with a temporary data directory,
5. asks the broker for its ApiVersions and sets ``KAFKA_VERSION`` to the broker version
   kafka-python infers from them (the suite asserts that value and gates tests on it),
6. runs ``pytest test/integration`` with ``KAFKA_URI`` pointing at our broker, deselecting only the
   tests listed in ``DESELECT`` (each with the reason a single node cannot pass it),
7. when the only failures are tests of ``CLIENT_RACES`` (races inside kafka-python itself, each
   with its diagnosis), runs those once more and lets the second result count,
8. runs the suite's SASL tests (test_sasl_integration.py: admin, produce/consume and raw client,
   each with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512) and SSL tests (test_ssl_integration.py)
   against a second broker with SASL_PLAINTEXT and SSL listeners (see SECURED_PLUGIN),
9. stops the brokers whatever happens, prints pytest's summary lines last and exits with pytest's
   exit code (a run in which no test passed is a failure).

The full pytest output (with the suite's DEBUG logs) is kept in
``.cache/kafka-python-suite/last-run.log``; the console shows progress, failure tracebacks and the
short summary. ``--keep`` keeps the temporary directory (sdist tree and broker data) for debugging.
Nothing from the sdist is ever written into the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

KAFKA_PYTHON_VERSION = "3.0.12"
SDIST_NAME = f"kafka_python-{KAFKA_PYTHON_VERSION}"

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = ROOT / ".cache" / "kafka-python-suite"
LOG_FILE = CACHE_DIR / "last-run.log"

# Whole-run budget for the pytest step: it must stay well under CI's limits. On expiry pytest gets
# SIGINT (it then still prints its summary) and, if it does not stop, SIGKILL.
DEFAULT_DEADLINE_S = 480.0

# Import name -> pip requirement, for the suite's test dependencies (pyproject "testing" extra plus
# the optional codec/checksum libraries its tests exercise).
TEST_DEPS: dict[str, str] = {
    "pytest": "pytest>=8",
    "pytest_timeout": "pytest-timeout>=2.3",
    "pytest_mock": "pytest-mock>=3.14,<4",
    "xxhash": "xxhash>=3.4",
    "lz4": "lz4>=4.3",
    "snappy": "python-snappy>=0.7",
    "zstandard": "zstandard>=0.22",
    "crc32c": "crc32c>=2.4",
}

# Broker settings for the run. Values mirror what the suite's own broker template configures for
# the Kafka brokers it spawns itself (4 partitions per auto-created topic, 2 offsets partitions,
# short group timeouts, no initial rebalance delay).
BROKER_PROPERTIES = {
    "num.partitions": "4",
    "offsets.topic.num.partitions": "2",
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    # An authorizer, as the suite's own brokers have (its ACL test needs one); the clients are
    # super users (ANONYMOUS on PLAINTEXT, the SASL tests' user), so nothing else is refused.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:alice",
}

# Tests that a single-node broker reached through KAFKA_URI cannot pass, whatever we implement.
# Node ids are relative to the sdist root. Everything else runs, including tests for features our
# broker has not implemented yet: those must show up as failures, not disappear.
DESELECT: dict[str, str] = {
    "test/integration/test_ssl_integration.py::TestSSLConnection::test_ssl_handshake": (
        "the ssl_kafka fixture ignores KAFKA_URI and spawns its own broker: it runs in the "
        "secured run instead, against our SSL listener (SECURED_PLUGIN)"
    ),
    "test/integration/test_ssl_integration.py::TestSSLConnection::test_legacy_kafka_client_ssl": (
        "same ssl_kafka fixture: runs in the secured run against our SSL listener"
    ),
    "test/integration/test_admin_integration.py::test_describe_metadata_quorum": (
        "KRaft quorum API (DescribeQuorum on __cluster_metadata): our broker keeps its metadata "
        "without a Raft quorum, so there are no voters to describe (also skipped below 4.0)"
    ),
}

# Tests that fail now and then because of a race inside kafka-python itself, whatever the broker
# does. When a run's only failures are among these, each is run once more on its own and the second
# result counts; a failure of any other test, or of one of these twice, still fails the run.
_SUBSCRIBE_RACE = (
    "the test's consumer (group_id=None) subscribes while its bootstrap MetadataRequest (topics=[]) "
    "is in flight; kafka-python's ClusterMetadata.update_metadata then clears the update that "
    "set_topics requested (see the TODO in set_topics), so the consumer has no partitions until "
    "metadata.max.age.ms (300 s) and its 30 s consumer_timeout_ms ends the read with nothing"
)
CLIENT_RACES: dict[str, str] = {
    f"test/integration/test_producer_integration.py::test_idempotent_producer_max_in_flight[{n}]":
        _SUBSCRIBE_RACE
    for n in (1, 2, 5)
}

SHIM_INIT = '"""Package marker written by streams\' tests/external/kafka_python_suite.py."""\n'

SHIM_SERVICE = textwrap.dedent(
    '''\
    """Service stand-ins for the kafka-python integration fixtures.

    Written at run time by streams' tests/external/kafka_python_suite.py. The suite talks to an
    already-running broker (KAFKA_URI), so an external service has nothing to start or stop, and
    spawning a broker of its own is refused.
    """

    import logging

    log = logging.getLogger(__name__)


    class ExternalService:
        """A broker someone else runs: every lifecycle call is a no-op."""

        def __init__(self, host, port):
            self.host = host
            self.port = port
            log.info("Using already running service at %s:%d", host, port)

        def open(self):
            pass

        def close(self):
            pass

        def start(self):
            pass

        def stop(self):
            pass

        def dump_logs(self):
            pass

        def wait_for(self, pattern, timeout=30):
            return True


    class SpawnedService:
        """Spawning JVM brokers is not part of this harness."""

        def __init__(self, args=None, env=None):
            self.args = args
            self.env = env

        def start(self):
            raise RuntimeError(
                "this harness only targets an external broker (KAFKA_URI); "
                "cannot spawn: %r" % (self.args,)
            )

        def stop(self):
            pass

        def dump_logs(self):
            pass

        def wait_for(self, pattern, timeout=30):
            return False
    '''
)

# The suite's SASL tests (test_sasl_integration.py: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 x admin,
# produce/consume, raw client) skip themselves when KAFKA_URI is set and otherwise spawn a JVM
# broker, as do its SSL tests (ssl_kafka). This plugin, loaded with -p in a second run, points
# those fixtures at our broker's SASL_PLAINTEXT or SSL listener instead (as the user the suite
# expects, KafkaFixture.broker_user; ssl_dir holding our test CA as `ca-cert`), and lists topics
# with the admin client instead of kafka-topics.sh. The tests themselves run as they are.
SECURED_PLUGIN = textwrap.dedent(
    '''\
    """Written by streams' tests/external/kafka_python_suite.py (see SECURED_PLUGIN there)."""

    import os

    from kafka import KafkaAdminClient

    from test.integration import fixtures

    _instance = fixtures.KafkaFixture.instance.__func__


    def _external_instance(cls, broker_id, **params):
        transport = params.get("transport", "PLAINTEXT").upper()
        host, port = os.environ[f"STREAMS_{transport}_BOOTSTRAP"].rsplit(":", 1)
        params.update(host=host, port=int(port), external=True)
        fixture = _instance(cls, broker_id, **params)
        if transport == "SSL":
            fixture.ssl_dir = os.environ["STREAMS_SSL_DIR"]
        return fixture


    def _topic_names(self):
        params = self._enrich_client_params({}, client_id="topic_lister")
        with KafkaAdminClient(**params) as admin:
            return admin.list_topics()


    fixtures.KafkaFixture.instance = classmethod(_external_instance)
    fixtures.KafkaFixture.get_topic_names = _topic_names
    '''
)
SECURED_TESTS = ("test/integration/test_sasl_integration.py",
                 "test/integration/test_ssl_integration.py")
SASL_USER, SASL_PASSWORD = "alice", "alice-secret"  # KafkaFixture.broker_user / broker_password

# Asks the running broker for its ApiVersions and prints the broker version kafka-python infers,
# using the kafka package of the unpacked sdist (run with the sdist root as working directory).
INFER_VERSION = textwrap.dedent(
    """\
    import sys
    from kafka import KafkaAdminClient
    from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
    admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], client_id="version_probe")
    try:
        versions = admin.api_versions()
        inferred = infer_broker_version_from_api_versions(versions)
    finally:
        admin.close()
    print(".".join(str(part) for part in inferred))
    """
)

FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (\S+)")
SUMMARY_RE = re.compile(r"^=+ (.*\bin [0-9.]+s.*) =+$")
SECTION_RE = re.compile(r"^=+ (.+?) =+$")
QUIET_SECTIONS = ("PASSES",)


def venv_python() -> str:
    candidate = ROOT / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


def log(message: str) -> None:
    print(f"[kafka-python-suite] {message}", flush=True)


def fetch_sdist(python: str) -> Path:
    """Return the cached sdist archive, downloading it from PyPI on first use."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    ignore = CACHE_DIR.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by tests/external/kafka_python_suite.py\n*\n")
    archive = CACHE_DIR / f"{SDIST_NAME}.tar.gz"
    if archive.exists():
        return archive
    log(f"downloading kafka-python=={KAFKA_PYTHON_VERSION} sdist into {CACHE_DIR}")
    subprocess.run(
        [python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"kafka-python=={KAFKA_PYTHON_VERSION}", "-d", str(CACHE_DIR)],
        check=True,
    )
    if not archive.exists():
        raise RuntimeError(f"pip download did not produce {archive}")
    return archive


def unpack(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    root = dest / SDIST_NAME
    if not (root / "test" / "integration" / "conftest.py").exists():
        raise RuntimeError(f"{archive} has no test/integration suite")
    return root


def write_shim(sdist_root: Path) -> None:
    test_dir = sdist_root / "test"
    init = test_dir / "__init__.py"
    if not init.exists():
        init.write_text(SHIM_INIT)
    (test_dir / "service.py").write_text(SHIM_SERVICE)
    (test_dir / "streams_secured.py").write_text(SECURED_PLUGIN)


def ensure_test_deps(python: str) -> None:
    probe = (
        "import importlib.util, sys; "
        "print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))"
    )
    if python == sys.executable:
        missing = [name for name in TEST_DEPS if importlib.util.find_spec(name) is None]
    else:
        out = subprocess.run([python, "-c", probe, *TEST_DEPS], check=True,
                             capture_output=True, text=True).stdout
        missing = out.split()
    if not missing:
        return
    requirements = [TEST_DEPS[name] for name in missing]
    log(f"installing test dependencies: {' '.join(requirements)}")
    subprocess.run([python, "-m", "pip", "install", "-q", *requirements], check=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_accepting(proc: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"broker did not accept connections on port {port} within {timeout}s")


@contextmanager
def running_broker(python: str, workdir: Path) -> Iterator[int]:
    """Start `streams broker start` in a child process; always stop it on exit."""
    port = free_port()
    data_dir = workdir / "broker-data"
    config = workdir / "broker.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in BROKER_PROPERTIES.items()))
    broker_log = workdir / "broker.log"
    cmd = [python, "-m", "streams.cli.main", "broker", "start", "--data-dir", str(data_dir),
           "--port", str(port), "--config", str(config)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with broker_log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        try:
            wait_accepting(proc, port, 30.0)
            log(f"broker pid {proc.pid} on 127.0.0.1:{port} (log {broker_log})")
            yield port
        finally:
            stop_process(proc, signal.SIGTERM, 20.0)
            log(f"broker stopped (exit code {proc.returncode})")
            tail = broker_log.read_text(errors="replace").splitlines()[-15:]
            if proc.returncode not in (0, None):
                log("last broker log lines:\n  " + "\n  ".join(tail))


@contextmanager
def running_secured_broker(python: str, workdir: Path) -> Iterator[dict[str, str]]:
    """A second broker with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512) and SSL listeners for the
    SASL and SSL tests; the suite's user gets PLAIN from the JAAS entry and SCRAM credentials
    through `streams users scram-set` (AlterUserScramCredentials) on the PLAINTEXT listener.
    Yields the environment SECURED_PLUGIN reads."""
    sys.path.insert(0, str(ROOT))
    from tests.security.certs import make_pki  # the project's test CA (cryptography)

    pki = make_pki(workdir / "pki")
    ssl_dir = workdir / "ssl"
    ssl_dir.mkdir()
    (ssl_dir / "ca-cert").write_text(pki.ca_pem)
    plain, sasl, tls = free_port(), free_port(), free_port()
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{SASL_USER}" password="{SASL_PASSWORD}" '
            f'user_{SASL_USER}="{SASL_PASSWORD}";')
    properties = {
        **BROKER_PROPERTIES,
        "data.dir": str(workdir / "sasl-broker-data"),
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                     f"SSL://127.0.0.1:{tls}",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.keystore),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
    }
    config = workdir / "secured-broker.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    broker_log = workdir / "secured-broker.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with broker_log.open("wb") as out:
        proc = subprocess.Popen([python, "-m", "streams.cli.main", "broker", "start", "--config",
                                 str(config)], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=env)
        try:
            wait_accepting(proc, sasl, 30.0)
            made = subprocess.run(
                [python, "-m", "streams.cli.main", "users", "scram-set", SASL_USER,
                 "--password-stdin", "--bootstrap-servers", f"127.0.0.1:{plain}"],
                input=SASL_PASSWORD + "\n", capture_output=True, text=True, cwd=ROOT, env=env,
                timeout=60)
            if made.returncode != 0:
                raise RuntimeError(f"streams users scram-set failed: {made.stderr.strip()}")
            log(f"secured broker pid {proc.pid} on SASL_PLAINTEXT://127.0.0.1:{sasl}, "
                f"SSL://127.0.0.1:{tls}")
            yield {"STREAMS_SASL_PLAINTEXT_BOOTSTRAP": f"127.0.0.1:{sasl}",
                   "STREAMS_SSL_BOOTSTRAP": f"127.0.0.1:{tls}", "STREAMS_SSL_DIR": str(ssl_dir)}
        finally:
            stop_process(proc, signal.SIGTERM, 20.0)


def stop_process(proc: subprocess.Popen[Any], sig: int, grace: float) -> None:
    if proc.poll() is not None:
        return
    with suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            proc.kill()
        proc.wait(10)


def infer_kafka_version(python: str, sdist_root: Path, port: int) -> str:
    result = subprocess.run([python, "-c", INFER_VERSION, f"127.0.0.1:{port}"], cwd=sdist_root,
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"could not infer the broker version:\n{result.stderr[-3000:]}")
    version = result.stdout.strip().splitlines()[-1]
    if not re.fullmatch(r"\d+(\.\d+)+", version):
        raise RuntimeError(f"unexpected inferred version {version!r}")
    return version


class OutputFilter:
    """Echo pytest output to the console, except the PASSES section and captured logs."""

    def __init__(self, console: TextIO) -> None:
        self.console = console
        self.in_quiet_section = False
        self.in_capture = False
        self.summary: str | None = None
        self.failed: list[str] = []

    def feed(self, line: str) -> None:
        stripped = line.rstrip("\n")
        failed = FAILED_RE.match(stripped)
        if failed:
            self.failed.append(failed.group(1))
        summary = SUMMARY_RE.match(stripped)
        if summary:
            self.summary = stripped
        section = SECTION_RE.match(stripped)
        if section:
            self.in_quiet_section = section.group(1).strip() in QUIET_SECTIONS
            self.in_capture = False
        elif stripped.startswith("-") and " Captured " in stripped:
            self.in_capture = True
        elif stripped.startswith("_") and stripped.endswith("_") and " " in stripped:
            self.in_capture = False  # header of the next failure report
        if not (self.in_quiet_section or self.in_capture):
            self.console.write(line)
            self.console.flush()


@dataclass
class PytestRun:
    code: int
    summary: str | None
    failed: list[str]  # node ids from the short summary's FAILED and ERROR lines


def run_pytest(python: str, sdist_root: Path, port: int, kafka_version: str, kafka_root: Path,
               extra: list[str], deadline_s: float, log_file: Path = LOG_FILE,
               secured: dict[str, str] | None = None) -> PytestRun:
    """Run the integration suite, or only the node ids in `extra` when it names some; with
    `secured` (SECURED_PLUGIN's environment), run the SASL and SSL tests against it."""
    env = dict(os.environ)
    env.update(
        KAFKA_URI=f"kafka://127.0.0.1:{port}",
        KAFKA_VERSION=kafka_version,
        KAFKA_ROOT=str(kafka_root),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("ZOOKEEPER_URI", None)
    cmd = [python, "-m", "pytest", "-o", "addopts=", "--timeout=60",
           "--timeout-method=signal", "-rA", "-p", "no:cacheprovider"]
    if secured is not None:
        env.pop("KAFKA_URI")  # the SASL tests skip themselves when it is set
        env.update(secured)
        cmd += ["-p", "test.streams_secured", *SECURED_TESTS]
    elif not any("::" in arg for arg in extra):
        cmd.append("test/integration")
    for node_id in DESELECT if secured is None else ():
        cmd += ["--deselect", node_id]
    cmd += extra
    where = f"secured listeners {secured}" if secured else f"KAFKA_URI={env['KAFKA_URI']}"
    log(f"running: KAFKA_VERSION={kafka_version} {where} "
        f"{' '.join(cmd[1:])}  (cwd {sdist_root})")
    log(f"full output: {log_file}")
    filt = OutputFilter(sys.stdout)
    # SIGINT is reset to its default so that pytest can be interrupted even when this script
    # was started with SIGINT ignored (a background job).
    proc = subprocess.Popen(cmd, cwd=sdist_root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            preexec_fn=_default_sigint)
    timed_out = threading.Event()

    def watchdog() -> None:
        timed_out.set()
        log(f"deadline of {deadline_s:.0f}s reached: interrupting pytest")
        stop_process(proc, signal.SIGINT, 30.0)  # SIGINT first: pytest still prints its summary

    timer = threading.Timer(deadline_s, watchdog)
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None
        with log_file.open("w") as full:
            for line in proc.stdout:
                full.write(line)
                filt.feed(line)
        proc.wait()
    finally:
        timer.cancel()
        stop_process(proc, signal.SIGTERM, 10.0)  # only if we are leaving early (SIGTERM, error)
    code = proc.returncode
    if timed_out.is_set() and code == 0:
        code = 1
    return PytestRun(code, filt.summary, filt.failed)


def rerun_client_races(first: PytestRun, rerun: Callable[[list[str]], PytestRun]) -> PytestRun:
    """Give the tests of CLIENT_RACES a second run when they are the only failures of `first`."""
    if first.code != 1 or not first.failed or not set(first.failed) <= set(CLIENT_RACES):
        return first
    for node_id in first.failed:
        log(f"{node_id} failed; a known kafka-python race can cause that: {CLIENT_RACES[node_id]}")
    log(f"running the {len(first.failed)} failed test(s) once more")
    second = rerun(first.failed)
    if second.code == 0:
        log(f"passed on the second run; first run: {first.summary}")
    return second


def parse_counts(summary: str | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    if summary:
        for number, word in re.findall(r"(\d+) (\w+)", summary):
            counts[word] = int(number)
    return counts


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (sdist tree, broker data and log)")
    parser.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_S,
                        help="seconds before the pytest run is interrupted (default %(default)s)")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)

    python = venv_python()
    archive = fetch_sdist(python)
    ensure_test_deps(python)
    workdir = Path(tempfile.mkdtemp(prefix="kafka-python-suite-"))
    try:
        sdist_root = unpack(archive, workdir)
        write_shim(sdist_root)
        kafka_root = workdir / "kafka-root"  # must exist; nothing is ever run from it
        kafka_root.mkdir()
        with running_broker(python, workdir) as port:
            kafka_version = infer_kafka_version(python, sdist_root, port)
            log(f"kafka-python infers broker version {kafka_version} from our ApiVersions")
            first = run_pytest(python, sdist_root, port, kafka_version, kafka_root,
                               args.pytest_args, args.deadline)
            final = rerun_client_races(first, lambda node_ids: run_pytest(
                python, sdist_root, port, kafka_version, kafka_root, node_ids, args.deadline,
                LOG_FILE.with_name("rerun.log")))
            code, summary = final.code, final.summary
            if final is not first:
                summary = f"{first.summary}\nsecond run of the known client races: {summary}"
        if not args.pytest_args:
            with running_secured_broker(python, workdir) as secured:
                run = run_pytest(python, sdist_root, 0, kafka_version, kafka_root, [],
                                 args.deadline, LOG_FILE.with_name("secured-run.log"),
                                 secured=secured)
            code = code or run.code
            summary = f"SASL and SSL tests ({', '.join(SECURED_TESTS)}): {run.summary}\n{summary}"
    finally:
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    counts = parse_counts(summary)
    if code == 5 or not counts.get("passed"):
        log("no test passed: treating the run as a failure")
        code = code or 1
    print(summary or "kafka-python suite: no pytest summary line (run interrupted?)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
