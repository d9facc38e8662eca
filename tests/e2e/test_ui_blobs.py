"""The run page in a real browser (headless Chromium) shows a value held by reference
as a link to its blob, with its size, instead of the reference; following the link
gives the value's JSON. Against the session's stack (auth off)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, submit, ui_fixture  # noqa: F401 (fixtures)

from headwater import blobs
from tests.polling import wait_until

LINKS = """
return [...document.querySelectorAll('a.blob-link')].map((a) => ({
  href: a.getAttribute('href'), text: a.textContent, digest: a.dataset.digest,
  bytes: Number(a.dataset.bytes),
  where: a.closest('#run-output-blob') ? 'output'
       : a.closest('.blob-links') ? 'inside' : a.closest('.blob') ? 'whole' : 'elsewhere'}));
"""
FETCHED = """
const done = arguments[arguments.length - 1];
fetch(arguments[0]).then((r) => r.text()).then(done, (e) => done('failed: ' + e));
"""


def test_a_reference_is_a_link_to_its_blob_with_its_size(stack: Stack, ui: UI) -> None:
    doc = "u" * (3 * 1024 * 1024)
    spec = {"name": "blob-page", "nodes": [{"id": "t", "task": "e2e.flaky", "input": {
        "succeed_on": 1, "value": "${input.doc}"}}], "output": "${nodes.t.output.value}"}
    wid = submit(stack, spec, "uiblob", {"small": 1, "doc": doc})
    wait_until(lambda: httpx.get(f"{stack.gateway}/v1/workflows/{wid}", timeout=30).json(),
               120, "the run ends", until=lambda d: d["status"] == "succeeded")
    data = orjson.dumps(doc)
    digest = blobs.digest_of(data)
    href = f"/v1/workflows/{wid}/blobs/{digest}"
    ui.open(f"/ui/runs/{wid}")

    def links() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = ui.browser.execute_script(LINKS)
        return found

    seen = wait_until(links, 60, "the blob links", until=lambda ls: len(ls) == 2)
    ui.shot("run-page-blob-links")
    text = "JSON by reference, 3.0 MiB"
    assert sorted(seen, key=lambda link: link["where"]) == [
        {"href": href, "text": text, "digest": digest, "bytes": len(data), "where": where}
        for where in ("inside", "output")]  # the input's field, and the whole output
    assert "$blob" not in (ui.seen()["output"] or "")  # no raw reference shown
    ui.browser.set_script_timeout(60)
    fetched = ui.browser.execute_async_script(FETCHED, href)
    assert fetched == data.decode()
