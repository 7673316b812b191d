"""What the console's browser tests need, checked once: Playwright (the dev extra) and Debian's
chromium (Playwright cannot download a browser here)."""

from __future__ import annotations

import shutil

import pytest


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_browser() -> str:
    """Skip the calling test module with one line when Playwright or chromium is missing;
    the browser's path otherwise."""
    pytest.importorskip("playwright.sync_api",
                        reason="playwright is not installed (pip: the dev extra)")
    path = chromium_path()
    if path is None:
        pytest.skip("no chromium browser on this machine (apt-get install chromium)",
                    allow_module_level=True)
    return path
