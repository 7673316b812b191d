"""The broker under test: ``streams broker start`` as a subprocess with its log in a file."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The broker binds 127.0.0.2 but advertises 127.0.0.1 on the same port, where the recording
# proxy listens: clients that follow the metadata reconnect through the proxy, not around it.
BIND_HOST = "127.0.0.2"
ADVERTISED_HOST = "127.0.0.1"
# A safety net for the shared machine: a decompression bomb may not take more than this.
ADDRESS_SPACE_LIMIT = 8 << 30
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.M)


def free_port() -> int:
    """A port free on both loopback addresses the broker and the proxy use."""
    while True:
        with socket.socket() as s:
            s.bind((ADVERTISED_HOST, 0))
            port = s.getsockname()[1]
        with socket.socket() as s:
            try:
                s.bind((BIND_HOST, port))
            except OSError:
                continue
        return port


def streams_executable() -> str:
    """The ``streams`` console script of the interpreter running the fuzzer."""
    candidate = Path(sys.executable).parent / "streams"
    return str(candidate) if candidate.exists() else "streams"


def _limit_memory(limit: int) -> Callable[[], None]:
    def apply() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class BrokerProcess:
    """Start, watch and stop one broker; its stdout and stderr are appended to ``log_path``."""

    def __init__(self, workdir: Path, port: int, address_space: int = ADDRESS_SPACE_LIMIT
                 ) -> None:
        self.address_space = address_space
        self.data_dir = workdir / "data"
        self.port = port
        self.log_path = workdir / "broker.log"
        self.config_path = workdir / "broker.properties"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_pos = 0
        self._terminated = False
        self.starts = 0
        self.config_path.write_text(
            f"advertised.host={ADVERTISED_HOST}\n"
            "group.initial.rebalance.delay.ms=0\n"
            "offsets.topic.num.partitions=4\n"
            "transaction.state.log.num.partitions=4\n"
        )

    @property
    def address(self) -> tuple[str, int]:
        """Where the broker itself listens (the fuzzer talks to it directly)."""
        return (BIND_HOST, self.port)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30.0) -> None:
        cmd = [streams_executable(), "broker", "start", "--data-dir", str(self.data_dir),
               "--host", BIND_HOST, "--port", str(self.port), "--config", str(self.config_path)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as log_file:
            start_pos = log_file.tell()
            log_file.write(f"==== fuzz: broker start #{self.starts + 1}\n".encode())
            log_file.flush()
            self.proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                         env=env,
                                         preexec_fn=_limit_memory(self.address_space))
        self.starts += 1
        deadline = time.monotonic() + timeout
        while not self._accepting():
            if self.proc.poll() is not None:
                raise BrokerDied(f"broker exited with {self.proc.returncode} at start:\n"
                                 f"{self.log_since(start_pos)}")
            if time.monotonic() > deadline:
                self.stop()
                raise BrokerDied(f"broker not accepting after {timeout}s:\n"
                                 f"{self.log_since(start_pos)}")
            time.sleep(0.05)

    def _accepting(self) -> bool:
        try:
            with socket.create_connection(self.address, timeout=0.5):
                return True
        except OSError:
            return False

    @property
    def exited_cleanly_expected(self) -> bool:
        """Whether the last stop() was a SIGTERM to a running broker (not a reaped crash)."""
        return self._terminated

    def exited_within(self, timeout: float) -> bool:
        """Whether the broker exits within ``timeout`` seconds (it is not stopped)."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.proc is None:
            return None
        self._terminated = self.proc.poll() is None
        if self._terminated:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def memory_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) of the broker in KiB; (0, 0) once it is gone."""
        values = {"VmRSS": 0, "VmHWM": 0}
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    key, _, rest = line.partition(":")
                    if key in values:
                        values[key] = int(rest.split()[0])
        except (OSError, AssertionError):
            pass
        return values["VmRSS"], values["VmHWM"]

    def new_log(self) -> str:
        """Log text written since the previous call."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_pos)
                data = f.read()
        except OSError:
            return ""
        self._log_pos += len(data)
        return data.decode("utf-8", "replace")

    def log_since(self, pos: int, chars: int = 6000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(pos)
                return f.read(chars).decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class BrokerDied(AssertionError):
    """The broker exited or would not start."""
