"""Apache Kafka's own Connect 4.3.1 (connect-runtime, connect-file, connect-mirror) against our
broker: prepare its jars from Maven Central and run its workers and MirrorMaker 2 as child JVMs.

    python -m tests.reference.connect prepare     # once: jars into .reference/connect-libs/

Kafka publishes connect-file and connect-mirror up to 4.3.1 (not 4.4.0), and the Connect jars
must all be of one version, so this is pinned apart from tests/reference/pom.xml.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .. import kafka

POM = Path(__file__).resolve().parent / "pom.xml"
LIBS = kafka.CACHE / "connect-libs"
MARKER = LIBS / ".prepared"
JAVA_OPTS = ["-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.awt.headless=true"]


def _digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def prepared() -> bool:
    return MARKER.exists() and MARKER.read_text().strip() == _digest()


def prepare() -> Path:
    """Copy Connect 4.3.1's jars and their runtime dependencies into LIBS (once per pom)."""
    if prepared():
        return LIBS
    mvn = shutil.which("mvn")
    if mvn is None:
        raise kafka.PrepareError("mvn is not on PATH: cannot fetch Kafka Connect's jars")
    with kafka._lock():  # noqa: SLF001 - one preparer at a time, shared with the broker's jars
        if prepared():
            return LIBS
        shutil.rmtree(LIBS, ignore_errors=True)
        cmd = [mvn, "-B", "-q", "-f", str(POM), f"-Dmaven.repo.local={kafka.M2}",
               "dependency:copy-dependencies", f"-DoutputDirectory={LIBS}",
               "-DincludeScope=runtime"]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        except subprocess.TimeoutExpired:
            raise kafka.PrepareError("mvn took over 20 minutes") from None
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise kafka.PrepareError("mvn failed: " + " | ".join(tail))
        MARKER.write_text(_digest() + "\n")
    return LIBS


def unavailable() -> str | None:
    """Why Kafka's Connect cannot run here (one line), or None once its jars are ready."""
    if shutil.which("java") is None:
        return "Kafka Connect 4.3.1 needs java on PATH"
    if not prepared() and shutil.which("mvn") is None:
        return "Kafka Connect 4.3.1 needs mvn on PATH (or jars from `make connect-reference`)"
    try:
        prepare()
    except kafka.PrepareError as exc:
        return f"Kafka Connect 4.3.1's jars cannot be prepared: {exc}"
    return None


def write_properties(path: Path, settings: dict[str, object]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


class JavaProcess:
    """A Kafka Connect main class in a child JVM, logging to ``<work>/<name>.log``."""

    def __init__(self, name: str, work: Path, main: str, *args: str,
                 rest_url: str | None = None) -> None:
        self.name = name
        self.work = work
        self.main = main
        self.args = args
        self.rest_url = rest_url
        self.log_file = work / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> JavaProcess:
        log4j = self.work / f"{self.name}-log4j2.properties"
        log4j.write_text(kafka.log4j_properties(self.log_file))
        cmd = [shutil.which("java") or "java", *JAVA_OPTS,
               f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{LIBS}/*", self.main, *self.args]
        with open(self.work / f"{self.name}.out", "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=kafka._die_with_parent)  # noqa: SLF001
        if self.rest_url is not None:
            self.wait_rest(timeout)
        return self

    def wait_rest(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.proc.returncode}: "
                                     + self.tail())
            try:
                with urllib.request.urlopen(f"{self.rest_url}/connectors", timeout=3):
                    return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise AssertionError(f"{self.name}: REST not up within {timeout}s: " + self.tail())

    def tail(self, lines: int = 30) -> str:
        texts = []
        for path in (self.work / f"{self.name}.out", self.log_file):
            if path.exists():
                texts.append("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["prepare"]:
        print("usage: python -m tests.reference.connect prepare", file=sys.stderr)
        return 2
    if shutil.which("java") is None or shutil.which("mvn") is None:
        print("connect-reference: java or mvn missing, the Kafka Connect tests will skip")
        return 0
    try:
        print(f"Kafka Connect jars in {prepare()}")
    except kafka.PrepareError as exc:
        print(f"connect-reference: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
