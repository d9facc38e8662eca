"""Labels and bulk operations in the web UI, in a real browser (headless Chromium, as
``test_ui_browser``) against the session's stack: the runs list filtered by labels
typed as ``key=value`` shows those runs alone, each with its labels; a run's page shows
its labels among its facts; the operations page shows a bulk cancel with its counts.
No page breaks its Content-Security-Policy or raises (the ``ui`` fixture)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from selenium.webdriver.common.by import By
from stackkit import Stack
from uikit import UI, browser_fixture, shots_fixture, ui_fixture  # noqa: F401 (fixtures)

from tests.polling import wait_until

WAITING: dict[str, Any] = {"name": "ui-labels", "nodes": [
    {"id": "hold", "kind": "wait", "signal": "go", "timeout": 3600}]}
LISTED = """
return Object.fromEntries([...document.querySelectorAll('#runs tr[data-run]')].map((r) =>
  [r.dataset.run, [...r.querySelectorAll('.label')].map((l) => l.textContent)]));
"""
OPERATIONS = """
return Object.fromEntries([...document.querySelectorAll('#operations tr[data-operation]')]
  .map((r) => [r.dataset.operation, r.querySelector('.counts').textContent]));
"""


def test_runs_are_filtered_by_labels_and_a_bulk_cancel_is_shown(ui: UI, stack: Stack) -> None:
    team = f"u{uuid.uuid4().hex[:8]}"
    ids = {}
    for env in ("prod", "dev"):
        ids[env] = f"{team}-{env}"
        answer = httpx.post(f"{stack.gateway}/v1/workflows", timeout=30, json={
            "id": ids[env], "workflow": WAITING, "labels": {"team": team, "env": env}})
        assert answer.status_code == 202, answer.text

    ui.open("/ui/runs")
    (field,) = wait_until(lambda: ui.browser.find_elements(By.ID, "filter-label"), 30,
                          "the runs page's label filter")
    field.send_keys(f"team={team} env=prod")
    ui.click("#run-filters button[type=submit]")
    listed = wait_until(lambda: ui.browser.execute_script(LISTED), 60,
                        "the prod run listed alone", until=lambda rows: list(rows) == [
                            ids["prod"]])
    assert listed[ids["prod"]] == ["env=prod", f"team={team}"]
    assert ui.browser.current_url.endswith(f"?label=team%3A{team}&label=env%3Aprod")
    ui.shot("runs-by-label")

    ui.open(f"/ui/runs/{ids['dev']}")
    labels = wait_until(lambda: ui.browser.execute_script(
        "return [...document.querySelectorAll('.facts .label')].map((l) => l.textContent);"),
        60, "the run's labels among its facts", until=lambda found: len(found) == 2)
    assert labels == ["env=dev", f"team={team}"]

    started = httpx.post(f"{stack.gateway}/v1/operations", timeout=30, json={
        "action": "cancel", "filter": {"label": [f"team:{team}"]}, "id": f"op-{team}"})
    assert started.status_code == 202, started.text
    ui.open("/ui/operations")
    counts = wait_until(lambda: ui.browser.execute_script(OPERATIONS), 60,
                        "the operation done on screen",
                        until=lambda rows: rows.get(f"op-{team}", "").startswith("2 done"))
    assert counts[f"op-{team}"] == "2 done, 0 skipped, 0 failed"
    ui.shot("operations")
