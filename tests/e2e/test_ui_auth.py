"""The web UI of a gateway whose auth is on (``HEADWATER_AUTH=on``), in a real browser
(headless Chromium driven by Selenium): what a person sees. The page opens on a
sign-in form; a token the gateway does not take is refused on the form; a tenant's
token shows that tenant (and role) in the header, lists the tenant's run and not
another tenant's, and follows the run from running to succeeded live (its event stream
read with ``fetch``, since ``EventSource`` sends no ``Authorization``, and opened again
with ``Last-Event-ID`` across a restart of the gateway); signing out brings the form
back. No page breaks its Content-Security-Policy, and the console has
no error beyond the 401 answers the sign-in expects.

The gateway is one of this module's own, with API keys in a keys file
(``services.common.auth.new_key``) and an every-tenant token of its own
(``HEADWATER_TOKEN``), on the session stack's Kafka and PostgreSQL, whose coordinator
and workers (auth off) take what it submits. Screenshots go to ``test-artifacts/ui/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browserkit import ARTIFACTS, headless_chromium, screenshots
from selenium import webdriver
from selenium.webdriver.common.by import By
from stackkit import Stack

from headwater.client import Client
from ops.sandbox import free_port
from services.common.auth.tokens import new_key
from tests.polling import wait_until

REPO = Path(__file__).resolve().parents[2]
SEEN = """
const q = (sel) => document.querySelector(sel);
return {
  mark: window.__uiMark ?? null,
  path: location.pathname,
  signIn: !!q('#sign-in'),
  signInStatus: q('#sign-in-status')?.textContent ?? '',
  navHidden: !!q('#nav')?.hidden,
  tenant: q('#who-tenant')?.dataset.tenant ?? null,
  role: q('#who-role')?.dataset.role ?? null,
  signOut: !!q('#sign-out'),
  stored: sessionStorage.getItem('headwater.token'),
  runs: Object.fromEntries([...document.querySelectorAll('#runs tr[data-run]')]
    .map((r) => [r.dataset.run, r.querySelector('.badge').dataset.status])),
  status: q('#run-summary .badge')?.dataset.status ?? null,
  graph: Object.fromEntries([...document.querySelectorAll('svg.dag g.node')]
    .map((g) => [g.dataset.node, g.dataset.status ?? 'pending'])),
  streams: Object.fromEntries([...document.querySelectorAll('pre.stream')]
    .map((p) => [p.dataset.task, p.textContent])),
  problem: q('#run-problem')?.textContent ?? '',
  eventSources: window.__eventSources ?? null,
  streamFetches: window.__streamFetches ?? null,
};
"""
WATCH = """
window.__eventSources = 0;
window.__streamFetches = [];
const OwnEventSource = window.EventSource;
window.EventSource = class extends OwnEventSource {
  constructor(...args) { super(...args); window.__eventSources += 1; }
};
const ownFetch = window.fetch.bind(window);
window.fetch = (url, init) => {
  if (String(url).endsWith('/events')) {
    const headers = init?.headers || {};
    window.__streamFetches.push({auth: (headers.Authorization || '').split(' ')[0],
                                 resume: headers['Last-Event-ID'] || null});
  }
  return ownFetch(url, init);
};
"""
"""Counts the page's EventSources and its fetches of event streams (added by the
browser before the page's own scripts run)."""


class AuthGateway:
    """The module's gateway process (auth on) and its tokens.

    Attributes:
        url: its base URL.
        acme: a submit token of tenant ``acme``.
        beta: a submit token of tenant ``beta``.
    """

    def __init__(self, stack: Stack, home: Path) -> None:
        service, service_line = new_key("*", "submit")
        self.acme, acme_line = new_key("acme", "submit")
        self.beta, beta_line = new_key("beta", "submit")
        keys = home / "keys"
        keys.write_text("\n".join([service_line, acme_line, beta_line, ""]))
        keys.chmod(0o600)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.env = {**os.environ, **stack.env, "HEADWATER_GATEWAY_PORT": str(port),
                    "HEADWATER_AUTH": "on", "HEADWATER_AUTH_KEYS_FILE": str(keys),
                    "HEADWATER_TOKEN": service}
        self.log = home / "gateway.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it, and wait until it is ready."""
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "services.gateway"],
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        wait_until(lambda: httpx.get(f"{self.url}/ready", timeout=2).status_code, 90,
                   f"the auth gateway ready ({self.log})", until=lambda s: s == 200,
                   ignore=(httpx.HTTPError,))

    def stop(self) -> None:
        """Stop it (SIGTERM: it closes its streams; SIGKILL after 15 s)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def gateway(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthGateway]:
    """A gateway of the session stack's Kafka and PostgreSQL with auth on."""
    own = AuthGateway(stack, tmp_path_factory.mktemp("auth-gateway"))
    try:
        own.start()
        yield own
    finally:
        own.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    """Headless Chromium under its Debian driver (nothing is downloaded)."""
    with headless_chromium(1400, 1000) as chrome:
        chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        yield chrome


@pytest.fixture(scope="module")
def shots(request: pytest.FixtureRequest) -> Iterator[list[Path]]:
    """Where screenshots go; their paths are written out when the module ends."""
    yield from screenshots(request)


def unexpected_console(browser: webdriver.Chrome, foreign: str, followed: str) -> list[str]:
    """The console's errors and CSP reports, less what the test causes on purpose:
    401 answers (signing in), the 404s of the ``foreign`` run, and, while the gateway
    restarts, the refused connections and the 503s its ``followed`` run's event stream
    and document get from a gateway that listens but is not ready yet (Chromium logs
    each as an error; the page opens the stream again, which the test checks, and reads
    the document again)."""
    expected = ("the server responded with a status of 401", "net::ERR_CONNECTION_REFUSED",
                "Failed to fetch")
    return [m for m in (e["message"] for e in browser.get_log("browser")
                        if e.get("level") == "SEVERE"
                        or "Content Security Policy" in e["message"])
            if "Content Security Policy" in m or not (
                any(x in m for x in expected) or (foreign in m and "status of 404" in m)
                or (f"/v1/workflows/{followed}" in m and "status of 503" in m))]


def run_of(gateway: AuthGateway, token: str, name: str, gate: Path | None) -> str:
    """Start a run of ``name`` as ``token``'s tenant: three words streamed, the second
    waiting for the file ``gate`` (None: a short sleep instead); its id."""
    node = {"id": "words", "task": "e2e.stream", "input": {
        "words": ["alpha ", "beta ", "gamma"], "pause": 0.05, "gate": str(gate)}} if gate \
        else {"id": "nap", "task": "e2e.sleep", "input": {"seconds": 0.05}}
    spec = {"name": name, "nodes": [node]}
    with Client(gateway.url, token) as hw:
        return hw.submit(spec, input={}, id=f"ui-auth-{uuid.uuid4().hex[:10]}").id


def test_a_tenant_signs_in_follows_its_run_live_and_signs_out(
        gateway: AuthGateway, browser: webdriver.Chrome, shots: list[Path],
        tmp_path: Path) -> None:
    browser.get_log("browser")  # drop what earlier tests left

    def shot(name: str) -> None:
        path = ARTIFACTS / f"{name}.png"
        browser.save_screenshot(str(path))
        shots.append(path)

    def seen(what: str, until: Any, timeout_s: float = 60) -> dict[str, Any]:
        return wait_until(lambda: browser.execute_script(SEEN), timeout_s, what, until=until)

    def sign_in(token: str) -> None:
        field = browser.find_element(By.ID, "token")
        field.clear()
        field.send_keys(token)
        browser.find_element(By.CSS_SELECTOR, '#sign-in button[type="submit"]').click()

    name = f"ui-auth-{uuid.uuid4().hex[:6]}"
    gate = tmp_path / "gate"
    ours = run_of(gateway, gateway.acme, name, gate)
    theirs = run_of(gateway, gateway.beta, name, None)
    assert httpx.get(f"{gateway.url}/v1/workflows/{ours}", timeout=10).status_code == 401

    browser.get(f"{gateway.url}/ui/runs?name={name}")
    browser.execute_script("window.__uiMark = 'loaded once';")
    form = seen("the sign-in form", lambda s: s["signIn"])
    assert form["navHidden"] and form["tenant"] is None and form["runs"] == {}, form
    shot("auth-sign-in")

    sign_in("hwk_000000000000_" + "x" * 43)
    refused = seen("the wrong token refused", lambda s: "401" in s["signInStatus"])
    assert "unknown or revoked API key" in refused["signInStatus"], refused
    assert refused["signIn"] and refused["stored"] is None, refused
    shot("auth-wrong-token")

    sign_in(gateway.acme)
    listed = seen("acme's run listed as running", lambda s: s["runs"].get(ours) == "running")
    assert (listed["tenant"], listed["role"]) == ("acme", "submit"), listed
    assert listed["signOut"] and not listed["navHidden"] and listed["stored"], listed
    assert theirs not in listed["runs"], listed  # beta's run, of the same name
    shot("auth-list")

    browser.find_element(By.CSS_SELECTOR, f'#runs tr[data-run="{ours}"] a').click()
    running = seen("the run running, its first chunk streamed", lambda s: (
        s["status"] == "running" and "alpha" in s["streams"].get("words", "")))
    assert running["eventSources"] == 0, running  # read with fetch, the token sent:
    assert running["streamFetches"][0] == {"auth": "Bearer", "resume": None}, running
    shot("auth-run-running")

    gateway.stop()  # the stream drops; the page opens it again, resuming after its last
    gateway.start()
    resumed = seen("the stream opened again after the last event", lambda s: any(
        f["resume"] for f in s["streamFetches"]))
    assert resumed["eventSources"] == 0, resumed
    assert all(f["auth"] == "Bearer" for f in resumed["streamFetches"]), resumed
    gate.touch()
    done = seen("the run succeeded on screen", lambda s: s["status"] == "succeeded"
                and s["graph"] == {"words": "succeeded"})
    assert done["streams"]["words"] == "alpha beta gamma", done
    assert done["mark"] == "loaded once" and done["path"] == f"/ui/runs/{ours}", done
    assert done["problem"] == "", done
    shot("auth-run-succeeded")

    browser.get(f"{gateway.url}/ui/runs/{theirs}")  # another tenant's run: unknown here
    other = seen("beta's run not shown", lambda s: "404" in s["problem"])
    assert other["tenant"] == "acme" and other["status"] is None, other

    browser.find_element(By.ID, "sign-out").click()
    out = seen("the sign-in form again", lambda s: s["signIn"])
    assert out["stored"] is None and out["tenant"] is None and out["navHidden"], out
    shot("auth-signed-out")
    assert unexpected_console(browser, theirs, ours) == []


PARSE = """
const done = arguments[arguments.length - 1];
import('/ui/assets/js/eventstream.js').then(({EventStreamParser}) => {
  const got = [];
  const parser = new EventStreamParser((e) => got.push(e));
  for (const chunk of arguments[0]) parser.push(chunk);
  parser.end();
  done({got, lastEventId: parser.lastEventId, retryMs: parser.retryMs});
}, (error) => done({error: String(error)}));
"""
STREAM = ("\ufeff: ping\n\nid: 1\nevent: A\ndata: {\"x\":\ndata:1}\n\nid: 2\r\nevent: B\r\n"
          "data: two\r\r\nid\ndata: no id\n\nretry: 1500\nretry: soon\n\nid: 5\n\n"
          "data: a\rdata:  b\r\rdata: cut off by the end")


def test_the_pages_stream_reader_reads_as_the_whatwg_standard_says(
        gateway: AuthGateway, browser: webdriver.Chrome) -> None:
    """The parser of ``eventstream.js`` in the browser, fed a character at a time (a
    CR at a chunk's end may be half a CRLF): comments skipped, data lines joined by LF,
    one space after the colon dropped, CR, LF and CRLF line ends, an empty ``id``
    clearing the last event id, ``retry`` of digits only, an id-only event dispatching
    nothing, and the event cut off by the end of the stream dropped."""
    browser.get(f"{gateway.url}/ui/")  # its origin: the module may be imported
    browser.set_script_timeout(10)
    # The BOM is TextDecoderStream's to drop: the parser gets text after it.
    parsed = browser.execute_async_script(PARSE, list(STREAM.removeprefix("\ufeff")))
    assert parsed["got"] == [
        {"type": "A", "data": '{"x":\n1}', "lastEventId": "1"},
        {"type": "B", "data": "two", "lastEventId": "2"},
        {"type": "message", "data": "no id", "lastEventId": ""},
        {"type": "message", "data": "a\n b", "lastEventId": "5"}], parsed
    assert (parsed["lastEventId"], parsed["retryMs"]) == ("5", 1500), parsed
