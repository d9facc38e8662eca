"""Attacks on the web UI in a real browser: markup in every string a client controls
(the spec's name, a task's input and output, streamed chunks, a signal's payload, a
malformed address) must show as text, run no script and inject no element."""

from __future__ import annotations

from typing import Any

import httpx
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, submit, ui_fixture  # noqa: F401 (fixtures)

from tests.polling import wait_until

PAYLOAD = '<img src=x id=xss1 onerror="window.__xss=1">"><svg id=xss2 onload="window.__xss=2">'
INJECTED = """
return {
  xss: window.__xss ?? null,
  elements: document.querySelectorAll('#xss1, #xss2, img[src="x"]').length,
  text: document.body.textContent,
  status: document.querySelector('#run-summary .badge')?.dataset.status ?? null,
};
"""


def _seen(ui: UI) -> dict[str, Any]:
    found: dict[str, Any] = ui.browser.execute_script(INJECTED)
    return found


def test_markup_in_a_run_shows_as_text(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": f"x{PAYLOAD}", "nodes": [
        {"id": "echo", "task": "e2e.flaky", "input": {"succeed_on": 1, "value": PAYLOAD}},
        {"id": "talk", "task": "e2e.stream", "input": {"words": [PAYLOAD], "pause": 0}},
        {"id": "hold", "kind": "wait", "signal": "go", "fields": {"note": "string"},
         "needs": ["echo", "talk"]}]},
        "ui-xss")
    ui.open(f"/ui/runs/{wid}")
    wait_until(lambda: _seen(ui), 60, "the run's output on screen",
               until=lambda s: PAYLOAD in s["text"])
    sent = httpx.post(f"{stack.gateway}/v1/workflows/{wid}/signals/go",
                      json={"fields": {"note": PAYLOAD}}, timeout=10)
    assert sent.status_code < 300, sent.text
    seen = wait_until(lambda: _seen(ui), 60, "the run ended on screen",
                      until=lambda s: s["status"] in ("succeeded", "failed"))
    ui.open("/ui/runs")
    listed = _seen(ui)
    ui.shot("xss-run")
    for view in (seen, listed):
        assert view["xss"] is None and view["elements"] == 0, view


def test_a_malformed_address_shows_a_page(ui: UI, stack: Stack) -> None:
    # /ui/runs/%E0%A4%A: decodeURIComponent throws in main.js's router; the page must
    # say the address names no page, not stay empty with the error in the console (the
    # ui fixture fails on a console error). index.html's own "Loading…" is there before
    # the router has run.
    ui.open("/ui/runs/%E0%A4%A")
    text = wait_until(lambda: ui.browser.execute_script(
        "return document.getElementById('main').textContent"), 10,
        "the router's page", until=lambda t: bool(t) and t != "Loading…")
    assert "Not found" in text, text
