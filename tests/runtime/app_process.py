"""A streams test app (a script in tests/runtime) in its own process, for the runtime tests that
stop, kill and restart instances while records flow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class AppProcess:
    """``python SCRIPT ARGS...`` with its output in ``log``; ``running()`` once it logged
    ``STATE RUNNING`` (an exited process raises with its output instead of waiting in vain)."""

    def __init__(self, script: Path | list[str], args: list[str], log: Path,
                 env: dict[str, str] | None = None, state_dir: Path | None = None) -> None:
        """``script``: a Python script, or the command of another program (a Kafka Streams
        app in a JVM) that prints the same lines."""
        self.log = log
        self.state_dir = state_dir
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT), **(env or {}))
        command = script if isinstance(script, list) else [sys.executable, str(script)]
        with open(log, "w") as out:
            self.proc = subprocess.Popen([*command, *args], stdout=out,
                                         stderr=subprocess.STDOUT, env=full_env)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def running(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"app exited with {self.proc.returncode}:\n{self.output()}")
        return "STATE RUNNING" in self.output()

    def owns_tasks(self, app_id: str) -> bool:
        """Running with a task directory in its state directory (only stateful tasks get one)."""
        assert self.state_dir is not None, "started without a state_dir"
        return self.running() and any((self.state_dir / app_id).glob("*_*"))

    def kill(self) -> None:
        """SIGKILL, and wait for the process to be gone."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        """Send ``sig`` and wait; a process still there after ``timeout`` seconds is killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
