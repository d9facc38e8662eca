"""What the projection should hold for a history, and how rows differ from it.

Whether the real projection agrees with these expectations is checked on PostgreSQL in
``tests/e2e/test_audit_tools.py`` for every recorded scenario.
"""

from __future__ import annotations

from machine_harness import T0, cancel, fail, fired, ok, run, submit
from test_machine_runs import BUSY, DIAMOND, RETRYING

from headwater.core import events as ev
from ops.expected_rows import ProjectionRows, diff_rows, expected_rows
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
