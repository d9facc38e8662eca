"""A run's task views from projection rows and history events (``services/gateway/tasks``;
the SQL that reads them runs on PostgreSQL in ``tests/e2e/test_tracebacks.py``), and the
routes' answers to a malformed index, an unknown run and an unknown node."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from gateway_harness import FakePool, Gateway, assert_problem

from services.gateway.edge.problems import Problem
from services.gateway.tasks.views import (
    attempts,
    failure,
    parse_index,
    task_document,
    task_links,
    task_view,
)

T = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)
TB = "Traceback (most recent call last):\n  File \"t.py\", line 3, in f\nKeyError: 'x'\n"


def event(kind: str, s: int, **data: Any) -> dict[str, Any]:
    return {"seq": s, "type": kind, "at": T + timedelta(seconds=s),
            "data": {"node": "m", "index": 4, **data}}


HISTORY = [
    event("TaskDispatched", 3, attempt=1, input={"v": 1}),
    event("TaskStarted", 4, attempt=1, worker="w-1"),
    event("TaskFailed", 5, attempt=1, error="'x'", error_type="KeyError", traceback=TB),
    event("TaskDispatched", 8, attempt=2, input={"v": 2}),
    event("TaskStarted", 9, attempt=2, worker="w-2"),
    event("TaskSucceeded", 10, attempt=2, output={"ok": True}),
]
ROW = {"task_key": "m[4]", "node": "m", "idx": 4, "attempt": 2, "status": "succeeded",
       "task": "t.m", "queue": "cpu", "progress": 1.0, "message": "", "error": "",
       "error_type": "", "traceback": "", "worker": "w-2", "dispatched_at": T,
       "started_at": T, "finished_at": T, "first_seq": 3, "seq": 10}


def test_each_attempt_shows_its_worker_times_and_failure() -> None:
    first, second = attempts(HISTORY)
    assert first == {"attempt": 1, "status": "failed", "worker": "w-1",
                     "dispatched_at": (T + timedelta(seconds=3)).isoformat(),
                     "started_at": (T + timedelta(seconds=4)).isoformat(),
                     "finished_at": (T + timedelta(seconds=5)).isoformat(),
                     "error": "'x'", "error_type": "KeyError", "traceback": TB}
    assert (second["status"], second["worker"], second["traceback"]) == ("succeeded", "w-2", "")


def test_a_running_a_cancelled_and_an_undispatched_attempt() -> None:
    running = attempts([event("TaskDispatched", 3, attempt=1), event("TaskStarted", 4,
                                                                      attempt=1, worker="w")])
    cancelled = attempts([event("TaskDispatched", 3, attempt=1),
                          event("TaskCancelled", 4, attempt=1, reason="workflow cancelled")])
    undispatched = attempts([event("TaskFailed", 3, attempt=1, error="m[4]: no key 'x'",
                                   error_type="InputReferenceError")])
    assert running[0]["status"] == "running" and running[0]["finished_at"] is None
    assert (cancelled[0]["status"], cancelled[0]["error"]) == ("cancelled", "workflow cancelled")
    assert undispatched[0]["dispatched_at"] is None
    assert undispatched[0]["error_type"] == "InputReferenceError"


def test_a_task_document_has_the_latest_input_the_output_and_links() -> None:
    doc = task_document("wf-1", ROW, HISTORY)
    assert {k: doc[k] for k in ("workflow_id", "node", "index", "key", "task", "queue",
                                "status", "attempt", "input", "output")} == {
        "workflow_id": "wf-1", "node": "m", "index": 4, "key": "m[4]", "task": "t.m",
        "queue": "cpu", "status": "succeeded", "attempt": 2, "input": {"v": 2},
        "output": {"ok": True}}
    assert [a["attempt"] for a in doc["attempts"]] == [1, 2]
    assert doc["links"] == {"self": "/v1/workflows/wf-1/tasks/m/4",
                            "logs": "/v1/workflows/wf-1/tasks/m/4/logs"}
    assert task_links("wf-1", "a", None)["self"] == "/v1/workflows/wf-1/tasks/a/-"


def test_a_tasks_row_shows_its_error_type_and_traceback() -> None:
    view = task_view({**ROW, "status": "failed", "error": "'x'", "error_type": "KeyError",
                      "traceback": TB})
    assert (view["error"], view["error_type"], view["traceback"]) == ("'x'", "KeyError", TB)


def test_the_failure_names_the_attempt_that_failed_the_run() -> None:
    node = {"node": "m", "status": "failed", "error": "m[4] failed after 3 attempts: ..."}
    task = {"node": "m", "index": 4, "attempt": 3, "error": "'x'", "error_type": "KeyError",
            "traceback": TB}
    assert failure(node, task) == {"node": "m", "index": 4, "attempt": 3,
                                   "error_type": "KeyError", "message": "'x'", "traceback": TB}
    assert failure(node, None) == {"node": "m", "index": None, "attempt": None,
                                   "error_type": "", "message": node["error"], "traceback": ""}
    assert failure(None, None) is None


@pytest.mark.parametrize(("raw", "index"), [("-", None), ("0", 0), ("4095", 4095)])
def test_an_index_is_a_number_or_a_dash(raw: str, index: int | None) -> None:
    assert parse_index(raw) == index


@pytest.mark.parametrize("raw", ["", "-1", "x", "²", "1.5", "1234567890"])
def test_any_other_index_is_refused(raw: str) -> None:
    with pytest.raises(Problem) as caught:
        parse_index(raw)
    assert caught.value.status == 422


def test_a_malformed_index_is_422(gw: Gateway) -> None:
    gw.connect(FakePool(rows={"wf-1": {"status": "running", "tenant": None, "spec": {}}}))
    doc = assert_problem(gw.client.get("/v1/workflows/wf-1/tasks/a/x"), 422)
    assert "index" in doc["detail"]


def test_an_unknown_run_is_404_for_both_routes(gw: Gateway) -> None:
    gw.connect(FakePool())
    assert_problem(gw.client.get("/v1/workflows/nope/tasks/a/-"), 404, "Not found")
    assert_problem(gw.client.get("/v1/workflows/nope/nodes/a/tasks"), 404, "Not found")


def test_an_unknown_node_is_404_and_bad_paging_422(gw: Gateway) -> None:
    spec = {"name": "s", "nodes": [{"id": "a", "task": "t.a"}]}
    gw.connect(FakePool(rows={"wf-1": {"status": "running", "tenant": None, "spec": spec}}))
    doc = assert_problem(gw.client.get("/v1/workflows/wf-1/nodes/b/tasks"), 404)
    assert doc["detail"] == "no node b in workflow wf-1"
    for query in ("limit=0", "limit=501", "status=lost", "after=x"):
        assert_problem(gw.client.get(f"/v1/workflows/wf-1/nodes/a/tasks?{query}"), 422)


def test_a_cache_hit_shows_its_output_and_the_attempt_it_took_it_from() -> None:
    source = {"workflow_id": "wf-a", "node": "m", "index": 4, "attempt": 1}
    hit = [event("TaskLookedUp", 3, attempt=1),
           event("TaskCached", 4, attempt=1, output={"vec": [1]}, source=source)]
    [one] = attempts(hit)
    assert (one["status"], one["dispatched_at"], one["cached"]) == ("succeeded", None, source)
    doc = task_document("wf-b", {**ROW, "attempt": 1, "seq": 4}, hit)
    assert doc["output"] == {"vec": [1]} and doc["input"] is None
