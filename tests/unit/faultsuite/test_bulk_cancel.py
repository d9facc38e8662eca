"""The fault suite's bulk cancel (``faultsuite.bulk``): every batch has its labelled
workflows, submitted with the label; the gateway kill point of operations has its plan;
and the audit passes a clean cancel, counts cancels sent again, and names each way the
operation can go wrong (a run cancelled twice or not at all, a run without the label
touched, counts that do not add up)."""

from __future__ import annotations

from typing import Any

import pytest

from faultsuite.batch import make_batch
from faultsuite.bulk import LABEL, REASON, RUNS, BulkCancel, bulk_cancel
from faultsuite.suite import FULL, OPERATION_KILL, POINTS, QUICK, point_plan
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.operations import cancel_reason
from services.common import faults

TARGETS = ("fb-bulk-000", "fb-bulk-001", "fb-bulk-002")
OP = "fb-bulk-cancel"
DONE = {"state": "done", "matched": 3, "counts": {"done": 3, "skipped": 0, "failed": 0}}


def test_every_batch_ends_with_its_labelled_workflows() -> None:
    for size in (1, 12, 46):
        batch = make_batch("fb", size)
        labelled = [s for s in batch if s.shape == "bulk"]
        assert [s.id for s in labelled] == list(TARGETS)[:RUNS]
        assert all(s.body()["labels"] == {LABEL: "fb"} for s in labelled)
        assert all("labels" not in s.body() for s in batch if s.shape != "bulk")
    cancel = bulk_cancel("http://gw", make_batch("fb", 12), {})
    assert (cancel.targets, cancel.operation_id) == (frozenset(TARGETS), OP)
    body = cancel.body(dry_run=False)
    assert body["filter"] == {"label": [f"{LABEL}:fb"]} and body["action"] == "cancel"


def test_the_operation_kill_point_is_a_fault_point_killed_at_each_gateways_first_batch(
        ) -> None:
    assert OPERATION_KILL in faults.POINTS and OPERATION_KILL in POINTS
    assert faults.parse(f"{OPERATION_KILL}=1") == {OPERATION_KILL: (1, "kill")}
    plan = point_plan(OPERATION_KILL, kills=3)
    assert plan.faults == f"{OPERATION_KILL}=1"
    assert plan.schedule == {"gateway": [f"{OPERATION_KILL}=1"] * 2}
    assert plan.expect == (f"fault {OPERATION_KILL}",)
    assert OPERATION_KILL in [p.name for p in QUICK.plans()]
    assert [p.name for p in FULL.plans()].count(OPERATION_KILL) == FULL.runs


def _rec(value: Any, n: int = 0) -> Record:
    return Record(0, n, getattr(value, "workflow_id", ""), value, b"")


def _ended(wid: str, body: Any, seq: int = 2) -> Record:
    return _rec(ev.HistoryEvent(wid, seq, body))


def _cancel(doc: dict[str, Any]) -> BulkCancel:
    return BulkCancel("http://gw", "fb", frozenset(TARGETS), doc=doc)


REASON_OF_OP = cancel_reason(OP, REASON)


def _clean() -> tuple[list[Record], list[Record]]:
    """Each target cancelled once, the first one's cancel sent twice (a takeover), an
    unlabelled run succeeded."""
    events = [_ended(w, ev.WorkflowCancelled(w, 5, REASON_OF_OP)) for w in TARGETS]
    events.append(_ended("fb-chain-000", ev.WorkflowSucceeded("fb-chain-000", 5, {})))
    control = [_rec(ev.CancelRequested(w, 4, REASON_OF_OP)) for w in (*TARGETS, TARGETS[0])]
    return events, control


def test_a_clean_cancel_passes_and_counts_what_was_sent_again() -> None:
    events, control = _clean()
    figures, found = _cancel(DONE).audit(events, control)
    assert found == []
    assert (figures["cancels_sent"], figures["cancels_sent_again"]) == (4, 1)
    assert figures["operation"] == DONE


def test_the_audit_names_a_run_cancelled_twice_or_not_at_all() -> None:
    events, control = _clean()
    twice = [*events, _ended(TARGETS[0], ev.WorkflowCancelled(TARGETS[0], 6, REASON_OF_OP),
                             seq=3)]
    _, found = _cancel(DONE).audit(twice, control)
    assert len(found) == 1 and TARGETS[0] in found[0] and "exactly once" in found[0]
    again = [*events, events[0]]  # the same event published again (after_publish): one
    assert _cancel(DONE).audit(again, control)[1] == []
    _, found = _cancel(DONE).audit(events[1:], control)
    assert len(found) == 1 and TARGETS[0] in found[0]


def test_the_audit_names_a_run_without_the_label_touched() -> None:
    events, control = _clean()
    other = "fb-wait-009"
    _, found = _cancel(DONE).audit(
        [*events, _ended(other, ev.WorkflowCancelled(other, 5, REASON_OF_OP))],
        [*control, _rec(ev.CancelRequested(other, 4, REASON_OF_OP))])
    assert len(found) == 2 and all(other in f and "not labelled" in f for f in found)


@pytest.mark.parametrize("doc", [
    {**DONE, "state": "running"},
    {**DONE, "matched": 2},
    {**DONE, "counts": {"done": 2, "skipped": 0, "failed": 0}},
    {**DONE, "counts": {"done": 2, "skipped": 0, "failed": 1}},
])
def test_the_audit_names_an_operation_not_done_or_miscounted(doc: dict[str, Any]) -> None:
    events, control = _clean()
    _, found = _cancel(doc).audit(events, control)
    assert found and all(f.startswith("bulk: operation") for f in found)
