"""Kafka Streams' TopologyTestDriver as an oracle: TopologyRunner.java in one JVM per session.

The runner is compiled with javac against the prepared jars into
``.reference/dsl-runner/<source digest>/`` (git-ignored), once per version of its source; cases go to its stdin one JSON line each
and answers come back one line each, so a test session pays for one JVM start.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from . import kafka
from .dsl_translate import state_root

SOURCE = kafka.HERE / "java" / "TopologyRunner.java"
BUILD = kafka.CACHE / "dsl-runner"


def compile_runner() -> Path:
    """Compile TopologyRunner.java unless classes of the current source exist."""
    return compile_java(SOURCE, BUILD)


def compile_java(source: Path, build_root: Path) -> Path:
    """Compile one Java source against the prepared jars unless classes of its current
    version exist; returns the classes directory.

    Each source version gets its own directory (named by its digest, made complete before it
    is renamed into place): a running JVM's classes are never replaced under it by another
    session (another worktree, or a later edit) compiling a different source.
    """
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    build = build_root / digest[:16]
    if (build / f"{source.stem}.class").exists():
        return build
    javac = shutil.which("javac")
    if javac is None:
        raise kafka.PrepareError("javac is not on PATH")
    build_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".compiling-", dir=build_root))
    done = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(staging), "-cp",
                           f"{kafka.LIBS}/*", str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise kafka.PrepareError(f"javac failed: {done.stderr.strip()[:2000]}")
    try:
        staging.rename(build)
    except OSError:  # compiled meanwhile by another session: theirs is the same source
        shutil.rmtree(staging, ignore_errors=True)
    return build


class KafkaStreamsRunner:
    """One JVM answering cases in order; ``run`` sends one and waits for its answer."""

    def __init__(self, log: Path) -> None:
        classes = compile_runner()
        self._log = open(log, "w")  # noqa: SIM115 - open while the JVM runs; Kafka's logging, for a failing run's post-mortem
        # its state directories (RocksDB) on the RAM disk our side uses, when there is one
        root = state_root()
        tmpdir = [f"-Djava.io.tmpdir={root}"] if root else []
        self.proc = subprocess.Popen(
            ["java", *kafka.JAVA_OPTS, *tmpdir, "-cp", f"{classes}:{kafka.LIBS}/*",
             "TopologyRunner"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True)

    def run(self, annotated: dict[str, Any]) -> dict[str, Any]:
        self.submit(annotated)
        return self.answer()

    def submit(self, annotated: dict[str, Any]) -> None:
        """Send a case; the JVM works on it while the caller does something else (runs the
        case on our side), then ``answer`` reads what it said. One case at a time."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(annotated) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"TopologyRunner exited ({self.proc.poll()}); see {self._log.name}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
