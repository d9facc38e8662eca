"""Headless Chromium for the browser tests: Debian's ``chromium`` under its
``chromium-driver`` (``infra/browser.sh`` installs both; Selenium downloads nothing)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def browser_paths() -> tuple[str, str]:
    """Chromium's and chromedriver's paths; fails on CI (skips elsewhere) without them."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        message = "needs chromium and chromedriver: run `bash infra/browser.sh`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return chromium, driver


@contextmanager
def headless_chromium(width: int, height: int) -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a ``width`` x ``height`` window (pixels) whose console
    log is kept (``goog:loggingPrefs``), quit on exit."""
    chromium, driver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield chrome
    finally:
        chrome.quit()


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
"""Where the UI tests' screenshots go (gitignored)."""


def screenshots(request: pytest.FixtureRequest) -> Iterator[list[Path]]:
    """The body of a module's ``shots`` fixture: the list its tests append screenshot
    paths to, written out when the module ends."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    taken: list[Path] = []
    yield taken
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n".join(["", "UI screenshots:", *(f"  {p}" for p in taken)]))
