"""What the projection should hold for a history, and how rows differ from it.

Whether the real projection agrees with these expectations is checked on PostgreSQL in
``tests/e2e/test_audit_tools.py`` for every recorded scenario.
"""

from __future__ import annotations

import kind_histories
from machine_harness import T0, Run, cancel, fail, fired, ok, run, submit
from test_machine_runs import BUSY, DIAMOND, RETRYING

from headwater.core import events as ev
from ops.expected_rows import KindRows, ProjectionRows, diff_rows, expected_rows
from ops.history import fold
from ops.jsondiff import ABSENT


def rows_of(inputs: list[ev.Input]) -> ProjectionRows:
    history = run(inputs).history
    return expected_rows(fold(history).state, history)


def test_a_task_waiting_to_retry_counts_under_its_next_attempt() -> None:
    waiting = rows_of([submit(RETRYING), fail("a", at=T0 + 10)])
    assert waiting.tasks == {"a": {"status": "retry_wait", "attempt": 2}}
    retried = rows_of([submit(RETRYING), fail("a", at=T0 + 10), fired("retry:a:2", T0 + 5000)])
    assert retried.tasks == {"a": {"status": "dispatched", "attempt": 2}}


def test_a_task_cancelled_while_waiting_keeps_its_next_attempt() -> None:
    rows = rows_of([submit(BUSY, {"xs": [1, 2]}), fail("a"), cancel()])
    assert rows.tasks["a"] == {"status": "cancelled", "attempt": 2}
    assert rows.workflow == {"status": "cancelled", "seq": rows.seq, "output": None,
                             "error": "user asked"}
    assert rows.nodes["a"]["status"] == "cancelled"
    assert rows.nodes["z"]["status"] == "cancelled"  # never started, but finished


def test_pending_nodes_have_no_row_and_every_event_has_one() -> None:
    inputs: list[ev.Input] = [submit(DIAMOND), ok("a", 1)]
    history = run(inputs).history
    rows = rows_of(inputs)
    assert set(rows.nodes) == {"a", "b", "c"}
    assert rows.nodes["a"] == {"status": "succeeded", "total": None, "error": ""}
    assert rows.events == {e.seq: e.type for e in history}
    assert rows.workflow is not None and rows.workflow["status"] == "running"


def test_a_succeeded_workflow_row_has_its_output() -> None:
    rows = rows_of([submit(DIAMOND), ok("a", 1), ok("b", "B"), ok("c", "C"), ok("d", "D")])
    assert rows.workflow == {"status": "succeeded", "seq": rows.seq, "output": {"d": "D"},
                             "error": ""}


def test_expected_rows_of_nothing_are_empty() -> None:
    assert expected_rows(None, []) == ProjectionRows()
    assert not ProjectionRows().held and ProjectionRows().seq == 0


def test_row_differences_are_named_by_table_key_and_column() -> None:
    inputs: list[ev.Input] = [submit(DIAMOND), ok("a", 1)]
    want = rows_of(inputs)
    have = rows_of(inputs)
    assert diff_rows(want, have) == []
    have.tasks["b"]["status"] = "failed"
    del have.nodes["c"]
    have.events[99] = "TaskStarted"
    assert have.workflow is not None
    have.workflow["error"] = "?"
    assert diff_rows(want, have) == [
        ("workflows.error", "", "?"),
        ("nodes[c]", want.nodes["c"], ABSENT),
        ("tasks[b].status", "dispatched", "failed"),
        ("events[99]", ABSENT, "TaskStarted"),
    ]


def test_the_gateways_claim_is_not_compared_before_anything_is_projected() -> None:
    claim = ProjectionRows(workflow={"status": "accepted", "seq": 0, "output": None,
                                     "error": ""})
    assert claim.held and claim.seq == 0
    assert diff_rows(ProjectionRows(), claim) == []
    assert diff_rows(rows_of([submit(DIAMOND)]), claim)[0][0].startswith("workflows.")


def kind_rows_of(result: Run) -> KindRows:
    rows = expected_rows(fold(result.history).state, result.history)
    assert rows.kinds is not None
    return rows.kinds


def test_a_wait_signalled_a_sleep_and_conditions_have_their_rows() -> None:
    result = kind_histories.waited()
    rows = expected_rows(fold(result.history).state, result.history)
    assert set(rows.nodes) == {"approve", "pause", "refund", "ship"}
    assert rows.nodes["refund"]["status"] == "skipped"
    assert rows.kinds == KindRows(
        nodes={"pause": {"condition": None, "wake_at_ms": T0 + 5010},
               "refund": {"condition": False, "wake_at_ms": None},
               "ship": {"condition": True, "wake_at_ms": None}},
        waits={"approve": {"signal": "approval", "status": "signalled", "signal_id": "s1"}},
        signals={3: {"name": "approval", "index": None, "signal_id": "s1",
                     "status": "consumed", "node": "approve"}})


def test_a_condition_alone_gives_its_node_a_pending_row() -> None:
    result = kind_histories.waited()
    prefix = [e for e in result.history if e.seq <= 9]  # refund's ConditionEvaluated
    rows = expected_rows(fold(prefix).state, prefix)
    assert rows.nodes["refund"] == {"status": "pending", "total": None, "error": ""}


def test_signals_before_and_after_their_waits() -> None:
    kinds = kind_rows_of(kind_histories.per_item())
    assert kinds.waits == {
        "approve[0]": {"signal": "approval", "status": "signalled", "signal_id": "s0"},
        "approve[1]": {"signal": "approval", "status": "signalled", "signal_id": "early"}}
    assert {seq: (s["signal_id"], s["status"], s["node"]) for seq, s in kinds.signals.items()} == {
        3: ("early", "consumed", "approve"), 10: ("s0", "consumed", "approve"),
        14: ("late", "discarded", "")}


def test_a_timed_out_wait_and_the_waits_a_workflows_end_closes() -> None:
    assert kind_rows_of(kind_histories.timed_out()).waits == {
        "approve": {"signal": "approval", "status": "timed_out", "signal_id": ""}}
    cancelled = run([submit(kind_histories.FOR_EVER), cancel(at=T0 + 50)])
    assert kind_rows_of(cancelled).waits["approve"]["status"] == "ended"
    waiting = run([submit(kind_histories.FOR_EVER)])
    assert kind_rows_of(waiting).waits["approve"]["status"] == "waiting"


def test_loop_steps_and_a_childs_parent() -> None:
    assert kind_rows_of(kind_histories.looped()).steps == {
        "agent/0": {"tool": "search", "finish": False},
        "agent/1": {"tool": "", "finish": True}}
    assert kind_rows_of(kind_histories.child()).parent == {
        "workflow_id": "p", "node": "c", "index": None, "attempt": 1}


def test_the_kinds_rows_are_compared_once_they_are_read() -> None:
    result = kind_histories.per_item()
    want = expected_rows(fold(result.history).state, result.history)
    unread = expected_rows(fold(result.history).state, result.history)
    unread.kinds = None
    assert diff_rows(want, unread) == []
    have = expected_rows(fold(result.history).state, result.history)
    assert have.kinds is not None and diff_rows(want, have) == []
    have.kinds.waits["approve[0]"]["status"] = "waiting"
    del have.kinds.signals[14]
    have.kinds.parent = {"workflow_id": "x", "node": "c", "index": None, "attempt": 1}
    have.kinds.steps["agent/0"] = {"tool": "search", "finish": False}
    have.kinds.nodes["pause"] = {"condition": None, "wake_at_ms": 5}
    assert diff_rows(want, have) == [
        ("parent", ABSENT, have.kinds.parent),
        ("kind_nodes[pause]", ABSENT, {"condition": None, "wake_at_ms": 5}),
        ("waits[approve[0]].status", "signalled", "waiting"),
        ("signals[14]", want.kinds.signals[14] if want.kinds else None, ABSENT),
        ("steps[agent/0]", ABSENT, {"tool": "search", "finish": False}),
    ]
    assert want.to_json()["kinds"]["signals"]["14"]["status"] == "discarded"


def test_a_second_signal_kept_for_a_wait_is_discarded() -> None:
    kinds = kind_rows_of(kind_histories.buffered())
    assert {seq: (s["status"], s["node"]) for seq, s in kinds.signals.items()} == {
        3: ("consumed", "approve"), 4: ("discarded", "")}


def test_a_schedules_ended_runs_keep_their_rows_though_they_left_the_state() -> None:
    kid = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}
    doc = {"name": "schedule:s", "nodes": [{"id": "fire", "kind": "schedule",
                                            "cron": "* * * * * */2", "workflow": kid,
                                            "overlap": "allow"}]}
    wf = "wf-1"
    history = run([ev.WorkflowSubmitted(wf, doc, None, T0),
                   fired("schedule:fire", T0 + 2000),
                   ev.TaskSucceeded(wf, "fire", 0, 1, T0 + 2500, None),
                   fired("schedule:fire", T0 + 4000),
                   ev.TaskFailed(wf, "fire", 1, 1, T0 + 4500, "boom", "ChildWorkflowFailed", True),
                   fired("schedule:fire", T0 + 6000)]).history
    state = fold(history).state
    assert state is not None and list(state.tasks) == ["fire[2]"]
    assert expected_rows(state, history).tasks == {
        "fire[0]": {"status": "succeeded", "attempt": 1},
        "fire[1]": {"status": "failed", "attempt": 1},
        "fire[2]": {"status": "dispatched", "attempt": 1}}


def test_a_nul_the_projector_stored_as_u_fffd_is_no_difference() -> None:
    """PostgreSQL holds no U+0000: the projection has U+FFFD where the history has one
    (a task returned ``"a\\x00b"``); ``replay`` must not report that healthy run."""
    want = ProjectionRows(workflow={"status": "succeeded", "seq": 5,
                                    "output": {"s": ["a\x00b"]}, "error": ""})
    stored = ProjectionRows(workflow={"status": "succeeded", "seq": 5,
                                      "output": {"s": ["a\ufffdb"]}, "error": ""})
    assert diff_rows(want, stored) == []
    other = ProjectionRows(workflow={"status": "succeeded", "seq": 5,
                                     "output": {"s": ["ab"]}, "error": ""})
    assert diff_rows(want, other) == [("workflows.output.s[0]", "a\ufffdb", "ab")]
