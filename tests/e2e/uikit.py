"""What the browser tests of the web UI share: the run page's view as a script reads it
(``SEEN``), the page driver (``UI``), the fixtures that make one (``shots``, ``browser``,
``ui``: a module imports their functions, ``*_fixture``) and a submission over HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browserkit import ARTIFACTS, headless_chromium, screenshots
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from stackkit import Stack

from tests.polling import wait_until

REPO = Path(__file__).resolve().parents[2]
SEEN = """
const q = (sel) => document.querySelector(sel);
const text = (sel) => q(sel)?.textContent ?? null;
return {
  mark: window.__uiMark ?? null,
  path: location.pathname,
  status: q('#run-summary .badge')?.dataset.status ?? null,
  graph: Object.fromEntries([...document.querySelectorAll('svg.dag g.node')]
    .map((g) => [g.dataset.node, g.dataset.status ?? 'pending'])),
  edges: [...document.querySelectorAll('svg.dag path.edge')]
    .map((p) => `${p.dataset.from}>${p.dataset.to}`).sort(),
  columns: Object.fromEntries([...document.querySelectorAll('svg.dag g.node')]
    .map((g) => [g.dataset.node, Number(g.querySelector('rect').getAttribute('x'))])),
  nodeErrors: Object.fromEntries([...document.querySelectorAll('#nodes tr[data-node]')]
    .map((r) => [r.dataset.node, r.querySelector('pre.error')?.textContent ?? ''])),
  attempts: [...document.querySelectorAll('#attempts tr[data-attempt]')].map((r) => ({
    key: r.dataset.attempt, outcome: r.dataset.outcome,
    error: r.querySelector('pre.error')?.textContent ?? ''})),
  streams: Object.fromEntries([...document.querySelectorAll('pre.stream')]
    .map((p) => [p.dataset.task, p.textContent])),
  forms: [...document.querySelectorAll('form.signal-form')].map((f) => f.dataset.signal),
  fields: [...document.querySelectorAll('form.signal-form [data-field]')]
    .map((e) => e.dataset.field).sort(),
  cancel: !!q('#cancel-form'),
  error: text('#run-error'), output: text('#run-output'),
  signals: [...document.querySelectorAll('#signals tbody tr')].map((r) => r.textContent),
  problem: text('#run-problem'),
};
"""


@pytest.fixture(scope="module", name="shots")
def shots_fixture(request: pytest.FixtureRequest) -> Iterator[list[Path]]:
    """Where screenshots go; their paths are written out when the module ends."""
    yield from screenshots(request)


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[webdriver.Chrome]:
    """Headless Chromium under its Debian driver (nothing is downloaded)."""
    with headless_chromium(1400, 1100) as chrome:
        yield chrome


@pytest.fixture(name="ui")
def ui_fixture(browser: webdriver.Chrome, stack: Stack, shots: list[Path],
       request: pytest.FixtureRequest) -> Iterator[UI]:
    """The browser on the stack's UI; after the test, no console error nor CSP report."""
    browser.get_log("browser")  # drop what earlier tests left
    page = UI(browser, stack.gateway, shots, request.node.name)
    yield page
    faults = [e["message"] for e in browser.get_log("browser")
              if e.get("level") == "SEVERE" or "Content Security Policy" in e["message"]]
    assert faults == [], faults


class UI:
    """The browser, the gateway it shows, and the test's screenshots."""

    def __init__(self, browser: webdriver.Chrome, gateway: str, shots: list[Path],
                 test: str) -> None:
        self.browser, self.gateway, self.shots, self.test = browser, gateway, shots, test

    def open(self, path: str) -> None:
        """Load ``path`` of the UI, and mark the page (the mark survives only if nothing
        reloads it)."""
        self.browser.get(self.gateway + path)
        self.browser.execute_script("window.__uiMark = 'loaded once';")

    def seen(self) -> dict[str, Any]:
        """What the run page shows (``SEEN``)."""
        found: dict[str, Any] = self.browser.execute_script(SEEN)
        return found

    def wait(self, what: str, until: Any, timeout_s: float = 60) -> dict[str, Any]:
        """Wait until ``until(self.seen())``; the last view is in the failure message."""
        return wait_until(self.seen, timeout_s, what, until=until)

    def shot(self, name: str) -> Path:
        """Save a screenshot of the window as ``test-artifacts/ui/<name>.png``."""
        path = ARTIFACTS / f"{name}.png"
        self.browser.save_screenshot(str(path))
        self.shots.append(path)
        return path

    def click(self, css: str) -> None:
        """Click the element ``css`` names (found again if the page redrew it meanwhile)."""
        for tries in range(3):
            try:
                self.browser.find_element(By.CSS_SELECTOR, css).click()
                return
            except StaleElementReferenceException:
                if tries == 2:
                    raise


def submit(stack: Stack, spec: dict[str, Any], prefix: str, input: Any = None) -> str:
    """Submit ``spec`` over HTTP with ``input`` (``{}`` when None); its id."""
    wid = f"{prefix}-{uuid.uuid4().hex[:10]}"
    answer = httpx.post(f"{stack.gateway}/v1/workflows", timeout=30,
                        json={"id": wid, "workflow": spec, "input": {} if input is None else input})
    assert answer.status_code == 202, answer.text
    return wid


