"""A bulk operation's progress (``headwater.operations``): counted once per target, its
state done after the last, its record carrying everything to go on from, and the ids
its actions derive stable per operation and target."""

from __future__ import annotations

import re

from headwater import codec
from headwater.operations import (
    MAX_REASONS,
    OperationState,
    Outcome,
    Progress,
    cancel_reason,
    rerun_id,
    signal_id,
)
from headwater.topics import WORKFLOW_ID_PATTERN


def _progress(n: int = 3) -> Progress:
    return Progress("op-1", "cancel", {"reason": "r"}, {"label": ["team:a"]},
                    [f"wf-{i}" for i in range(n)], "acme", 1000)


def test_each_target_is_counted_once_and_the_last_ends_it() -> None:
    p = _progress()
    assert p.state is OperationState.RUNNING
    p.count("wf-0", Outcome.DONE)
    p.count("wf-1", Outcome.SKIPPED, "already succeeded")
    assert p.state is OperationState.RUNNING and p.next == 2
    p.count("wf-2", Outcome.FAILED, "no wait takes it")
    assert p.state is OperationState.DONE
    assert p.counts == {"done": 1, "skipped": 1, "failed": 1}
    assert p.reasons == [{"id": "wf-1", "outcome": "skipped", "reason": "already succeeded"},
                         {"id": "wf-2", "outcome": "failed", "reason": "no wait takes it"}]
    assert _progress(0).state is OperationState.DONE  # nothing matched: done at once


def test_reasons_are_kept_up_to_a_limit_and_counted_past_it() -> None:
    p = _progress(MAX_REASONS + 5)
    for target in list(p.targets):
        p.count(target, Outcome.FAILED, "x")
    assert len(p.reasons) == MAX_REASONS and p.counts["failed"] == MAX_REASONS + 5


def test_a_record_holds_what_going_on_needs() -> None:
    p = _progress()
    p.count("wf-0", Outcome.DONE)
    record = codec.decode(codec.encode(p.record(2000)))
    assert (record.operation_id, record.state, record.tenant) == ("op-1", "running", "acme")
    again = Progress.from_record(record)
    assert again == p and again.next == 1


def test_the_ids_of_an_operations_actions() -> None:
    assert cancel_reason("op-1", "") == "bulk operation op-1"
    assert cancel_reason("op-1", "rebuilt") == "bulk operation op-1: rebuilt"
    assert signal_id("op-1") == "op.op-1"
    assert rerun_id("op-1", "wf-a") == rerun_id("op-1", "wf-a")
    assert len({rerun_id("op-1", "wf-a"), rerun_id("op-1", "wf-b"),
                rerun_id("op-2", "wf-a")}) == 3
    assert re.fullmatch(WORKFLOW_ID_PATTERN, rerun_id("op-1", "wf-a"))
