"""What the demos share: a progress line that suits where the output goes, and a data directory
that is removed afterwards unless the user asked to keep it (``--data-dir``)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PLAIN_EVERY_S = 5.0  # a log file gets a plain line this often, not a redrawn bar


class Progress:
    """A redrawn bar on a terminal; plain lines (no ``\\r``) when stdout is a file or a pipe."""

    def __init__(self) -> None:
        self.terminal = sys.stdout.isatty()
        self._last_plain = float("-inf")

    def show(self, text: str, done: bool = False) -> None:
        if self.terminal:
            print(f"\r{text}", end="\n" if done else "", flush=True)
            return
        now = time.monotonic()
        if done or now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            print(text, flush=True)


@contextmanager
def demo_root(data_dir: Path | None, prefix: str) -> Iterator[Path]:
    """``data_dir`` as given (kept), else a temporary directory removed when the demo ends
    well; after a failure it is kept, and its path printed, for a look at the logs."""
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
        yield data_dir
        return
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    except BaseException:
        print(f"(the demo's data is kept in {root})", file=sys.stderr)
        raise
    shutil.rmtree(root, ignore_errors=True)
