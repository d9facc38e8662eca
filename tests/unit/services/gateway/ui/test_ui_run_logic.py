"""The run page's pure modules (``run_model.js``, ``map_items.js``, ``timeline.js``,
``rerun.js``, ``dom.js``'s time format) run under Node on made-up histories
(``run_logic.mjs``): a map of 10,000 items dispatched last item first is paged 100 at a
time in index order, filtered by status; tasks are ordered by index as numbers; the
task panel is built from the events where the gateway has no task resource; the
timeline keeps one row per task up to its limit and one per node past it, its buckets
counting what was under way and where an attempt failed; waits and sleeps become
spans, a code workflow's from its activations' decisions; what a rerun reused is an
attempt "reused"; the rerun dialog sends the input only when it was changed; a time
names its zone. Skipped where Node is not installed
(the browser tests drive the same modules), except on CI (``CI=true``), where it fails.
"""

from __future__ import annotations

import functools
from typing import Any

from ui_node_harness import node_answers


@functools.cache
def answers(zone: str) -> dict[str, Any]:
    """What run_logic.mjs prints (``ui_node_harness``)."""
    return node_answers("run_logic.mjs", zone)


def test_a_map_of_10000_items_is_paged_in_index_order() -> None:
    got = answers("UTC")
    assert got["total"] == 10_000
    assert got["page0"] == list(range(100))
    assert got["page1"] == list(range(100, 200))
    assert [t["index"] for t in got["last"]["tasks"]] == list(range(9900, 10_000))
    assert got["last"]["more"] is False
    assert got["failed"] == [[i * 1000 + 7, "ValueError"] for i in range(10)]


def test_tasks_are_ordered_by_index_as_numbers() -> None:
    got = answers("UTC")
    assert got["smallAttempts"] == ["a[0]#1", "a[1]#1", "a[2]#1", "a[2]#2", "a[10]#1",
                                    "a[100]#1"]
    assert got["smallRows"] == [["a[0]", ["dispatched"]], ["a[1]", ["dispatched"]],
                                ["a[2]", ["failed", "dispatched"]], ["a[10]", ["dispatched"]],
                                ["a[100]", ["dispatched"]]]


def test_the_model_keeps_each_attempts_input_output_and_traceback() -> None:
    got = answers("UTC")
    assert got["input"] == {"xs": 1}
    assert got["output"] == 42
    assert got["failedTraceback"] == "Traceback …"


def test_a_task_panel_is_built_from_the_events_where_the_gateway_has_no_resource() -> None:
    got = answers("UTC")
    first = got["taskFirst"]
    assert (first["status"], first["input"], first["output"]) == ("succeeded", {"a": 1}, 5)
    failed = got["taskFailed"]
    assert failed["status"] == "failed" and "output" not in failed, failed
    assert failed["attempts"] == [{
        "attempt": 1, "status": "failed", "worker": "w1", "dispatched_at": 1207,
        "started_at": 1208, "finished_at": 1307, "error": "no", "error_type": "ValueError",
        "traceback": "Traceback …"}]


def test_what_a_rerun_reused_is_an_attempt_reused() -> None:
    got = answers("UTC")
    assert got["reused"] == [["whole#0", "reused", {"kept": True}], ["m[3]#1", "reused", 9],
                             ["m[1]#1", "dispatched", None]]
    assert got["reusedItems"] == [[1, "dispatched"], [3, "succeeded"]]


def test_the_timeline_aggregates_per_node_past_its_limit() -> None:
    got = answers("UTC")
    assert got["bigRows"] == [["first", True, 1, 1], ["extract", True, 10_000, 10_000],
                              ["w", True, 1, 1], ["nap", True, 1, 1]]
    assert got["span"] == {"t0": 1000, "t1": 14_000}
    buckets = got["buckets"]
    assert buckets["failed"] == 10 and 100 <= buckets["count"] <= 160, buckets
    assert buckets["most"] > 1, buckets


def test_waits_and_sleeps_become_spans() -> None:
    assert answers("UTC")["spans"] == [["wait:w", 12_000, 13_000, "succeeded"],
                                       ["sleep:nap", 13_000, 13_500, "succeeded"]]


def test_a_code_workflows_sleeps_and_waits_become_spans_from_its_decisions() -> None:
    got = answers("UTC")
    assert got["codeSpans"] == [
        ["sleep:main[3]", 31, 5031, 5031, "succeeded"],  # woken by its code timer
        ["wait:main[5]", 31, 60_031, 6000, "succeeded"],  # its signal came
        ["wait:main[7]", 31, None, 7000, "cancelled"],  # cancelled: no attempt made
        ["sleep:main[1]@2", 7011, 8011, 8011, "succeeded"]]  # the next generation's
    assert got["codeRows"] == [
        ["main[0]", "task", ["succeeded", "succeeded"]], ["main[1]", "task", ["succeeded"]],
        ["main[1]", "sleep", ["succeeded"]], ["main[2]", "task", ["succeeded", "succeeded"]],
        ["main[3]", "sleep", ["succeeded"]], ["main[4]", "task", ["succeeded"]],
        ["main[5]", "wait", ["succeeded"]], ["main[7]", "wait", ["cancelled"]]]
    assert got["codeItems"] == [[0, "flow", "succeeded"], [1, "t", "succeeded"],
                                [2, "flow", "succeeded"], [4, "flow", "succeeded"]]


def test_the_rerun_request_sends_the_input_only_when_changed() -> None:
    got = answers("UTC")
    assert got["rerunSame"] == {"path": "/v1/workflows/r1/rerun", "body": {}}
    assert got["rerunChanged"] == {"path": "/v1/workflows/r1/rerun", "body": {"input": {"a": 2}}}
    assert got["reset"] == {"path": "/v1/workflows/r1/reset", "body": {"node": "extract"}}
    assert got["badJson"] == "the input is not JSON"
    assert got["noNode"] == "choose the node to reset to"


def test_times_name_their_zone() -> None:
    assert answers("UTC")["when"] == "2026-12-05 14:03:07.512 UTC"
    assert answers("Europe/Paris")["when"] in ("2026-12-05 15:03:07.512 CET",
                                               "2026-12-05 15:03:07.512 GMT+1")


def test_a_pause_shows_the_recalled_attempt_and_the_held_one() -> None:
    assert answers("UTC")["pausedAttempts"] == [
        ["m[0]#1", "succeeded", ""],
        ["m[1]#1", "recalled", "recalled: the run paused before it started"],
        ["m[1]#2", "dispatched", ""],
        ["m[2]#1", "held", "held: the run is paused"]]
