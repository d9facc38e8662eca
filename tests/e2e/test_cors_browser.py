"""A page on another origin follows a run in a real browser (headless Chromium driven by
Selenium): its ``EventSource`` on ``/v1/workflows/{id}/events`` gets every event up to the
terminal one from a gateway with ``HEADWATER_CORS_ORIGINS`` naming the page's origin, and
none from the stack's own gateway, where CORS is off (the browser refuses the response).

Chromium and its driver come from Debian (``infra/browser.sh``, which ``make test`` runs);
without them the test fails on CI and is skipped elsewhere. A screenshot of each page is
kept under the test's temporary directory (``pytest --basetemp`` to choose where).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from browserkit import headless_chromium
from selenium import webdriver
from stackkit import Stack

from headwater.codec import RECORD_TYPES
from ops.sandbox import free_port
from tests.polling import holds_for, wait_until

SPEC = {"name": "browser", "nodes": [{"id": "a", "task": "e2e.sleep",
                                      "input": {"seconds": 0.05}}]}
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>run events</title></head>
<body><h1>events</h1><ol id="log"></ol><p id="errors">errors: 0</p>
<script>
const params = new URLSearchParams(location.search);
window.received = []; window.errors = 0; window.done = false;
const source = new EventSource(params.get("gateway") + "/v1/workflows/"
                               + params.get("id") + "/events");
for (const type of TYPES) {
  source.addEventListener(type, (e) => {
    window.received.push({type: e.type, id: e.lastEventId});
    const item = document.createElement("li");
    item.textContent = e.lastEventId + " " + e.type;
    document.getElementById("log").appendChild(item);
    if (TERMINAL.includes(e.type)) { window.done = true; source.close(); }
  });
}
source.onerror = () => {
  window.errors += 1;
  document.getElementById("errors").textContent = "errors: " + window.errors;
};
</script></body></html>
"""
TERMINAL = ["WorkflowSucceeded", "WorkflowFailed", "WorkflowCancelled"]


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    """Headless Chromium under its Debian driver (nothing is downloaded)."""
    with headless_chromium(900, 700) as chrome:
        chrome.set_script_timeout(10)
        yield chrome


@pytest.fixture(scope="module")
def page_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A static HTTP server on another port, serving the page: another origin."""
    root = tmp_path_factory.mktemp("page")
    (root / "index.html").write_text(PAGE.replace("TYPES", orjson.dumps(
        sorted(RECORD_TYPES)).decode(), 1).replace("TERMINAL", orjson.dumps(TERMINAL).decode(),
                                                  1))
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def cors_gateway(stack: Stack, page_origin: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second gateway of the session's stack, allowing the page's origin."""
    port = free_port()
    log = tmp_path_factory.mktemp("cors-gateway") / "gateway.log"
    env = {**os.environ, **stack.env, "HEADWATER_GATEWAY_PORT": str(port),
           "HEADWATER_CORS_ORIGINS": page_origin}
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.gateway"], env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _ready(url), 60, f"the CORS gateway ready ({log})",
                   ignore=(httpx.HTTPError,))
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ready(url: str) -> bool:
    return httpx.get(f"{url}/ready", timeout=2).status_code == 200


def _finished_run(gateway: str) -> str:
    """Submit a short run and wait for its end (the stream then replays it whole)."""
    wid = f"cors-{uuid.uuid4().hex[:10]}"
    answer = httpx.post(f"{gateway}/v1/workflows", json={"id": wid, "workflow": SPEC,
                                                         "input": {}}, timeout=10)
    assert answer.status_code == 202, answer.text
    wait_until(lambda: httpx.get(f"{gateway}/v1/workflows/{wid}", timeout=5).json().get(
        "status"), 60, f"{wid} succeeded", until=lambda s: s == "succeeded")
    return wid


def _open(browser: webdriver.Chrome, page: str, gateway: str, wid: str) -> None:
    browser.get(f"{page}/index.html?gateway={gateway}&id={wid}")


def _seen(browser: webdriver.Chrome) -> dict[str, Any]:
    state: dict[str, Any] = browser.execute_script(
        "return {received: window.received, errors: window.errors, done: window.done};")
    return state


def test_a_page_on_another_origin_follows_a_run_only_where_cors_allows_it(
        stack: Stack, browser: webdriver.Chrome, page_origin: str, cors_gateway: str,
        tmp_path: Path) -> None:
    wid = _finished_run(stack.gateway)
    _open(browser, page_origin, cors_gateway, wid)
    seen = wait_until(lambda: _seen(browser), 30, "the terminal event in the page",
                      until=lambda s: s["done"])
    browser.save_screenshot(str(tmp_path / "cors-on.png"))
    types = [e["type"] for e in seen["received"]]
    assert types[0] == "WorkflowAccepted" and types[-1] == "WorkflowSucceeded", types
    assert [int(e["id"]) for e in seen["received"]] == list(range(1, len(types) + 1))

    _open(browser, page_origin, stack.gateway, wid)  # the stack's gateway: CORS off
    wait_until(lambda: _seen(browser), 30, "the browser's refusal",
               until=lambda s: s["errors"] >= 1)
    refused = holds_for(lambda: _seen(browser), 2, "no event let through",
                        holds=lambda s: s["received"] == [])
    browser.save_screenshot(str(tmp_path / "cors-off.png"))
    assert not refused["done"]
    console = " ".join(str(e.get("message", "")) for e in browser.get_log("browser"))
    assert "CORS policy" in console, console[:2000]
