"""The run page of a code workflow in a real browser (headless Chromium, Selenium), on a
private stack whose ``cv`` worker runs ``code_versions`` (v1, or v2 when a test deploys
it). A run of ``cv.flow`` (two task steps, a gather of three, a sleep and a signal wait,
the signal sent with the page's form): its timeline draws node ``main``'s activations
(even indexes) and steps (odd), the sleep and the signal wait among them with their
times; picking a step in the timeline opens the node's panel on that step (its output
and attempts), and the node lists its activations and steps. A run whose code parted
from its history when v2 was deployed under it is shown with the warning and its failed
activation attempts, and once v1 is back, succeeded without it. Screenshots are kept in
``test-artifacts/ui/``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from code_kit import (
    Workers,
    code_stack,
    document,
    served,
    signal,
    start_run,
    waiting_for_signal,
)
from selenium.webdriver.common.by import By
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, ui_fixture  # noqa: F401 (fixtures)

from tests.polling import scaled, wait_until

PAGE = """
const q = (sel) => document.querySelector(sel);
const all = (sel) => [...document.querySelectorAll(sel)];
const text = (sel) => q(sel)?.textContent ?? null;
return {
  status: q('#run-summary .badge')?.dataset.status ?? null,
  timeline: all('svg.timeline g.tl-row').map((g) => ({
    node: g.dataset.node, index: g.dataset.index === '' ? null : Number(g.dataset.index),
    label: g.querySelector('text.tl-label')?.textContent ?? '',
    bars: [...g.querySelectorAll('g.tl-bar')].map((b) => ({
      cls: b.getAttribute('class'), tip: b.querySelector('title')?.textContent ?? ''}))})),
  panel: q('#node-panel:not([hidden])')?.dataset.node ?? null,
  items: all('#node-panel table.items tbody tr').map((r) => ({
    index: Number(r.dataset.index), status: r.dataset.status,
    task: r.querySelector('td.item-task')?.textContent ?? null})),
  task: q('.task-panel') ? {
    key: q('.task-panel').dataset.node + '/' + q('.task-panel').dataset.index,
    output: text('.task-panel .task-output'),
    facts: text('.task-panel dl.facts'),
    status: q('.task-panel .task-status .badge')?.dataset.status ?? null,
    attempts: all('.task-panel .attempt').map((a) => a.dataset.outcome)} : null,
  warnings: all('#run-warnings p.warning').map((p) => p.textContent),
  waits: all('#waits form.signal-form').map((f) => f.dataset.signal + '/' + f.dataset.index),
  sent: text('#waits .form-status'),
};
"""
STEPS = {1: "cv.first", 3: "cv.second", 5: "cv.square", 7: "cv.square", 9: "cv.square",
         11: "headwater.sleep", 13: "headwater.signal"}
NAP_S = 0.8


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack (the ``ui`` fixture's) and its ``cv`` worker on v1."""
    with code_stack(tmp_path_factory.mktemp("ui-code")) as own:
        yield own


@pytest.fixture(scope="module")
def workers(stack: Stack) -> Workers:
    return Workers(stack)


def seen(ui: UI) -> dict[str, Any]:
    found: dict[str, Any] = ui.browser.execute_script(PAGE)
    return found


def wait(ui: UI, what: str, until: Any, timeout_s: float = 60) -> dict[str, Any]:
    return wait_until(lambda: seen(ui), scaled(timeout_s), what, until=until)


async def start(stack: Stack, x: int) -> str:
    """Run ``cv.flow`` once the worker on v1 announced it; the run's id."""
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.flow", "v1")
        return await start_run(client, "cv.flow", {"x": x, "nap": NAP_S})


def rows_by_index(view: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {r["index"]: r for r in view["timeline"] if r["node"] == "main"}


def seconds(tip: str) -> float:
    """The length a bar's tooltip gives (``…, 812 ms`` or ``…, 1.2 s``), in seconds."""
    found = re.search(r", ([\d.]+) (ms|s)$", tip)
    assert found, tip
    return float(found[1]) / (1000 if found[2] == "ms" else 1)


def drawn(view: dict[str, Any]) -> bool:
    """Every step of the run in the timeline, each ended."""
    rows = rows_by_index(view)
    return view["status"] == "succeeded" and set(STEPS) <= set(rows) and all(
        r["bars"] and not any(c in b["cls"] for b in r["bars"]
                              for c in ("o-running", "o-waiting", "o-sleeping"))
        for r in rows.values())


async def test_the_timeline_draws_a_code_runs_activations_and_steps(
        ui: UI, stack: Stack, workers: Workers) -> None:
    workers.deploy("v1")
    wid = await start(stack, 4)
    ui.open(f"/ui/runs/{wid}")
    waiting = wait(ui, "the signal wait drawn, waiting", lambda s: any(
        "k-wait o-waiting" in b["cls"] for r in s["timeline"] for b in r["bars"]))
    rows = rows_by_index(waiting)
    assert [b["cls"] for b in rows[13]["bars"]] == ["tl-bar k-wait o-waiting"], rows[13]
    assert [b["cls"] for b in rows[11]["bars"]] == ["tl-bar k-sleep o-succeeded"], rows[11]
    # The signal is sent with the page's form (a code workflow's signal names no index).
    formed = wait(ui, "the form of the signal waited for", lambda s: s["waits"] == ["go/"])
    assert formed["status"] == "running", formed
    ui.browser.find_element(By.CSS_SELECTOR, '#waits textarea[data-field="*"]').send_keys(
        '{"ok": true}')
    ui.shot("code-run-waiting")
    ui.click('#waits form.signal-form button[type="submit"]')
    sent = wait(ui, "the signal sent", lambda s: "sent" in (s["sent"] or "")
                or s["status"] == "succeeded")
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        doc = await document(client, wid, lambda d: d["status"] == "succeeded", "succeeded")
    assert doc["output"]["go"] == {"ok": True}, (doc["output"], sent)

    done = wait(ui, "the run succeeded, every step drawn and ended", drawn)
    rows = rows_by_index(done)
    steps = sorted(i for i in rows if i % 2)
    activations = sorted(i for i in rows if i % 2 == 0)
    assert steps == sorted(STEPS), steps
    assert activations == list(range(0, 2 * len(activations), 2)), activations
    assert len(activations) >= 6, activations  # one per result delivered, and the last
    assert all(r["label"] == f"main[{i}]" for i, r in rows.items()), rows
    for i in [*activations, 1, 3, 5, 7, 9]:
        assert [b["cls"] for b in rows[i]["bars"]] == ["tl-bar k-attempt o-succeeded"], rows[i]
    nap, wait_row = rows[11]["bars"], rows[13]["bars"]
    assert [b["cls"] for b in nap] == ["tl-bar k-sleep o-succeeded"], nap
    assert [b["cls"] for b in wait_row] == ["tl-bar k-wait o-succeeded"], wait_row
    # Their times: the sleep took its nap; the wait lasted until the signal, as the run's
    # document (the projector's rows) has them.
    tasks = {t["index"]: t for t in doc["tasks"]}
    assert NAP_S <= seconds(nap[0]["tip"]) < NAP_S + 1.5, nap
    assert tasks[11]["task"] == "headwater.sleep" and tasks[13]["task"] == "headwater.signal"
    assert seconds(wait_row[0]["tip"]) > 0, wait_row
    ui.shot("code-run-timeline")

    ui.click('svg.timeline g.tl-row[data-node="main"][data-index="3"]')
    picked = wait(ui, "the node's panel on step 3", lambda s: s["panel"] == "main"
                  and s["task"] and s["task"]["key"] == "main/3" and s["task"]["output"])
    assert json.loads(picked["task"]["output"]) == 50, picked["task"]
    assert picked["task"]["attempts"] == ["succeeded"], picked["task"]
    listed = wait(ui, "the node's activations and steps listed", lambda s: len(s["items"])
                  == len(rows))
    assert [r["index"] for r in listed["items"]] == sorted(rows), listed["items"]
    named = {r["index"]: r["task"] for r in listed["items"]}
    assert {i: named[i] for i in STEPS} == STEPS, named
    assert {named[i] for i in activations} == {"cv.flow"}, named
    ui.shot("code-run-panel")
    ui.click('#node-panel table.items tr[data-index="11"] button.item-open')
    slept = wait(ui, "the sleep's panel", lambda s: s["task"] and s["task"]["key"] == "main/11"
                 and s["task"]["status"])
    assert slept["task"]["status"] == "succeeded", slept["task"]
    assert "headwater.sleep" in slept["task"]["facts"], slept["task"]


async def test_the_page_warns_of_a_code_run_parted_from_its_history(
        ui: UI, stack: Stack, workers: Workers) -> None:
    workers.deploy("v1")
    wid = await start(stack, 7)
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await document(client, wid, waiting_for_signal, "waiting for go")
        workers.deploy("v2")
        await signal(client, wid, "go", {"ok": True})
        ui.open(f"/ui/runs/{wid}")
        warned = wait(ui, "the nondeterminism warning", lambda s: any(
            w.startswith("nondeterministic") for w in s["warnings"]))
        assert warned["status"] == "running", warned
        warning = next(w for w in warned["warnings"] if w.startswith("nondeterministic"))
        assert "step 1" in warning and "task cv.second_v2" in warning, warning
        failed = wait(ui, "the failed activation attempt drawn", lambda s: any(
            "o-failed" in b["cls"] for r in s["timeline"] for b in r["bars"]))
        failing = [r for r in failed["timeline"]
                   if any("o-failed" in b["cls"] for b in r["bars"])]
        assert len(failing) == 1 and failing[0]["index"] % 2 == 0, failing
        ui.shot("code-run-nondeterministic")

        workers.deploy("v1")
        await document(client, wid, lambda d: d["status"] == "succeeded", "succeeded",
                       timeout_s=150)
    # The status is the document's, the timeline the history's (its own stream): the
    # page may show the one a moment before the other.
    index = failing[0]["index"]
    fixed = wait(ui, "succeeded, the warning gone, the retried activation drawn", lambda s:
                 s["status"] == "succeeded" and not s["warnings"]
                 and rows_by_index(s)[index]["bars"][-1]["cls"].endswith("o-succeeded"))
    again = rows_by_index(fixed)[index]
    assert [b["cls"].split()[-1] for b in again["bars"]][-1] == "o-succeeded", again
    assert "o-failed" in again["bars"][0]["cls"], again
    ui.shot("code-run-fixed")
