"""What a ``WorkflowRestarted`` writes to the projection, and what the audit expects of
a restarted run's rows (``ops.expected_rows``)."""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.machine import step
from ops.expected_rows import expected_rows
from services.projector import restarts as r
from services.projector.writer import plan

WF = "wf-r"
T = 1_000_000


def test_a_restart_sets_the_generation_and_the_seq_below_which_rows_go() -> None:
    body = ev.WorkflowRestarted(WF, T, 3, 4, "b attempt 4 was lost", {"a": 1, "b": 1})
    written = {sql: args for sql, args in plan(ev.HistoryEvent(WF, 17, body))}
    assert written[r.SET_GENERATION] == (WF, 3, 17)
    assert "greatest(generation, $2)" in r.SET_GENERATION  # never goes back
    assert all("r.seq < w.restarted_seq" in sql and "w.restarted_seq > 0" in sql
               for sql in r.SWEEPS)


def test_no_other_event_writes_a_restart_statement() -> None:
    others = [ev.TaskCancelled(WF, "b", None, 1, T, "x"), ev.NodeFinished(WF, "a", "succeeded", T),
              ev.WorkflowSucceeded(WF, T, {"b": 1})]
    for body in others:
        assert not {s for s, _ in plan(ev.HistoryEvent(WF, 5, body))} & set(
            r.RESTART_STATEMENTS), type(body)


def _restarted_history() -> tuple[object, list[ev.HistoryEvent]]:
    spec = {"name": "r", "restart_on_failure": True,
            "nodes": [{"id": "a", "task": "t.a"},
                      {"id": "b", "task": "t.b", "needs": ["a"], "heartbeat_timeout": 2}]}
    inputs: list[ev.Input] = [
        ev.WorkflowSubmitted(WF, spec, None, T), ev.TaskStarted(WF, "a", None, 1, T + 1, "w"),
        ev.TaskSucceeded(WF, "a", None, 1, T + 2, "A"),
        ev.TaskStarted(WF, "b", None, 1, T + 3, "w"), ev.TimerFired(WF, "lease:b:1", T + 2003)]
    state, history = None, []
    for item in inputs:
        out = step(state, item)
        state, history = out.state, history + out.events
    return state, history


def test_the_audit_expects_only_the_new_generations_rows() -> None:
    state, history = _restarted_history()
    assert any(isinstance(e.body, ev.WorkflowRestarted) for e in history)
    rows = expected_rows(state, history)  # type: ignore[arg-type]
    assert rows.workflow is not None and rows.workflow["generation"] == 2
    assert rows.tasks == {"a": {"status": "dispatched", "attempt": 2}}
    assert rows.nodes == {"a": {"status": "running", "total": None, "error": ""}}
