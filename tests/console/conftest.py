"""The browser the console tests drive: Debian's chromium through Playwright, one per module,
and a fresh page per test that records every console error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser_check import chromium_path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium_path(),
                                     args=["--no-sandbox", "--disable-gpu"])
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.console_errors = errors
    yield tab
    context.close()
