"""The web UI in a real browser (headless Chromium driven by Selenium) against the
session's stack: what a person sees. A run goes from running to succeeded on screen
without a reload (in the list and on its page, with its graph, attempts and streamed
output); a failed node shows its error and every attempt; the signal form moves a
waiting run on; the cancel button ends a run; the queues page shows the cpu queue and
its worker; a definition's page starts a run; a schedule is listed and paused. No page
breaks its Content-Security-Policy or raises (the browser's console is checked).

Chromium and its driver come from Debian (``infra/browser.sh``); without them the tests
fail on CI and are skipped elsewhere. Screenshots are kept in ``test-artifacts/ui/``
(their paths are printed at the end of the module, also without ``-s``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, submit, ui_fixture  # noqa: F401 (fixtures)

from tests.polling import wait_until


def list_statuses(ui: UI) -> dict[str, str]:
    rows: dict[str, str] = ui.browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#runs tr[data-run]')]"
        ".map((r) => [r.dataset.run, r.querySelector('.badge').dataset.status]));")
    return rows


def test_a_run_goes_from_running_to_succeeded_on_screen(ui: UI, stack: Stack,
                                                        tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    name = f"ui-live-{uuid.uuid4().hex[:6]}"
    wid = submit(stack, {"name": name, "nodes": [
        {"id": "words", "task": "e2e.stream",
         "input": {"words": ["alpha ", "beta ", "gamma"], "pause": 0.05, "gate": str(gate)}},
        {"id": "after", "task": "e2e.sleep", "needs": ["words"], "input": {"seconds": 0.05}}]},
        "ui-live")
    ui.open(f"/ui/runs?name={name}")
    wait_until(lambda: list_statuses(ui), 60, "the run listed as running",
               until=lambda rows: rows.get(wid) == "running")
    ui.shot("list-running")
    ui.click(f'#runs tr[data-run="{wid}"] a')  # the router shows the run: no reload
    running = ui.wait("the run running, its first chunk streamed", lambda s: (
        s["status"] == "running" and s["graph"].get("words") == "running"
        and "alpha" in s["streams"].get("words", "")))
    assert running["graph"]["after"] == "pending" and running["cancel"], running
    ui.shot("run-running")

    gate.touch()
    done = ui.wait("the run succeeded on screen", lambda s: s["status"] == "succeeded"
                   and s["graph"] == {"words": "succeeded", "after": "succeeded"}
                   and len(s["attempts"]) == 2 and "gamma" in s["streams"]["words"]
                   and all(a["outcome"] == "succeeded" for a in s["attempts"]))
    assert done["mark"] == "loaded once", "the page was reloaded"
    assert done["path"] == f"/ui/runs/{wid}"
    assert done["streams"]["words"] == "alpha beta gamma"
    assert sorted((a["key"], a["outcome"]) for a in done["attempts"]) == [
        ("after#1", "succeeded"), ("words#1", "succeeded")]
    assert not done["cancel"] and done["output"], done
    ui.shot("run-succeeded")

    ui.browser.back()  # the list again, read again by its poll
    wait_until(lambda: list_statuses(ui), 30, "the list showing it succeeded",
               until=lambda rows: rows.get(wid) == "succeeded")
    assert ui.seen()["mark"] == "loaded once"
    ui.shot("list-succeeded")


def test_a_failed_node_shows_its_error_and_every_attempt(ui: UI, stack: Stack) -> None:
    retry = {"max_attempts": 3, "backoff_base": 0.1, "backoff_max": 0.2}
    wid = submit(stack, {"name": "ui-fail", "nodes": [
        {"id": "flaky", "task": "e2e.flaky", "retry": retry, "input": {"succeed_on": 2}},
        {"id": "boom", "task": "e2e.fatal", "needs": ["flaky"]},
        {"id": "never", "task": "e2e.sleep", "needs": ["boom"], "input": {"seconds": 0}}]},
        "ui-fail")
    ui.open(f"/ui/runs/{wid}")
    seen = ui.wait("the run failed on screen", lambda s: s["status"] == "failed"
                   and s["graph"].get("never") == "upstream_failed"
                   and [a["outcome"] for a in s["attempts"]] == ["failed", "succeeded", "failed"])
    assert seen["graph"] == {"flaky": "succeeded", "boom": "failed",
                             "never": "upstream_failed"}, seen
    assert seen["edges"] == ["boom>never", "flaky>boom"], seen  # drawn from needs
    columns = seen["columns"]
    assert columns["flaky"] < columns["boom"] < columns["never"], columns  # by depth
    assert "this input can never work" in seen["nodeErrors"]["boom"], seen
    assert "this input can never work" in (seen["error"] or ""), seen
    attempts = {a["key"]: a for a in seen["attempts"]}
    assert attempts["flaky#1"]["outcome"] == "failed"
    assert "attempt 1 fails on purpose" in attempts["flaky#1"]["error"]
    assert attempts["flaky#2"]["outcome"] == "succeeded"
    assert "this input can never work" in attempts["boom#1"]["error"]
    ui.shot("run-failed")


def test_the_signal_form_moves_a_waiting_run_on(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-wait", "nodes": [
        {"id": "approval", "kind": "wait", "signal": "approval",
         "fields": {"approved": "boolean", "note": {"type": "string", "required": False}}},
        {"id": "after", "task": "e2e.sleep", "needs": ["approval"], "input": {"seconds": 0.05}}]},
        "ui-wait")
    ui.open(f"/ui/runs/{wid}")
    # The document (its open waits) and the stream (the spec: the graph, the fields the
    # wait declares) come apart: the page is whole once both are in.
    waiting = ui.wait("the form of the open wait, with its fields", lambda s: (
        s["forms"] == ["approval"] and s["fields"] == ["approved", "note"]
        and s["graph"].get("approval") == "waiting"))
    assert waiting["status"] == "running" and waiting["cancel"], waiting
    Select(ui.browser.find_element(By.CSS_SELECTOR, 'select[data-field="approved"]')
           ).select_by_visible_text("true")
    ui.browser.find_element(By.CSS_SELECTOR, 'input[data-field="note"]').send_keys(
        "looks good from the browser")
    ui.shot("signal-form")
    ui.click('form.signal-form button[type="submit"]')
    done = ui.wait("the run moved on and succeeded", lambda s: s["status"] == "succeeded"
                   and s["graph"].get("after") == "succeeded" and s["signals"]
                   and s["attempts"] and s["attempts"][0]["outcome"] == "succeeded")
    assert done["forms"] == [] and done["mark"] == "loaded once"
    assert done["graph"] == {"approval": "succeeded", "after": "succeeded"}
    assert any("consumed" in row and "looks good from the browser" in row
               for row in done["signals"]), done["signals"]
    ui.shot("signal-sent")


def test_the_cancel_button_ends_a_run(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-cancel", "nodes": [
        {"id": "long", "task": "e2e.sleep", "input": {"seconds": 120}}]}, "ui-cancel")
    ui.open(f"/ui/runs/{wid}")
    ui.wait("the run running", lambda s: s["graph"].get("long") == "running" and s["cancel"])
    ui.browser.find_element(By.CSS_SELECTOR, '#cancel-form input[name="reason"]').send_keys(
        "stopped from the browser")
    ui.click('#cancel-form button[type="submit"]')
    done = ui.wait("the run cancelled on screen", lambda s: s["status"] == "cancelled"
                   and [a["outcome"] for a in s["attempts"]] == ["cancelled"])
    assert done["graph"] == {"long": "cancelled"} and not done["cancel"], done
    assert [a["outcome"] for a in done["attempts"]] == ["cancelled"], done
    ui.shot("run-cancelled")
    doc = httpx.get(f"{stack.gateway}/v1/workflows/{wid}", timeout=10).json()
    assert doc["status"] == "cancelled", doc


QUEUES = """
return Object.fromEntries([...document.querySelectorAll('section.queue')].map((q) => [
  q.dataset.queue, {state: q.querySelector('h2 .badge').dataset.status,
                    live: Number(q.querySelector('.live-workers').textContent),
                    workers: [...q.querySelectorAll('tr[data-worker]')]
                      .map((r) => r.textContent)}]));
"""


def test_the_queues_page_shows_the_cpu_queue_and_its_worker(ui: UI) -> None:
    ui.open("/ui/queues")
    queues = wait_until(lambda: ui.browser.execute_script(QUEUES), 60, "the cpu queue",
                        until=lambda q: q.get("cpu", {}).get("live", 0) >= 1)
    cpu = queues["cpu"]
    assert cpu["state"] == "ok" and len(cpu["workers"]) == cpu["live"], cpu
    assert any("e2e.sleep" in row for row in cpu["workers"]), cpu
    ui.shot("queues")


LIMITS = """
return Object.fromEntries([...document.querySelectorAll('#limits tr[data-limiter]')].map((r) => [
  r.dataset.limiter, {limit: r.querySelector('.limit').textContent,
                      holding: Number(r.querySelector('.holding').textContent),
                      queued: Number(r.querySelector('.queued').textContent),
                      history: r.querySelector('a').getAttribute('href')}]));
"""


def test_the_queues_page_lists_the_limits_in_use(ui: UI, stack: Stack) -> None:
    key = f"ui-{uuid.uuid4().hex[:8]}"
    wid = submit(stack, {"name": "ui-limited", "nodes": [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.sleep",
         "input": {"seconds": 0.05}, "concurrency": {"key": key, "limit": 2},
         "rate_limit": {"key": key, "per_minute": 600}}]}, "ui-limits",
        {"items": [1, 2, 3, 4]})
    ui.open("/ui/queues")
    limiters = wait_until(lambda: ui.browser.execute_script(LIMITS), 60,
                          "both limiters of the key listed, holding nothing once the run ended",
                          until=lambda rows: {f"limit::concurrency:{key}", f"limit::rate:{key}"}
                          <= set(rows) and rows[f"limit::concurrency:{key}"]["holding"] == 0)
    concurrency, rate = limiters[f"limit::concurrency:{key}"], limiters[f"limit::rate:{key}"]
    assert concurrency["limit"] == "2" and concurrency["queued"] == 0, concurrency
    assert rate["limit"] == "600 per 60 s", rate
    assert concurrency["history"] == f"/ui/runs/limit%3A%3Aconcurrency%3A{key}", concurrency
    doc = httpx.get(f"{stack.gateway}/v1/workflows/{wid}", timeout=10).json()
    assert doc["status"] in ("running", "succeeded"), doc
    ui.shot("queues-limits")


def test_a_definition_is_shown_and_runs_from_its_page(ui: UI, stack: Stack) -> None:
    name = f"ui-def-{uuid.uuid4().hex[:8]}"
    nap = {"seconds": 0.05}
    spec = {"name": name, "nodes": [  # a diamond, one side a map
        {"id": "first", "task": "e2e.sleep", "input": nap},
        {"id": "items", "kind": "map", "over": "${input.xs}", "task": "e2e.sleep",
         "input": nap, "needs": ["first"]},
        {"id": "side", "task": "e2e.sleep", "input": nap, "needs": ["first"]},
        {"id": "join", "task": "e2e.sleep", "input": nap, "needs": ["items", "side"]}]}
    answer = httpx.put(f"{stack.gateway}/v1/definitions/{name}", json={"workflow": spec},
                       timeout=10)
    assert answer.status_code == 201, answer.text
    ui.open("/ui/definitions")
    wait_until(lambda: ui.browser.find_elements(By.LINK_TEXT, name), 30, "the definition listed")
    ui.browser.find_element(By.LINK_TEXT, name).click()
    seen = wait_until(ui.seen, 30, "its graph", until=lambda s: len(s["graph"]) == 4)
    assert set(seen["graph"].values()) == {"pending"}
    assert seen["edges"] == ["first>items", "first>side", "items>join", "side>join"]
    columns = seen["columns"]
    assert columns["first"] < columns["items"] == columns["side"] < columns["join"], columns
    field = ui.browser.find_element(By.ID, "run-input")
    field.clear()
    field.send_keys('{"xs": [1, 2, 3, 4]}')
    ui.shot("definition")
    ui.click('#run-form button[type="submit"]')
    done = ui.wait("the run it started succeeded", lambda s: s["path"].startswith("/ui/runs/")
                   and s["status"] == "succeeded" and len(s["attempts"]) == 7
                   and all(a["outcome"] == "succeeded" for a in s["attempts"]))
    assert set(done["graph"].values()) == {"succeeded"} and len(done["graph"]) == 4, done
    assert done["mark"] == "loaded once"
    assert len([a for a in done["attempts"] if a["key"].startswith("items[")]) == 4, done
    items = ui.browser.find_element(By.CSS_SELECTOR, '#nodes tr[data-node="items"]').text
    assert "4/4 done" in items, items
    ui.shot("definition-run")


SCHEDULE = """
const row = document.querySelector(`#schedules tr[data-schedule="${arguments[0]}"]`);
return row ? row.querySelector('.badge').dataset.status : null;
"""


def test_a_schedule_is_listed_and_paused_from_its_page(ui: UI, stack: Stack) -> None:
    name = f"ui-def-{uuid.uuid4().hex[:8]}"
    spec = {"name": name, "nodes": [{"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}}]}
    assert httpx.put(f"{stack.gateway}/v1/definitions/{name}", json={"workflow": spec},
                     timeout=10).status_code == 201
    schedule = f"ui-sched-{uuid.uuid4().hex[:8]}"
    answer = httpx.put(f"{stack.gateway}/v1/schedules/{schedule}", timeout=10,
                       json={"cron": "0 0 1 1 *", "definition": name})
    assert answer.status_code == 201, answer.text
    try:
        ui.open("/ui/schedules")
        wait_until(lambda: ui.browser.execute_script(SCHEDULE, schedule), 60,
                   "the schedule listed as running", until=lambda s: s == "running")
        ui.shot("schedules")
        ui.browser.find_element(By.LINK_TEXT, schedule).click()
        wait_until(lambda: ui.browser.find_elements(By.ID, "schedule-toggle"), 30, "its page")
        ui.click("#schedule-toggle")
        wait_until(lambda: ui.browser.find_element(By.ID, "schedule-toggle").text, 60,
                   "the schedule paused", until=lambda label: label == "Resume",
                   ignore=(Exception,))
        ui.shot("schedule-paused")
    finally:
        httpx.delete(f"{stack.gateway}/v1/schedules/{schedule}", timeout=10)
