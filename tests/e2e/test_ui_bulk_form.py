"""Starting a bulk operation from the web UI, in a real browser (headless Chromium, as
``test_ui_labels``) against the session's stack. The runs list filtered by a label opens
the operations page's form with that filter; each action shows its own fields (a
signal without a name is refused before asking); a label that is no selector is refused next
to the labels field (the one console error the test allows, a 422); a cancel of three
sleeping runs by their label is previewed (3 matched, 3 to cancel, by status, their ids
linked to their pages), then started with the same filter: the operation shows done on
the page and the three runs are cancelled. No page breaks its Content-Security-Policy or
raises (the ``ui`` fixture)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, ui_fixture  # noqa: F401 (fixtures)

from tests.polling import wait_until

SLEEPING: dict[str, Any] = {"name": "ui-bulk", "nodes": [
    {"id": "nap", "kind": "sleep", "duration": 600}]}
PREVIEW = """
const p = document.querySelector('#op-preview');
return p && {matched: p.dataset.matched, toActOn: p.dataset.toActOn,
             text: p.textContent,
             sample: [...p.querySelectorAll('.sample a')].map((a) => a.getAttribute('href')),
             start: !document.querySelector('#op-start').disabled};
"""
SHOWN_ROWS = """
return [...document.querySelectorAll('#operation-form [data-row]')]
  .filter((r) => r.offsetParent).map((r) => r.dataset.row);
"""
OPERATIONS = """
return Object.fromEntries([...document.querySelectorAll('#operations tr[data-operation]')]
  .map((r) => [r.dataset.operation, [r.querySelector('.badge').textContent,
                                     r.querySelector('.counts').textContent]]));
"""


def _type(ui: UI, css: str, text: str) -> None:
    field = ui.browser.find_element(By.CSS_SELECTOR, css)
    field.clear()
    field.send_keys(text)


def test_a_bulk_cancel_is_previewed_then_started_from_the_form(ui: UI, stack: Stack) -> None:
    batch = f"b{uuid.uuid4().hex[:8]}"
    ids = [f"{batch}-{n}" for n in range(3)]
    for wid in ids:
        answer = httpx.post(f"{stack.gateway}/v1/workflows", timeout=30, json={
            "id": wid, "workflow": SLEEPING, "labels": {"batch": batch}})
        assert answer.status_code == 202, answer.text
    wait_until(lambda: httpx.get(f"{stack.gateway}/v1/workflows", timeout=30, params={
        "label": f"batch:{batch}", "status": "running"}).json()["items"], 30,
        "the three runs running", until=lambda items: len(items) == 3)

    ui.open(f"/ui/runs?label=batch%3A{batch}")
    wait_until(lambda: ui.browser.find_elements(By.ID, "bulk-link"), 30, "the runs list")
    ui.click("#bulk-link")
    (field,) = wait_until(lambda: ui.browser.find_elements(By.ID, "op-label"), 30, "the form")
    assert field.get_attribute("value") == f"batch={batch}"
    assert ui.browser.execute_script(SHOWN_ROWS)[-1] == "reason"  # a cancel's own field
    Select(ui.browser.find_element(By.ID, "op-action")).select_by_value("signal")
    assert ui.browser.execute_script(SHOWN_ROWS)[-2:] == ["signal-name", "signal-fields"]
    ui.click("#op-preview-button")  # no signal name: refused before asking
    assert ui.browser.find_element(By.CSS_SELECTOR, '[data-error-for="signal-name"]').text == (
        "signal-name: a bulk signal needs the signal's name")
    Select(ui.browser.find_element(By.ID, "op-action")).select_by_value("cancel")
    _type(ui, "#op-label", "bad!key")
    ui.click("#op-preview-button")
    refusal = wait_until(lambda: ui.browser.find_element(
        By.CSS_SELECTOR, '[data-error-for="label"]').text, 30, "the label refused",
        until=bool)
    assert refusal.startswith("label: "), refusal
    assert ui.browser.find_element(By.ID, "op-start").get_attribute("disabled") is not None
    # Chromium logs the refused request as an error: that one is expected (and read off
    # the log, so the ui fixture's check sees what follows alone).
    logged = [e["message"] for e in ui.browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert all("/v1/operations" in m and "status of 422" in m for m in logged), logged

    _type(ui, "#op-label", f"batch={batch}")
    _type(ui, "#op-reason", "batch withdrawn")
    ui.click("#op-preview-button")
    preview = wait_until(lambda: ui.browser.execute_script(PREVIEW), 30, "the preview",
                         until=bool)
    assert (preview["matched"], preview["toActOn"], preview["start"]) == ("3", "3", True)
    assert "3 matched, 3 to cancel (by status: 3 running)" in preview["text"], preview
    assert sorted(preview["sample"]) == [f"/ui/runs/{wid}" for wid in ids]
    assert ui.browser.find_element(By.CSS_SELECTOR, '[data-error-for="label"]').text == ""
    ui.shot("bulk-preview")

    ui.click("#op-start")
    started = wait_until(lambda: ui.browser.find_element(By.ID, "op-result").text, 30,
                         "the operation started", until=lambda t: t.startswith("started "))
    operation = started.split()[1].rstrip(":")
    shown = wait_until(lambda: ui.browser.execute_script(OPERATIONS), 30,
                       "the operation done on screen",
                       until=lambda rows: rows.get(operation, ["", ""])[0] == "done")
    assert shown[operation] == ["done", "3 done, 0 skipped, 0 failed"]
    doc = httpx.get(f"{stack.gateway}/v1/operations/{operation}", timeout=30).json()
    assert (doc["action"], doc["filter"], doc["args"]) == (
        "cancel", {"label": [f"batch:{batch}"]}, {"reason": "batch withdrawn"})
    statuses = wait_until(lambda: [httpx.get(f"{stack.gateway}/v1/workflows/{wid}",
                                             timeout=30).json()["status"] for wid in ids],
                          30, "the runs cancelled",
                          until=lambda found: found == ["cancelled"] * 3)
    assert statuses == ["cancelled"] * 3
    ui.shot("bulk-started")
