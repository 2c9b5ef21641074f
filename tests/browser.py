"""Headless Chromium for the HTML page tests, driven through Playwright's Python API.

``Chromium`` launches Debian's ``chromium`` (the system browser: Playwright's
own browser download is never used) with the machine's flags (headless, no
sandbox, no GPU, no background networking, no component update, no sync, no
first-run) and offers what the HTML report tests need: load a file and wait for
its load event, evaluate an expression, take a full-page PNG screenshot, and
list the console errors (a Content-Security-Policy violation is one) and
uncaught exceptions the page produced.

``chromium_or_skip`` finds the browser and Playwright; without either, a test
is skipped on a workstation (saying what to install) and fails under
``CI=true`` (where ``.ci/run`` installs both).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright not installed; pip install -e '.[test]' to test the HTML pages"
    if _executable() is None:
        return "chromium not installed; apt-get install chromium to test the HTML pages"
    return None


def _executable() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_path() -> str | None:
    """The Chromium executable when Playwright can drive it, else None."""
    return None if _missing() else _executable()


def chromium_or_skip() -> str:
    """Chromium's path; skip without it or Playwright, fail under ``CI=true``."""
    message = _missing()
    if message is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    path = _executable()
    assert path is not None
    return path


class Chromium:
    """One headless Chromium and one page in it."""

    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                args=list(FLAGS),
                timeout=timeout * 1000,
            )
            self.page = self._browser.new_page()
        except BaseException:
            self._playwright.stop()
            raise
        self.page.set_default_timeout(timeout * 1000)
        self._errors: list[str] = []
        self.page.on(
            "console",
            lambda message: (
                self._errors.append(message.text[:500])
                if message.type in ("error", "assert")
                else None
            ),
        )
        self.page.on("pageerror", lambda error: self._errors.append(str(error)[:500]))

    def load(self, path: Path, width: int = 1200, height: int = 900) -> float:
        """Open a file and wait for its load event; return the seconds it took."""
        self.page.set_viewport_size({"width": width, "height": height})
        started = time.perf_counter()
        self.page.goto(path.resolve().as_uri(), wait_until="load")
        return time.perf_counter() - started

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        return self.page.evaluate(expression)

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page, written to ``path``."""
        data: bytes = self.page.screenshot(path=path, full_page=True, type="png")
        return data

    def errors(self) -> list[str]:
        """Console errors (CSP violations among them) and uncaught exceptions so far."""
        return list(self._errors)

    def close(self) -> None:
        """Stop the browser and Playwright's driver."""
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
