"""Run confluent-kafka-python's own integration tests against our broker (or Apache Kafka 4.4).

confluent-kafka's PyPI sdist ships no tests, so the suite comes from a checkout of its
repository at the tag of the installed confluent-kafka, kept OUTSIDE this repository::

    git clone --depth 1 --branch v2.16.1 \\
        https://github.com/confluentinc/confluent-kafka-python /tmp/confluent-kafka-python
    CONFLUENT_KAFKA_PYTHON_SRC=/tmp/confluent-kafka-python make test-confluent-suite
    # or directly, choosing directories (share_consumer, consumer, admin, producer...):
    .venv/bin/python tests/external/confluent_suite.py --dirs share_consumer [--kafka] [-- -k ack]

What it does:

1. copies the checkout's ``tests/`` into a temporary directory (nothing is ever written into this
   repository) with a pytest.ini carrying the suite's own settings (asyncio_mode=auto),
2. installs the suite's test-only dependencies (trivup, which its fixtures import, and the
   packages its tests use) with ``pip install --target`` into ``.cache/confluent-suite/deps``,
   not into the virtualenv,
3. starts ``streams broker start`` on a free port, or with ``--kafka`` the reference Apache
   Kafka 4.4 (tests/reference/kafka.py), both with the broker settings the suite's own cluster
   uses (``TestUtils.broker_conf``: a 1 s share record lock, allowed by a 1 s minimum; the
   StandardAuthorizer with the anonymous user as super user, as its docker-compose cluster),
4. starts our schema registry (``streams registry start``) on that broker for the tests that
   need one (``SR_URL``),
5. runs ``pytest tests/integration/<dir>`` for each directory with ``BROKERS`` pointing at it
   (the suite's "bring your own cluster" fixture), prints pytest's summary per directory and the
   totals, and stops the registry and the broker whatever happens.

The full pytest output goes to ``.cache/confluent-suite/<broker>-<dir>.log``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from kafka_python_suite import free_port, wait_accepting  # this folder: the script's path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "confluent-suite"
DEPS = CACHE / "deps"
# What the suite's modules import beyond our dev dependencies (its requirements-tests.txt),
# installed without their dependencies: everything else they need is already in the venv.
TEST_DEPS = ["trivup==0.12.2", "jwcrypto==1.6.1", "python_jwt==4.1.0", "respx==0.23.1",
             "httpx==0.28.1", "httpcore==1.0.9", "pytest-asyncio==1.5.0",
             "async-timeout==5.0.1", "requests-mock==1.12.1"]
# The suite's TestUtils.broker_conf, and the authorizer of its docker-compose cluster (the ACL
# tests need one; the anonymous client is a super user), for both brokers.
BROKER_PROPERTIES = {
    "group.share.record.lock.duration.ms": "1000",
    "group.share.min.record.lock.duration.ms": "1000",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
DEFAULT_DIRS = ("share_consumer", "consumer", "admin")
# pytest's last line, with or without its "=====" frame (-q drops it)
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|errors?|skipped|deselected).*?) in [\d.]+s",
                     re.MULTILINE)


def log(message: str) -> None:
    print(f"[confluent-suite] {message}", flush=True)


def ensure_deps(python: str) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")  # the cache ignores itself in git
    marker = DEPS / ".installed"
    wanted = "\n".join(TEST_DEPS)
    if marker.exists() and marker.read_text() == wanted:
        return
    log(f"installing the suite's test dependencies into {DEPS}")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--upgrade",
                    "--target", str(DEPS), *TEST_DEPS], check=True)
    marker.write_text(wanted)


def copy_suite(source: Path, workdir: Path) -> Path:
    tests = source / "tests"
    if not (tests / "integration").is_dir():
        raise SystemExit(f"{source} has no tests/integration: point CONFLUENT_KAFKA_PYTHON_SRC "
                         "at a checkout of confluent-kafka-python (see this file's docstring)")
    root = workdir / "suite"
    shutil.copytree(tests, root / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n"
                                     "asyncio_default_fixture_loop_scope = function\n"
                                     "norecursedirs = tests/ducktape\n")
    return root


@contextmanager
def our_broker(python: str, workdir: Path) -> Iterator[str]:
    port = free_port()
    config = workdir / "broker.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in BROKER_PROPERTIES.items()))
    broker_log = workdir / "broker.log"
    with broker_log.open("wb") as out:
        proc = subprocess.Popen(
            [python, "-m", "streams.cli.main", "broker", "start", "--data-dir",
             str(workdir / "data"), "--port", str(port), "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            wait_accepting(proc, port, 30)
            log(f"our broker pid {proc.pid} on 127.0.0.1:{port} (log {broker_log})")
            yield f"127.0.0.1:{port}"
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def our_registry(python: str, workdir: Path, bootstrap: str) -> Iterator[str]:
    port = free_port()
    with (workdir / "registry.log").open("wb") as out:
        proc = subprocess.Popen(
            [python, "-m", "streams.cli.main", "registry", "start", "--port", str(port),
             "--bootstrap-servers", bootstrap], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            wait_accepting(proc, port, 30)
            yield f"http://127.0.0.1:{port}"
        finally:
            _stop(proc)


@contextmanager
def reference_kafka(workdir: Path) -> Iterator[str]:
    sys.path.insert(0, str(ROOT))
    from tests.reference import kafka

    kafka.prepare()
    node = kafka.KafkaNode(free_port(), workdir / "kafka", extra=BROKER_PROPERTIES).start()
    try:
        log(f"Apache Kafka {kafka.kafka_version()} on {node.bootstrap}")
        yield node.bootstrap
    finally:
        node.stop()


def run_dir(python: str, suite: Path, bootstrap: str, registry: str, name: str, label: str,
            extra: list[str]) -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    out_path = CACHE / f"{label}-{name}.log"
    env = dict(os.environ, BROKERS=bootstrap, SR_URL=registry,
               PYTHONPATH=os.pathsep.join([str(suite), str(DEPS)]))
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "--timeout", "600", "-q", "-rfE",
           f"tests/integration/{name}", *extra]
    log(f"{label}: pytest tests/integration/{name} (output in {out_path})")
    with out_path.open("w") as out:
        result = subprocess.run(cmd, cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT)
    text = out_path.read_text(errors="replace")
    for line in text.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            print("  " + line[:200])
    found = SUMMARY.findall(text)
    summary = found[-1] if found else f"no summary (pytest exit code {result.returncode})"
    log(f"{label} {name}: {summary}")
    return summary


def totals(summaries: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for summary in summaries:
        for count, what in re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected)",
                                      summary):
            key = "error" if what.startswith("error") else what
            out[key] = out.get(key, 0) + int(count)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=os.environ.get("CONFLUENT_KAFKA_PYTHON_SRC"),
                        help="checkout of confluent-kafka-python (env CONFLUENT_KAFKA_PYTHON_SRC)")
    parser.add_argument("--dirs", default=",".join(DEFAULT_DIRS),
                        help="tests/integration directories, comma-separated")
    parser.add_argument("--kafka", action="store_true",
                        help="run against the reference Apache Kafka instead of our broker")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    args = parser.parse_args(argv)
    if not args.source:
        parser.error("set CONFLUENT_KAFKA_PYTHON_SRC (or --source) to a checkout of "
                     "confluent-kafka-python; see this file's docstring")
    python = sys.executable
    ensure_deps(python)
    label = "kafka" if args.kafka else "ours"
    summaries = []
    with tempfile.TemporaryDirectory(prefix="confluent-suite-") as tmp:
        workdir = Path(tmp)
        suite = copy_suite(Path(args.source), workdir)
        broker = reference_kafka(workdir) if args.kafka else our_broker(python, workdir)
        with broker as bootstrap, our_registry(python, workdir, bootstrap) as registry:
            for name in [d.strip() for d in args.dirs.split(",") if d.strip()]:
                summaries.append(run_dir(python, suite, bootstrap, registry, name, label,
                                         args.pytest_args))
    counts = totals(summaries)
    log(f"{label} total: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    with suppress(Exception):
        (CACHE / f"{label}-totals.txt").write_text(str(counts) + "\n")
    return 1 if counts.get("failed") or counts.get("error") or not counts.get("passed") else 0


if __name__ == "__main__":
    sys.exit(main())
