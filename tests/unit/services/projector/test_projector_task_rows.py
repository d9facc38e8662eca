"""What a task's dispatch, start and failure write to its ``tasks`` row (the statements run
on PostgreSQL in ``tests/e2e/test_tracebacks.py``, in any order, and
``test_projection.py``)."""

from __future__ import annotations

from headwater.core import events as ev
from services.projector.statements import (
    TASK_FAILED,
    TASK_STARTED,
    UPSERT_DISPATCHED,
    core_plan,
    ts,
)

TB = "Traceback (most recent call last):\n  File \"t.py\", line 3, in f\nKeyError: 'x'\n"


def test_a_failure_writes_its_error_type_and_traceback() -> None:
    body = ev.TaskFailed("wf", "m", 4, 2, 5_000, "'x'", "KeyError", True, TB)
    steps = dict(core_plan(ev.HistoryEvent("wf", 9, body)))
    assert steps[TASK_FAILED] == ("wf", "m[4]", 9, "'x'", ts(5_000), "KeyError", TB, "m", 4, 2)


def test_a_failure_without_a_dispatch_inserts_the_row_it_is_counted_by() -> None:
    # A map item whose input could not be resolved fails undispatched: its row is made.
    assert TASK_FAILED.startswith("insert into tasks")
    assert "on conflict (workflow_id, task_key) do update" in TASK_FAILED
    assert TASK_FAILED.endswith("where tasks.seq < excluded.seq")


def test_a_new_dispatch_clears_the_last_failure_and_keeps_the_first_seq() -> None:
    assert "error_type = case when tasks.seq < excluded.seq then '' else" in UPSERT_DISPATCHED
    assert "traceback = case when tasks.seq < excluded.seq then '' else" in UPSERT_DISPATCHED
    assert "first_seq = least(tasks.first_seq, excluded.first_seq)" in UPSERT_DISPATCHED


def test_a_start_names_its_attempt() -> None:
    body = ev.TaskStarted("wf", "m", 4, 2, 5_000, "w-1")
    steps = dict(core_plan(ev.HistoryEvent("wf", 9, body)))
    assert steps[TASK_STARTED] == ("wf", "m[4]", 9, "w-1", ts(5_000), 2)
