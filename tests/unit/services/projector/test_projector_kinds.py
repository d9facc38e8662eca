"""What the node kinds' events write to the projection: the statements ``plan`` picks
for each (the SQL itself runs on PostgreSQL in ``tests/e2e/test_kind_views.py``)."""

from __future__ import annotations

import typing
from datetime import UTC, datetime

from headwater.core import events as ev
from headwater.core import registry
from services.projector import kinds as k
from services.projector import schedules as sc
from services.projector import statements as st
from services.projector.code_steps import CODE_STATEMENTS, OWN_STEPS_CLOSED
from services.projector.restarts import RESTART_STATEMENTS
from services.projector.writer import STATEMENTS, plan
from tests.unit.headwater.codec_samples import kind_body_samples

WF, T = "wf-1", 1_800_000_000_000
AT = datetime.fromtimestamp(T / 1000, tz=UTC)


def sqls(body: ev.Body, seq: int = 5) -> list[str]:
    return [sql for sql, _ in plan(ev.HistoryEvent(WF, seq, body))]


def args_of(body: ev.Body, sql: str, seq: int = 5) -> tuple[typing.Any, ...]:
    (args,) = [a for s, a in plan(ev.HistoryEvent(WF, seq, body)) if s == sql]
    return args


HISTORY_KINDS = {ev.ConditionEvaluated, *registry.event_units()} - {ev.MapExpanded}
"""The node kinds' history events, and ``when``'s (a map's ``MapExpanded`` is projected
with the nodes' and tasks' statements, ``statements.py``)."""


def test_every_history_event_of_the_kinds_writes_more_than_its_event_row() -> None:
    samples = [b for b in kind_body_samples() if type(b) in HISTORY_KINDS]
    assert {type(b) for b in samples} == HISTORY_KINDS
    for body in samples:
        written = sqls(body)
        assert written[:2] == [st.INSERT_EVENT, st.BUMP_WORKFLOW], type(body)
        assert set(written[2:]) & set(k.KIND_STATEMENTS), type(body)


def test_every_statement_is_applied_once_per_batch_in_one_order() -> None:
    assert len(set(STATEMENTS)) == len(STATEMENTS)
    code_end = len(STATEMENTS) - len(RESTART_STATEMENTS)
    kinds_end = code_end - len(CODE_STATEMENTS)
    assert STATEMENTS[kinds_end - len(k.KIND_STATEMENTS):kinds_end] == k.KIND_STATEMENTS
    assert STATEMENTS[kinds_end:code_end] == CODE_STATEMENTS  # a code run's own steps
    assert STATEMENTS[code_end:] == RESTART_STATEMENTS  # last: see restarts.py
    assert STATEMENTS.index(st.UPSERT_NODE) < STATEMENTS.index(k.SET_CONDITION)
    assert STATEMENTS.index(k.UPSERT_WAIT) < STATEMENTS.index(k.WAIT_SIGNALLED) < STATEMENTS.index(
        k.CLOSE_NODE_WAITS) < STATEMENTS.index(k.CLOSE_OPEN_WAITS)
    assert STATEMENTS.index(k.INSERT_SIGNAL) < STATEMENTS.index(k.SIGNAL_CONSUMED)


def test_a_child_links_its_row_to_the_parent_attempt() -> None:
    body = ev.ParentLinked(WF, "parent-1", "c", 2, 3, T)
    assert args_of(body, k.SET_PARENT) == (WF, "parent-1", "c", 2, 3)


def test_a_wait_runs_its_node_and_opens_a_wait_row_per_instance() -> None:
    body = ev.WaitStarted(WF, "approve", 1, "approval", T, T + 60_000)
    assert sqls(body)[2:] == [st.UPSERT_NODE, k.UPSERT_WAIT]
    assert args_of(body, st.UPSERT_NODE) == (WF, "approve", "running", None, "", 5)
    assert args_of(body, k.UPSERT_WAIT) == (
        WF, "approve[1]", "approve", 1, "approval", AT,
        datetime.fromtimestamp((T + 60_000) / 1000, tz=UTC), 5)
    forever = ev.WaitStarted(WF, "approve", None, "approval", T)
    assert args_of(forever, k.UPSERT_WAIT)[1] == "approve"
    assert args_of(forever, k.UPSERT_WAIT)[6] is None


def test_a_consumed_signal_ends_its_wait_and_marks_the_signal() -> None:
    body = ev.SignalConsumed(WF, "approve", None, "approval", "s1", T, {"ok": True})
    assert args_of(body, k.WAIT_SIGNALLED, seq=9) == (WF, "approve", 9, "s1", {"ok": True}, AT)
    assert args_of(body, k.SIGNAL_CONSUMED, seq=9) == (WF, "approval", None, "s1", "approve", 9)


def test_recorded_and_discarded_signals_get_a_row_by_seq() -> None:
    sent = ev.SignalSent(WF, "approval", T, 2, "s1", {"ok": False})
    assert args_of(sent, k.INSERT_SIGNAL, seq=4) == (
        WF, 4, "approval", 2, "s1", "received", "", {"ok": False}, AT)
    late = ev.SignalDiscarded(WF, "approval", None, "s2", T, "the wait timed out")
    assert args_of(late, k.INSERT_SIGNAL, seq=8) == (
        WF, 8, "approval", None, "s2", "discarded", "the wait timed out", None, AT)


def test_only_a_wait_timer_times_a_wait_out() -> None:
    assert args_of(ev.TimerFired(WF, "wait:approve[0]", T), k.WAIT_TIMED_OUT) == (
        WF, "approve[0]", 5, AT)
    for other in ("sleep:pause", "retry:a:2", "deadline:a:1"):
        assert k.WAIT_TIMED_OUT not in sqls(ev.TimerFired(WF, other, T))


def test_a_node_end_and_a_workflow_end_close_open_waits() -> None:
    assert args_of(ev.NodeFinished(WF, "approve", "failed", T), k.CLOSE_NODE_WAITS) == (
        WF, "approve", 5, AT)
    for end in (ev.WorkflowSucceeded(WF, T, 1), ev.WorkflowFailed(WF, T, "x"),
                ev.WorkflowCancelled(WF, T, "asked")):
        assert args_of(end, k.CLOSE_OPEN_WAITS) == (WF, 5, AT)
        assert sqls(end)[-3:] == [k.CLOSE_OPEN_WAITS, sc.SCHEDULE_ENDED,  # a schedule's row
                                  OWN_STEPS_CLOSED]  # a code run's sleeps and waits


def test_a_sleep_runs_its_node_until_its_wake_up() -> None:
    body = ev.SleepStarted(WF, "pause", T, T + 3000)
    assert sqls(body)[2:] == [st.UPSERT_NODE, k.SET_WAKE_AT]
    assert args_of(body, k.SET_WAKE_AT) == (
        WF, "pause", datetime.fromtimestamp((T + 3000) / 1000, tz=UTC))


def test_a_condition_keeps_its_value_on_a_pending_node_row() -> None:
    body = ev.ConditionEvaluated(WF, "refund", T, False)
    assert args_of(body, st.UPSERT_NODE) == (WF, "refund", "pending", None, "", 5)
    assert args_of(body, k.SET_CONDITION) == (WF, "refund", False)


def test_a_loop_step_gets_a_row() -> None:
    tool = ev.LoopStepDecided(WF, "agent", 2, T, tool="search", input={"q": "x"}, spend=1.5)
    assert args_of(tool, k.UPSERT_STEP) == (WF, "agent", 2, "search", {"q": "x"}, False, None,
                                            1.5, AT, 5)
    done = ev.LoopStepDecided(WF, "agent", 3, T, finish=True, output={"answer": 42})
    assert args_of(done, k.UPSERT_STEP)[3:8] == ("", None, True, {"answer": 42}, 0.0)


def test_core_events_keep_their_statements_alone() -> None:
    assert sqls(ev.TaskHeartbeated(WF, "a", None, 1, T)) == [st.INSERT_EVENT, st.BUMP_WORKFLOW]
    assert sqls(ev.MapExpanded(WF, "m", 3, T))[2:] == [st.UPSERT_NODE]


def test_a_deadline_and_a_callers_link_write_their_columns() -> None:
    deadline = ev.DeadlineSet(WF, T + 60_000, T)
    assert sqls(deadline)[2:] == [k.SET_DEADLINE]
    assert args_of(deadline, k.SET_DEADLINE) == (
        WF, datetime.fromtimestamp((T + 60_000) / 1000, tz=UTC))
    caller = ev.CallerLinked(WF, "p", "fetch", 2, 1, T)
    assert sqls(caller)[2:] == [k.SET_PARENT]  # a parent's children are the rows naming it
    assert args_of(caller, k.SET_PARENT) == (WF, "p", "fetch", 2, 1)
    assert sqls(ev.CallLinked(WF, "c", "fetch", None, 1, T))[2:] == []  # its event row only
