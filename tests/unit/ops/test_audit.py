"""Auditing one workflow: the history against the table's state and the projection's rows,
with a store behind the log compared at its own seq."""

from __future__ import annotations

from machine_harness import T0, run
from test_machine_runs import _scenario

from headwater.core import events as ev
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from ops.audit import Difference, Observed, audit, check_projection, check_table, diff_states
from ops.expected_rows import ProjectionRows, expected_rows
from ops.history import Recorded, fold
from ops.jsondiff import ABSENT
from services.coordinator.snapshot import dump_state, load_state

GRACE = 30_000
NAME = "retries exhausted"


def records(name: str = NAME, offset: int = 100) -> list[Recorded]:
    """The scenario's history as read from the log, one offset per event."""
    history = run(_scenario(name)).history
    return [Recorded(e, offset + i, e.body.at_ms) for i, e in enumerate(history)]


def state_at(recs: list[Recorded], seq: int | None = None) -> WorkflowState:
    state = fold([r.event for r in recs], seq).state
    assert state is not None
    return state


def copy(state: WorkflowState) -> WorkflowState:
    return load_state(dump_state(state))


def rows_at(recs: list[Recorded], seq: int) -> ProjectionRows:
    prefix = [r.event for r in recs if r.event.seq <= seq]
    return expected_rows(fold(prefix).state, prefix)


LATE = T0 + 10**9  # long after every event of the scenarios


def test_a_state_differs_from_itself_nowhere() -> None:
    state = state_at(records())
    assert diff_states(state, copy(state)) == []


def test_each_differing_field_of_the_table_is_named() -> None:
    state = state_at(records())
    other = copy(state)
    other.tasks["a"].status = TaskStatus.SUCCEEDED
    other.nodes["b"].error = "x"
    found = diff_states(state, other)
    assert [(d.path, d.expected, d.actual) for d in found] == [
        ("nodes.b.error", state.nodes["b"].error, "x"),
        ("tasks.a.status", "failed", "succeeded"),
    ]
    assert found[1].describe() == ('table: tasks.a.status: the log says "failed", the table '
                                   'has "succeeded"')


def test_a_table_at_the_logs_seq_that_matches() -> None:
    recs = records()
    check = check_table(recs, copy(state_at(recs)), "", LATE, GRACE)
    assert (check.differences, check.behind, check.seq, check.compared_at) == (
        [], False, len(recs), len(recs))


def test_a_table_behind_by_young_events_is_compared_at_its_seq() -> None:
    recs = records()
    behind = copy(state_at(recs, len(recs) - 2))
    young = recs[-2].timestamp_ms + 1000
    check = check_table(recs, behind, "", young, GRACE)
    assert check.behind and check.differences == [] and check.compared_at == len(recs) - 2
    assert "behind the log" in check.notes[0]
    behind.tasks["a"].attempt = 7  # wrong as well as behind: a difference at its seq
    assert [d.path for d in check_table(recs, behind, "", young, GRACE).differences] == [
        "tasks.a.attempt"]


def test_a_table_behind_for_longer_than_the_grace_is_a_difference() -> None:
    recs = records()
    check = check_table(recs, copy(state_at(recs, 3)), "", LATE, GRACE)
    assert not check.behind
    (d,) = check.differences
    assert (d.where, d.path, d.expected, d.actual) == ("table", "seq", len(recs), 3)
    assert "is at seq 3" in d.describe()


def test_a_table_ahead_of_the_log_or_missing_or_undecodable_is_a_difference() -> None:
    recs = records()
    ahead = check_table(recs[:4], copy(state_at(recs)), "", LATE, GRACE)
    assert "ahead of the log" in ahead.differences[0].describe()
    missing = check_table(recs, None, "", LATE, GRACE)
    assert "has nothing of the workflow" in missing.differences[0].describe()
    young = check_table(recs[:1], None, "", recs[0].timestamp_ms, GRACE)
    assert young.behind and young.differences == []
    broken = check_table(recs, None, "its definition entry is missing", LATE, GRACE)
    assert broken.held and broken.differences[0].describe() == (
        "table: its definition entry is missing")


def test_projection_rows_the_history_implies_match() -> None:
    recs = records("stdlib example with a retry")
    check = check_projection(recs, rows_at(recs, len(recs)), committed_offset=10**6)
    assert (check.differences, check.behind, check.compared_at) == ([], False, len(recs))


def test_a_tampered_projection_row_is_named() -> None:
    recs = records("stdlib example with a retry")
    rows = rows_at(recs, len(recs))
    rows.tasks["extract[0]"]["status"] = "failed"
    (d,) = check_projection(recs, rows, None).differences
    assert (d.where, d.path, d.expected, d.actual) == (
        "projection", "tasks[extract[0]].status", "succeeded", "failed")


def test_a_projection_behind_is_allowed_where_the_projector_has_not_consumed() -> None:
    recs = records()
    rows = rows_at(recs, 5)
    first_missing = recs[5].offset  # seq 6
    for committed in (None, first_missing, first_missing - 3):
        check = check_projection(recs, rows, committed)
        assert check.behind and check.differences == [] and check.compared_at == 5, committed
        assert "eventually consistent" in check.notes[0] or committed is None
    lost = check_projection(recs, rows, first_missing + 1)
    assert not lost.behind
    assert "should have at least seq 6" in lost.differences[0].describe()


def test_nothing_anywhere_is_an_unknown_workflow() -> None:
    report = audit("nope", Observed([], None, "", ProjectionRows(), None), LATE, GRACE)
    assert not report.known and report.differences == [] and report.notes == []


def test_rows_without_a_history_make_it_known_and_different() -> None:
    recs = records()
    report = audit("wf-1", Observed([], None, "", rows_at(recs, len(recs)), None), LATE, GRACE)
    assert report.known
    assert "ahead of the log" in report.differences[0].describe()


def test_a_whole_audit_of_a_consistent_workflow_with_duplicates() -> None:
    recs = records()
    report = audit("wf-1", Observed([*recs, *recs[3:6]], copy(state_at(recs)), "",
                                    rows_at(recs, len(recs)), recs[-1].offset + 1),
                   LATE, GRACE)
    assert report.known and report.differences == [] and report.notes == []
    assert len(report.events) == len(recs)
    assert report.table.seq == report.projection.seq == len(recs)


def test_conflicts_undecodable_records_and_unfoldable_histories_are_log_differences() -> None:
    recs = records()
    forged = Recorded(ev.HistoryEvent("wf-1", 2, ev.WorkflowFailed("wf-1", T0, "x")), 999)
    report = audit("wf-1", Observed([*recs, forged], copy(state_at(recs)), "",
                                    rows_at(recs, len(recs)), None, ["undecodable record at x"]),
                   LATE, GRACE)
    assert [d.where for d in report.differences] == ["log", "log"]
    assert "seq 2 recorded twice" in report.differences[1].describe()
    gap = audit("wf-1", Observed([*recs[:2], *recs[3:]], None, "", ProjectionRows(), None),
                LATE, GRACE)
    assert "the history does not fold" in gap.differences[0].describe()
    assert gap.notes == ["not compared: the history does not fold"] * 2


def test_differences_are_json_ready() -> None:
    d = Difference("projection", "events[3]", ABSENT, "TaskStarted")
    assert d.to_json() == {"where": "projection", "path": "events[3]", "expected": "<absent>",
                           "actual": "TaskStarted", "message": d.describe()}
    assert "the log says nothing" in d.describe()
