"""What a new user meets first, run as they run it: `streams run` on a wrong app or a wrong
broker, and output piped into `head`. Each failure is one line (two for a syntax error: the
offending line, as Python shows it), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import free_port
from test_cli import ROOT, cli, ok

APP = """from streams import Serdes, StreamsBuilder

def topology():
    builder = StreamsBuilder()
    s = Serdes.string()
    builder.stream({topic!r}, key_serde=s, value_serde=s).to("first-hour-out")
    return builder.build()
"""


def _errors(stderr: str) -> list[str]:
    """The lines a user reads as errors (log lines at INFO are progress, not errors)."""
    return [line for line in stderr.splitlines() if " INFO " not in line]


def _run(app: Path, *args: str) -> subprocess.CompletedProcess:
    return cli("run", f"{app}:topology", "--state-dir", str(app.parent / "state"), *args)


def test_a_missing_source_topic_is_one_line(broker, tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP.format(topic="first-hour-missing"))
    result = _run(app, "--bootstrap-servers", broker.bootstrap)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    errors = _errors(result.stderr)
    assert errors[-1] == ("streams run: source topic(s) first-hour-missing do not exist; create "
                          "them first (streams topics create NAME --partitions N)")
    assert len(errors) == 2, errors  # the app's ERROR log line, then the command's summary


def test_a_wrong_port_is_one_line(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP.format(topic="t"))
    port = free_port()  # nothing listens there
    result = _run(app, "--bootstrap-servers", f"127.0.0.1:{port}")
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    errors = _errors(result.stderr)
    assert len(errors) == 2, errors
    assert errors[-1].startswith(f"streams run: cannot connect to bootstrap.servers "
                                 f"127.0.0.1:{port}: ")
    assert "is the broker running" in errors[-1]


def test_a_syntax_error_shows_file_line_and_the_line(tmp_path) -> None:
    app = tmp_path / "broken.py"
    app.write_text("from streams import StreamsBuilder\n\ndef topology(:\n    pass\n")
    result = _run(app)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [f"streams run: {app}:3: invalid syntax",
                                          "    def topology(:"]


def test_an_import_error_in_the_app_names_where(tmp_path) -> None:
    app = tmp_path / "needs.py"
    app.write_text("import json\nimport no_such_module_for_first_hour\n")
    result = _run(app)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"streams run: cannot load {app}: ModuleNotFoundError: No module named "
        f"'no_such_module_for_first_hour' (at {app}:2)"]


def test_an_error_building_the_topology_names_where(tmp_path) -> None:
    app = tmp_path / "raises.py"
    app.write_text("def topology():\n    return {}['missing']\n")
    result = _run(app)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"streams run: building the topology failed: KeyError: 'missing' (at {app}:2)"]


def test_streams_run_piped_into_a_reader_that_stops(broker, tmp_path) -> None:
    """`streams run APP | head -1`: when the reader goes away, the app closes cleanly and the
    command ends without a BrokenPipeError."""
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "first-hour-in", *bs)
    app = tmp_path / "first_hour_app.py"
    app.write_text(APP.format(topic="first-hour-in"))
    proc = subprocess.Popen([sys.executable, "-m", "streams.cli.main", "run", f"{app}:topology",
                             "--state-dir", str(tmp_path / "state"), *bs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline().startswith(b"running first-hour-app")
        proc.stdout.close()  # as `head -1` does after its line
        # Records make the app print progress into the closed pipe.
        ok("produce", "first-hour-in", *bs, stdin="a\nb\nc\n")
        assert proc.wait(90) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
