"""Process plumbing shared by the benchmark scripts: CPU accounting, free ports, and a
registry of child processes that are all stopped on exit (TERM or the given signal, then KILL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK")
REPO_ROOT = Path(__file__).resolve().parent.parent
QUIX_REQUIREMENTS = Path(__file__).resolve().with_name("quix-requirements.txt")
QUIX_VENV = REPO_ROOT / ".bench" / "quix-venv"


def process_cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process and all its threads (from /proc); 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_on_sigterm(signum: int, frame: Any) -> None:
    """Install for SIGTERM so that ``finally`` blocks stop every child process."""
    raise KeyboardInterrupt(f"signal {signum}")


class Processes:
    """Every child process started; ``close`` stops them all."""

    def __init__(self) -> None:
        self._procs: list[tuple[subprocess.Popen[bytes], int]] = []

    def start(self, argv: list[str], log_path: Path, stop_signal: int = signal.SIGTERM,
              **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` in its own session, output appended to ``log_path``."""
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, **kwargs)
        self._procs.append((proc, stop_signal))
        return proc

    def stop(self, proc: subprocess.Popen[bytes], sig: int | None = None,
             timeout: float = 10.0) -> int | None:
        """Signal (its stop signal unless ``sig``), wait ``timeout``, then kill."""
        for i, (p, stop_signal) in enumerate(self._procs):
            if p is proc:
                del self._procs[i]
                return _stop(proc, stop_signal if sig is None else sig, timeout)
        return _stop(proc, signal.SIGTERM if sig is None else sig, timeout)

    def close(self) -> None:
        while self._procs:
            proc, stop_signal = self._procs.pop()
            _stop(proc, stop_signal, 10.0)


def _stop(proc: subprocess.Popen[bytes], sig: int, timeout: float) -> int | None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)
    return proc.returncode


def quix_python(given: str | None = None) -> str:
    """A Python that imports the pinned Quix Streams: ``given``, else ``.bench/quix-venv``,
    created from benchmarks/quix-requirements.txt on first use (Quix pins an older
    confluent-kafka than this repository, so it cannot share the project's environment)."""
    if given:
        return given
    python = QUIX_VENV / "bin" / "python"
    stamp = QUIX_VENV / ".installed"
    if not stamp.exists() or stamp.stat().st_mtime < QUIX_REQUIREMENTS.stat().st_mtime:
        print(f"  installing {QUIX_REQUIREMENTS.name} into {QUIX_VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(QUIX_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r",
                        str(QUIX_REQUIREMENTS)], check=True)
        stamp.touch()
    return str(python)


def quix_versions(python: str) -> str:
    """``quixstreams X (confluent-kafka Y)`` as that Python imports them, or why it cannot."""
    out = subprocess.run([python, "-c", "import quixstreams, importlib.metadata as m;"
                          "print(quixstreams.__version__, m.version('confluent-kafka'))"],
                         capture_output=True, text=True)
    q = out.stdout.split()
    if len(q) == 2:
        return f"quixstreams {q[0]} (confluent-kafka {q[1]})"
    return f"quixstreams not importable: {out.stderr.strip()[-200:]}"


def repo_env() -> dict[str, Any]:
    """``Popen`` keywords that run ``python -m streams...`` from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return {"env": env, "cwd": str(REPO_ROOT)}


def start_broker(procs: Processes, work: Path,
                 timeout: float = 30.0) -> tuple[str, subprocess.Popen[bytes]]:
    """The bundled broker in a child process (data and log under ``work``), once it accepts
    connections. Kafka's 3 s ``group.initial.rebalance.delay.ms`` is 0, so group joins cost
    the same for every side a benchmark compares."""
    port = free_port()
    props = work / "broker.properties"
    props.write_text("group.initial.rebalance.delay.ms=0\n")
    log_path = work / "broker.log"
    proc = procs.start([sys.executable, "-m", "streams.cli.main", "broker", "start",
                        "--data-dir", str(work / "broker-data"), "--port", str(port),
                        "--config", str(props)], log_path, **repo_env())
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}: "
                               + log_path.read_text(errors="replace")[-2000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return f"127.0.0.1:{port}", proc
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker not ready after {timeout:.0f} s; see {log_path}") \
                    from None
            time.sleep(0.05)
