"""A code workflow's sleeps and signal waits, tasks no worker runs, get rows from the
activation's decision (``projector.code_steps``), and each signal wait a ``waits`` row:
the statements ``plan`` picks (the SQL itself runs on PostgreSQL in
``tests/e2e/test_projection_code_steps.py`` and ``tests/e2e/test_code_workflows.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from headwater.core import events as ev
from headwater.core.kinds.code.journal import PATCH_TASK, SIGNAL_TASK, SLEEP_TASK
from services.projector import code_steps as cs
from services.projector import kinds as k
from services.projector import statements as st
from services.projector.writer import STATEMENTS, plan

WF, T = "wf-1", 1_800_000_000_000


def planned(body: ev.Body, seq: int = 9) -> list[tuple[str, tuple[Any, ...]]]:
    return [(sql, args) for sql, args in plan(ev.HistoryEvent(WF, seq, body))
            if sql in cs.CODE_STATEMENTS]


def test_a_decision_makes_a_row_per_sleep_signal_wait_and_patch_at_its_number() -> None:
    decision = {"steps": [{"op": "task", "name": "t", "queue": "cpu", "step": 4},
                          {"op": "sleep", "seconds": 2.5, "step": 5},
                          {"op": "signal", "name": "approval", "timeout": 60, "step": 6},
                          {"op": "patch", "name": "v2", "step": 7},
                          {"op": "sleep", "until_ms": 0, "step": 8}]}
    planned_rows = planned(ev.TaskSucceeded(WF, "main", 4, 2, T, decision))
    assert [sql for sql, _ in planned_rows] == [cs.INSERT_OWN_STEP] * 4 + [cs.CODE_WAIT]
    rows, waits = planned_rows[:4], planned_rows[4:]
    assert [(a[4], a[5], a[6], a[7]) for _, a in rows] == [
        (SLEEP_TASK, "sleep 2.5 s", 11, "running"),
        (SIGNAL_TASK, "wait for signal approval (timeout 60 s)", 13, "running"),
        (PATCH_TASK, "patched: v2", 15, "succeeded"),
        (SLEEP_TASK, "sleep until 1970-01-01T00:00:00+00:00", 17, "running")]
    assert all(a[:3] == (WF, "main", 9) and a[8] == 2 for _, a in rows)  # its attempt
    at = st.ts(T)
    assert waits == [(cs.CODE_WAIT, (WF, "main", 13, "approval", at,
                                     at + timedelta(seconds=60), 9))]
    forever = planned(ev.TaskSucceeded(WF, "main", 0, 1, T, {
        "steps": [{"op": "signal", "name": "go", "step": 0}]}))
    assert forever[1] == (cs.CODE_WAIT, (WF, "main", 1, "go", at, None, 9))


def test_no_rows_for_a_step_an_ending_decision_or_another_nodes_output() -> None:
    assert planned(ev.TaskSucceeded(WF, "main", 3, 1, T, {"steps": [{"op": "sleep"}]})) == []
    assert planned(ev.TaskSucceeded(WF, "main", 2, 1, T, {
        "steps": [{"op": "sleep", "seconds": 1}], "finish": 1})) == []
    assert planned(ev.TaskSucceeded(WF, "a", None, 1, T, {"steps": []})) == []
    assert planned(ev.TaskSucceeded(WF, "a", 0, 1, T, "text")) == []


def test_a_timer_a_signal_a_cancel_and_the_end_close_them() -> None:
    at = st.ts(T)
    woke = planned(ev.TimerFired(WF, "code:main[5]", T))
    assert woke == [(cs.OWN_STEP_TIMED, (WF, "main[5]", 9, at, SLEEP_TASK)),
                    (cs.CODE_WAIT_ENDED, (WF, "main[5]", 9, "timed_out", None, None, at))]
    assert planned(ev.TimerFired(WF, "wait:w[1]", T)) == []
    took = planned(ev.SignalConsumed(WF, "main", 7, "approval", "s-1", T, {"ok": 1}))
    assert took == [(cs.OWN_STEP_SIGNALLED, (WF, "main[7]", 9, at)),
                    (cs.CODE_WAIT_ENDED, (WF, "main[7]", 9, "signalled", "s-1", {"ok": 1}, at))]
    cancelled = planned(ev.TaskCancelled(WF, "main", 5, 1, T, "returned"))
    assert cancelled == [(cs.OWN_STEP_CANCELLED, (WF, "main[5]", 9, "returned", at)),
                         (cs.CODE_WAIT_ENDED, (WF, "main[5]", 9, "ended", None, None, at))]
    ended = planned(ev.WorkflowSucceeded(WF, T, {"x": 1}))
    assert ended == [(cs.OWN_STEPS_CLOSED, (WF, 9, st.OPEN_TASKS))]


def test_they_apply_after_the_core_and_the_kinds_statements() -> None:
    first = STATEMENTS.index(cs.INSERT_OWN_STEP)
    assert STATEMENTS.index(st.UPSERT_DISPATCHED) < first  # earlier steps' rows counted
    assert STATEMENTS.index(st.TASK_CANCELLED) < first < STATEMENTS.index(cs.OWN_STEP_CANCELLED)
    assert STATEMENTS.index(cs.OWN_STEPS_CLOSED) > first
    # A wait's row is made after the kinds' (a wait node's) statements, and ended after
    # it is made; the kinds' closing of every open wait ends it when the run ends.
    made = STATEMENTS.index(cs.CODE_WAIT)
    assert STATEMENTS.index(k.CLOSE_OPEN_WAITS) < made < STATEMENTS.index(cs.CODE_WAIT_ENDED)
