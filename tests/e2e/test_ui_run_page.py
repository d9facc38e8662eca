"""The run page in a real browser (headless Chromium, Selenium) against the session's
stack: what a person asks of a run. Its input is shown (with a copy button) beside its
output, its times name their zone, its timeline is drawn from its events (a sleep as a
span), and a node picked in the graph shows its task's input and output; a failed task
shows its error type, message, attempts, tracebacks and log lines, and a running task's
lines are followed; a map of 10,000 items is listed 100 a page in index order; a task whose
worker was SIGKILLed is marked lost; the Pause button pauses a running run (the
page says since when and by whom, the next task is held) and turns into Resume, which
lets it finish; the Rerun dialog posts the run's input (changed)
and shows the new run, linked both ways, or resets the run to a node picked in it.
Screenshots are kept in ``test-artifacts/ui/``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, submit, ui_fixture  # noqa: F401 (fixtures)

from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.polling import wait_until

PAGE = """
const q = (sel) => document.querySelector(sel);
const all = (sel) => [...document.querySelectorAll(sel)];
const text = (sel) => q(sel)?.textContent ?? null;
return {
  path: location.pathname,
  status: q('#run-summary .badge')?.dataset.status ?? null,
  summary: text('#run-summary'),
  input: text('#run-input-json'),
  copied: text('.copy-state'),
  timeline: all('svg.timeline g.tl-row').map((g) => ({
    node: g.dataset.node, index: g.dataset.index, count: Number(g.dataset.count),
    aggregate: g.classList.contains('aggregate'),
    bars: [...g.querySelectorAll('g.tl-bar')].map((b) => b.getAttribute('class')),
    buckets: g.querySelectorAll('rect.tl-bucket').length})),
  panel: q('#node-panel:not([hidden])')?.dataset.node ?? null,
  task: q('.task-panel') ? {
    key: q('.task-panel').dataset.node + '/' + q('.task-panel').dataset.index,
    input: text('.task-panel .task-input'), output: text('.task-panel .task-output'),
    attempts: all('.task-panel .attempt').map((a) => ({
      attempt: Number(a.dataset.attempt), outcome: a.dataset.outcome,
      error: a.querySelector('.attempt-error')?.textContent ?? '',
      cachedFrom: a.querySelector('.cached-from')?.textContent ?? '',
      cachedLink: a.querySelector('.cached-from a')?.getAttribute('href') ?? '',
      traceback: a.querySelector('pre.traceback')?.textContent ?? ''})),
    logs: text('.task-panel pre.logs'), logsState: text('.task-panel .logs-state')} : null,
  items: all('#node-panel table.items tbody tr').map((r) => Number(r.dataset.index)),
  where: text('#node-panel .items-where'),
  graph: all('svg.dag g.node').map((g) => g.dataset.node),
  lostNodes: all('svg.dag g.node[data-lost]').map((g) => g.dataset.node),
  lostMarks: all('.lost-mark').map((e) => e.textContent),
  warnings: all('#run-warnings p.warning').map((p) => p.textContent),
  rerun: !!q('#rerun-button'),
  rerunOf: text('#rerun-of'),
  reruns: text('#reruns'),
  dialog: text('#rerun-dialog .form-status'),
  paused: text('#run-paused'),
  pauseButton: text('#pause-button'),
  nodeStatus: Object.fromEntries(all('#nodes tr[data-node]').map((r) => [
    r.dataset.node, r.querySelector('.badge')?.dataset.status ?? null])),
};
"""
ZONED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (UTC|[A-Z]{2,5}|GMT[+-]\d+)")


def seen(ui: UI) -> dict[str, Any]:
    found: dict[str, Any] = ui.browser.execute_script(PAGE)
    return found


def wait(ui: UI, what: str, until: Any, timeout_s: float = 60) -> dict[str, Any]:
    return wait_until(lambda: seen(ui), timeout_s, what, until=until)


def test_input_output_timeline_and_zoned_times(ui: UI, stack: Stack) -> None:
    given = {"greeting": "hello from the input", "n": [1, 2, 3]}
    wid = submit(stack, {"name": "ui-io", "priority": 8, "nodes": [
        {"id": "hello", "task": "e2e.flaky",
         "input": {"succeed_on": 1, "value": "${input.greeting}"}},
        {"id": "pause", "kind": "sleep", "duration": 0.2, "needs": ["hello"]},
        {"id": "nap", "task": "e2e.sleep", "needs": ["pause"], "input": {"seconds": 0.05}}]},
        "ui-io", given)
    ui.open(f"/ui/runs/{wid}")
    # The document may say succeeded before the page has read the last events: wait for
    # the timeline to have drawn every attempt's end too.
    done = wait(ui, "the run succeeded, its timeline drawn", lambda s: (
        s["status"] == "succeeded"
        and {r["node"] for r in s["timeline"]} == {"hello", "pause", "nap"}
        and all(r["bars"] and not any("o-running" in b for b in r["bars"])
                for r in s["timeline"])))
    assert json.loads(done["input"]) == given, done["input"]
    bars = {row["node"]: row["bars"] for row in done["timeline"]}
    assert bars == {"hello": ["tl-bar k-attempt o-succeeded"],
                    "pause": ["tl-bar k-sleep o-succeeded"],
                    "nap": ["tl-bar k-attempt o-succeeded"]}, bars
    assert [row["node"] for row in done["timeline"]] == ["hello", "pause", "nap"]
    assert not any(row["aggregate"] for row in done["timeline"])
    stamps = ZONED.findall(done["summary"])
    assert len(stamps) == 2, done["summary"]  # created and updated, each with its zone
    assert "priority8" in done["summary"], done["summary"]
    ui.click("button.copy")
    wait(ui, "the copy answered", lambda s: s["copied"] in (" copied", " select and copy by hand"))

    ui.click('svg.dag g.node[data-node="hello"]')
    opened = wait(ui, "the node's panel with its output", lambda s: (
        s["panel"] == "hello" and s["task"] and s["task"]["output"]))
    assert json.loads(opened["task"]["output"]) == {"attempt": 1, "value": given["greeting"]}
    assert json.loads(opened["task"]["input"])["value"] == given["greeting"]
    assert [a["outcome"] for a in opened["task"]["attempts"]] == ["succeeded"]
    ui.shot("run-io-panel")


def test_a_failed_task_shows_its_error_type_and_attempts(ui: UI, stack: Stack) -> None:
    retry = {"max_attempts": 2, "backoff_base": 0.1, "backoff_max": 0.1}
    wid = submit(stack, {"name": "ui-failed-task", "nodes": [
        {"id": "bad", "task": "e2e.logs_then_fail", "retry": retry,
         "input": {"lines": 3, "message": "the value 7 cannot be split"}}]}, "ui-failed")
    ui.open(f"/ui/runs/{wid}")
    wait(ui, "the run failed", lambda s: s["status"] == "failed" and s["rerun"])
    ui.click('#nodes tr[data-node="bad"] button.node-open')
    opened = wait(ui, "both attempts in the panel", lambda s: (
        s["task"] and [a["outcome"] for a in s["task"]["attempts"]] == ["failed", "failed"]))
    for attempt in opened["task"]["attempts"]:
        assert attempt["error"] == "ValueError: the value 7 cannot be split", attempt
    assert json.loads(opened["task"]["input"]) == {"lines": 3,
                                                   "message": "the value 7 cannot be split"}
    ui.shot("run-failed-task")
    full = wait(ui, "the traceback and the log lines", lambda s: (
        all(a["traceback"] for a in s["task"]["attempts"])
        and "step 3 of 3" in (s["task"]["logs"] or "")))
    for attempt in full["task"]["attempts"]:
        assert "_fail_with" in attempt["traceback"], attempt
        assert "ValueError: the value 7 cannot be split" in attempt["traceback"], attempt
    logs = full["task"]["logs"]
    assert logs.count("step 1 of 3") == 2 and "printed before the failure" in logs, logs
    ui.click(".task-panel details.traceback summary")
    ui.shot("run-failed-traceback")


def test_a_cached_task_shows_its_output_and_where_it_came_from(ui: UI, stack: Stack) -> None:
    key = f"ui-cache-{uuid.uuid4().hex[:8]}"
    spec = {"name": "ui-cached", "nodes": [
        {"id": "slow", "task": "e2e.digest", "cache": {"key": key, "ttl": 600},
         "input": {"value": key, "salt": "ui", "seconds": 0.05}}],
        "output": "${nodes.slow.output}"}
    first = submit(stack, spec, "ui-cache-a")
    wait_until(lambda: httpx.get(f"{stack.gateway}/v1/workflows/{first}", timeout=10).json(),
               60, "the first run", until=lambda d: d["status"] == "succeeded")
    second = submit(stack, spec, "ui-cache-b")
    ui.open(f"/ui/runs/{second}")
    wait(ui, "the second run succeeded", lambda s: s["status"] == "succeeded")
    ui.click('#nodes tr[data-node="slow"] button.node-open')
    opened = wait(ui, "the hit's attempt in the panel", lambda s: (
        s["task"] and s["task"]["output"] and s["task"]["attempts"]
        and s["task"]["attempts"][0]["cachedFrom"]))
    [attempt] = opened["task"]["attempts"]
    assert attempt["outcome"] == "succeeded", attempt
    assert attempt["cachedFrom"] == f"cached from {first} slow attempt 1", attempt
    assert attempt["cachedLink"] == f"/ui/runs/{first}", attempt
    ui.shot("run-cached-task")


def test_a_running_tasks_logs_are_followed(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-logs", "nodes": [
        {"id": "ticks", "task": "e2e.logs_slowly", "input": {"lines": 8, "pause": 0.5}}]},
        "ui-logs")
    ui.open(f"/ui/runs/{wid}")
    wait(ui, "the task running, drawn", lambda s: s["status"] == "running"
         and s["graph"] == ["ticks"])
    ui.click('svg.dag g.node[data-node="ticks"]')
    live = wait(ui, "lines shown while it runs", lambda s: s["task"]
                and "tick 2" in (s["task"]["logs"] or ""))
    assert live["status"] == "running" and "tick 8" not in live["task"]["logs"], live
    done = wait(ui, "every line, once", lambda s: s["status"] == "succeeded"
                and "tick 8" in (s["task"]["logs"] or ""))
    ticks = [line.rsplit(": ", 1)[1] for line in done["task"]["logs"].splitlines()]
    assert ticks == [f"tick {n}" for n in range(1, 9)], ticks
    ui.shot("run-logs-followed")


def test_a_map_of_10000_items_is_paged_in_index_order(ui: UI, stack: Stack) -> None:
    count = 10_000
    wid = submit(stack, {"name": "ui-big-map", "nodes": [
        {"id": "extract", "kind": "map", "over": "${input.xs}", "task": "e2e.sleep",
         "input": {"seconds": 0}}]}, "ui-map", {"xs": list(range(count))})
    ui.open(f"/ui/runs/{wid}")
    done = wait(ui, "the map's 10,000 items done, its timeline one row", lambda s: (
        s["status"] == "succeeded" and [r["count"] for r in s["timeline"]] == [count]),
        timeout_s=600)
    row = done["timeline"][0]
    assert row["aggregate"] and row["buckets"] > 10, row
    ui.click('svg.dag g.node[data-node="extract"]')
    first = wait(ui, "the first page of items", lambda s: len(s["items"]) == 100)
    assert first["items"] == list(range(100)), first["items"]
    assert "of 10000" in first["where"], first["where"]
    ui.shot("map-page-1")
    ui.click("#node-panel button.items-next")
    second = wait(ui, "the second page", lambda s: s["items"] and s["items"][0] == 100)
    assert second["items"] == list(range(100, 200)), second["items"]
    ui.click('#node-panel table.items tr[data-index="150"] button.item-open')
    item = wait(ui, "item 150's panel", lambda s: s["task"] and s["task"]["key"] == "extract/150"
                and s["task"]["attempts"])
    assert [a["outcome"] for a in item["task"]["attempts"]] == ["succeeded"], item["task"]
    ui.shot("map-item-150")


def test_a_task_whose_worker_was_killed_is_marked_lost(ui: UI, stack: Stack,
                                                        tmp_path: Path) -> None:
    queue = "q2"  # no worker serves it until a test adds one
    worker = localstack.Service(f"worker-{queue}-ui", (
        sys.executable, "-m", "services.worker", "--queue", queue, "--tasks", "e2e_tasks"))
    pid = stack.start(worker, {"HEADWATER_GATEWAY_URL": stack.gateway})
    wid = None
    try:
        wait_for_workers(stack.gateway, queue, 60)
        wid = submit(stack, {"name": "ui-lost", "nodes": [
            {"id": "long", "task": "e2e.q2_marked_sleep",
             "input": {"seconds": 300, "marks": str(tmp_path)}}]}, "ui-lost")
        ui.open(f"/ui/runs/{wid}")
        wait_until((tmp_path / "started-None").exists, 60, "the attempt started")
        wait(ui, "the task running", lambda s: s["status"] == "running" and not s["lostMarks"])
        os.kill(pid, signal.SIGKILL)
        lost = wait(ui, "the node marked lost", lambda s: s["lostNodes"] == ["long"]
                    and s["lostMarks"] and s["warnings"], timeout_s=60)
        assert "worker lost" in lost["lostMarks"][0] and "last heard" in lost["lostMarks"][0], lost
        ui.shot("run-worker-lost")
        ui.click('svg.dag g.node[data-node="long"]')
        panel = wait(ui, "the lost mark in the node's panel", lambda s: s["task"]
                     and len(s["lostMarks"]) >= 2)
        assert all("worker lost" in m for m in panel["lostMarks"]), panel
    finally:
        stack.stop(worker)
        stack.services.remove(worker)
        if wid:
            httpx.post(f"{stack.gateway}/v1/workflows/{wid}/cancel", json={}, timeout=10)


def test_the_rerun_dialog_posts_and_shows_the_new_run(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-rerun", "nodes": [
        {"id": "first", "task": "e2e.sleep", "input": {"seconds": 0}},
        {"id": "bad", "task": "e2e.flaky", "needs": ["first"],
         "input": {"succeed_on": "${input.succeed_on}"}}]}, "ui-rerun", {"succeed_on": 9})
    ui.open(f"/ui/runs/{wid}")
    wait(ui, "the run failed, its Rerun button shown", lambda s: s["status"] == "failed"
         and s["rerun"])
    ui.click("#rerun-button")
    field = ui.browser.find_element(By.ID, "rerun-input")
    assert json.loads(field.get_attribute("value") or "") == {"succeed_on": 9}
    options = [o.get_attribute("value") for o in
               ui.browser.find_elements(By.CSS_SELECTOR, "#rerun-node option")]
    assert options == ["", "first", "bad"], options
    field.clear()
    field.send_keys('{"succeed_on": 1}')
    ui.shot("rerun-dialog")
    ui.click('#rerun-form button[type="submit"]')
    new = wait(ui, "the new run's page, succeeded", lambda s: s["path"] != f"/ui/runs/{wid}"
               and s["status"] == "succeeded" and s["rerunOf"] == wid)
    assert json.loads(new["input"]) == {"succeed_on": 1}, new
    ui.shot("rerun-new-run")
    rerun_id = new["path"].rsplit("/", 1)[1]
    ui.click("#rerun-of a")  # and back: the source lists its rerun
    source = wait(ui, "the source run listing its rerun", lambda s: (
        s["path"] == f"/ui/runs/{wid}" and rerun_id in (s["reruns"] or "")))
    assert source["status"] == "failed", source


def test_the_rerun_dialog_resets_to_a_chosen_node(ui: UI, stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-reset", "nodes": [
        {"id": "first", "task": "e2e.sleep", "input": {"seconds": 0}},
        {"id": "bad", "task": "e2e.fatal", "needs": ["first"]}]}, "ui-reset", {"k": 1})
    ui.open(f"/ui/runs/{wid}")
    wait(ui, "the run failed", lambda s: s["status"] == "failed" and s["rerun"])
    ui.click("#rerun-button")
    Select(ui.browser.find_element(By.ID, "rerun-node")).select_by_value("first")
    mode = ui.browser.execute_script(
        "return document.querySelector('#rerun-form input[name=mode]:checked').value;")
    assert mode == "reset", mode  # picking a node picks "reset to node"
    ui.shot("reset-dialog")
    ui.click('#rerun-form button[type="submit"]')
    new = wait(ui, "the new run, reset to first, failed again", lambda s: (
        s["path"] != f"/ui/runs/{wid}" and s["status"] == "failed" and s["rerunOf"] == wid))
    assert "reset tofirst" in new["summary"], new["summary"]
    assert json.loads(new["input"]) == {"k": 1}, new
    ui.shot("reset-new-run")


def test_the_pause_button_pauses_the_run_and_resume_lets_it_finish(ui: UI,
                                                                    stack: Stack) -> None:
    wid = submit(stack, {"name": "ui-pause", "nodes": [
        {"id": "first", "task": "e2e.sleep", "input": {"seconds": 1.5}},
        {"id": "then", "task": "e2e.sleep", "needs": ["first"], "input": {"seconds": 0}}]},
        "ui-pause")
    ui.open(f"/ui/runs/{wid}")
    wait(ui, "the run running, its Pause button shown", lambda s: s["status"] == "running"
         and s["pauseButton"] == "Pause run")
    ui.click("#pause-button")
    paused = wait(ui, "the run paused, first done and then held", lambda s: (
        s["paused"] and s["pauseButton"] == "Resume run"
        and s["nodeStatus"].get("first") == "succeeded"), timeout_s=60)
    assert paused["status"] == "running" and "since" in paused["paused"], paused
    assert paused["nodeStatus"].get("then") != "succeeded", paused
    ui.shot("run-paused")
    ui.click("#pause-button")
    done = wait(ui, "the run resumed and finished", lambda s: s["status"] == "succeeded")
    assert not done["paused"] and done["pauseButton"] is None, done
