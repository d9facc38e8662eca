"""Filling a table (``load.table``): the events reader counts each kind of workflow by
its id's tag once it reached its state, and names a record that should not be there (no
broker: records are built by hand)."""

from __future__ import annotations

from headwater.core import events as ev
from load import workloads
from load.kafka_io import Seen
from load.table import FINISHED_EVENT, WAITING_EVENT, Filled, Kinds, tag_of

KINDS = Kinds("t-done", "t-wait", workloads.skipped(), workloads.waiting())


def history(ms: int, wid: str, body: ev.Body) -> Seen:
    return Seen(ms, 0, ev.HistoryEvent(wid, 1, body))


def test_a_fill_counts_finished_and_waiting_workflows_by_their_ids() -> None:
    done, wait = workloads.new_id(KINDS.finished), workloads.new_id(KINDS.waiting)
    filled = Filled(KINDS)
    filled.see(history(10, done, ev.WorkflowAccepted(done, 10, {}, None)))
    filled.see(history(12, done, ev.WorkflowSucceeded(done, 12, None)))
    filled.see(history(11, wait, ev.WaitStarted(wait, "w", None, "never", 11)))
    filled.see(history(99, "bench-warm-0123", ev.WorkflowSucceeded("bench-warm-0123", 99, None)))
    assert filled.counts == {KINDS.finished: 1, KINDS.waiting: 1}
    assert filled.last_ms == 12 and filled.wrong == []


def test_a_dispatched_or_ended_fill_workflow_is_wrong() -> None:
    done, wait = workloads.new_id(KINDS.finished), workloads.new_id(KINDS.waiting)
    filled = Filled(KINDS)
    filled.see(history(10, done, ev.TaskDispatched(done, "a", None, 1, "t", "cpu", None, 0)))
    filled.see(history(11, wait, ev.WorkflowFailed(wait, 11, "gone")))
    assert filled.wrong == [f"{done} TaskDispatched", f"{wait} WorkflowFailed"]
    assert not filled.counts


def test_each_kind_has_its_state_and_a_tag_is_read_off_the_id() -> None:
    assert KINDS.reached("t-done") == FINISHED_EVENT
    assert KINDS.reached("t-wait") == WAITING_EVENT
    assert KINDS.reached("other") is None and KINDS.reached(None) is None
    assert tag_of("bench-t-done-0123abcd") == "t-done"
    assert tag_of("fb-chain-001") is None
