"""examples/avro_demo.py as a user runs it: Avro with the registry end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_avro_demo(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "avro_demo.py"), "--orders", "200",
         "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "subject orders-value version 2" in out
    assert "incompatible change refused (409)" in out and "table" in out
    assert "200/200 orders priced, 50 with a coupon" in out
    assert "every order came through" in out
