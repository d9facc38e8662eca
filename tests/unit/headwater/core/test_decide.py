"""The core's one call per input, ``machine.decide`` (given state and context, when an
input, then a decision), and ``failed`` / ``oversized``: the screen's outcomes are data
(a purge, a renewal, a refusal with the report for a refused child's parent), the step's
events come with the stops fencing sends, and replaying a workflow's inputs with their
contexts through ``decide`` reproduces its events."""

from __future__ import annotations

import dataclasses

import orjson
from machine_harness import T0, WF, replay, snapshot, submit

from headwater.core import events as ev
from headwater.core.machine import (
    DEFERRED_WINDOW_MS,
    MAX_DEFERRED,
    Context,
    Decision,
    LeaseSeen,
    decide,
    failed,
    oversized,
)
from headwater.core.machine.conflicts import CHILD_CONFLICT
from headwater.core.retention import RETENTION_TIMER, dump_marker, refused_after_purge
from headwater.core.state import WorkflowState

JOB = {"name": "j", "nodes": [{"id": "a", "task": "t.a", "heartbeat_timeout": 2,
                               "retry": {"max_attempts": 1}}]}
WAIT = {"name": "w", "nodes": [{"id": "w", "kind": "wait", "signal": "go"}]}
LEASE = "lease:a:1"
OFF = Context(history_heartbeats=False)
PLAIN = Context()


def _run(spec: dict[str, object], *inputs: ev.Input, context: Context = PLAIN,
         first: ev.Input | None = None,
         ) -> tuple[WorkflowState | None, list[ev.HistoryEvent]]:
    state: WorkflowState | None = None
    history: list[ev.HistoryEvent] = []
    for item in (first or submit(spec), *inputs):
        decision = decide(state, item, context)
        assert decision.step is not None, decision
        state = decision.step.state
        history += decision.step.events
    return state, history


def _started() -> WorkflowState:
    state, _ = _run(JOB, ev.TaskStarted(WF, "a", None, 1, T0 + 10))
    assert state is not None
    return state


def _ended() -> WorkflowState:
    state, _ = _run(JOB, ev.TaskSucceeded(WF, "a", None, 1, T0 + 20, 1))
    assert state is not None and state.status.terminal
    return state


def test_a_purge_request_is_taken_when_due_and_never_stepped() -> None:
    ended = _ended()
    fired = ev.TimerFired(WF, RETENTION_TIMER, ended.updated_at_ms + 1_000)
    assert decide(ended, fired, Context(retention_ms=1_000)) == Decision(purge=True)
    assert decide(ended, fired, Context(retention_ms=1_001)) == Decision()
    assert decide(ended, fired, Context()) == Decision()  # retention off
    marker = dump_marker(ended, fired.at_ms)
    assert decide(ended, fired, Context(retention_ms=1, marker=marker)) == Decision()
    assert decide(_started(), fired, Context(retention_ms=1)) == Decision()


def _outcome(decision: Decision) -> str:
    """What an input did to an ended workflow: refused, or nothing (no events)."""
    if decision.refused:
        return "refused"
    assert decision.step is None or not decision.step.events, decision
    return "nothing"


def test_an_input_for_a_purged_workflow_does_what_it_did_before_the_purge() -> None:
    """Across the retention's grace: a duplicate of the submission, a late report, a
    timer, a cancel change nothing before and after the purge; a signal and a submission
    with another body (or another parent, or another tenant) are refused, after it with
    the purge's reason and no report."""
    ended = _ended()
    marker = dump_marker(ended, T0 + 5_000)
    at = T0 + 6_000
    other_body = submit({**JOB, "name": "other"})
    child = ev.ChildSubmitted(WF, "p", "c", None, 1, JOB, None, at, None)
    inputs: dict[str, ev.Input] = {
        "nothing": submit(JOB),
        "late report": ev.TaskSucceeded(WF, "a", None, 1, at, 2),
        "late heartbeat": ev.TaskHeartbeated(WF, "a", None, 1, at),
        "timer": ev.TimerFired(WF, LEASE, at),
        "cancel": ev.CancelRequested(WF, at, None),
        "signal": ev.SignalSent(WF, "go", at, {}),
        "other body": other_body,
        "other tenant": ev.WorkflowSubmitted(WF, JOB, None, at, "t-2"),
        "child": child,
    }
    refused = {"signal", "other body", "other tenant", "child"}
    for what, item in inputs.items():
        before = decide(_ended(), item, PLAIN)
        after = decide(None, item, Context(marker=marker))
        expected = "refused" if what in refused else "nothing"
        assert (_outcome(before), _outcome(after)) == (expected, expected), what
        if expected == "refused":
            assert after.refused == refused_after_purge(item, marker), what
        # The child's parent attempt is failed before and after the purge alike.
        assert (before.report is None) == (after.report is None), what
    assert decide(None, child, Context(marker=marker)).report == ev.TaskFailed(
        "p", "c", None, 1, at, f"child workflow {WF} was not started: "
        f"{refused_after_purge(child, marker)}", CHILD_CONFLICT, retryable=True)


def test_a_purged_childs_own_parent_attempt_is_not_failed_again() -> None:
    """The child of that very attempt ended and reported before its purge: a submission
    of it with another body is refused and fails nothing; the same one changes nothing."""
    child = ev.ChildSubmitted(WF, "p", "c", None, 1, JOB, None, T0, None)
    state, _ = _run(JOB, ev.TaskSucceeded(WF, "a", None, 1, T0 + 20, 1), first=child)
    assert state is not None and state.status.terminal
    marker = dump_marker(state, T0 + 5_000)
    other = dataclasses.replace(child, input={"other": 1}, at_ms=T0 + 6_000)
    assert decide(None, other, Context(marker=marker)) == Decision(
        refused=refused_after_purge(other, marker))
    assert decide(None, dataclasses.replace(child, at_ms=T0 + 6_000),
                  Context(marker=marker)) == Decision()


def test_a_marker_without_the_submission_digest_refuses_every_submission() -> None:
    marker = orjson.dumps({**orjson.loads(dump_marker(_ended(), T0 + 5_000)), "v": 1,
                           "submission": None})
    assert decide(None, submit(JOB), Context(marker=marker)) == Decision(
        refused=refused_after_purge(submit(JOB), marker))
    late = ev.TaskSucceeded(WF, "a", None, 1, T0 + 6_000, 2)
    assert decide(None, late, Context(marker=marker)) == Decision()


def test_a_heartbeat_out_of_the_history_moves_its_lease_and_records_nothing() -> None:
    beat = ev.TaskHeartbeated(WF, "a", None, 1, T0 + 500)
    assert decide(_started(), beat, OFF) == Decision(renewal=(LEASE, T0 + 2_500))
    stale = ev.TaskHeartbeated(WF, "a", None, 1, T0 + 500)
    decision = decide(_ended(), stale, OFF)
    assert decision.renewal is None and decision.step is None
    assert [s.attempt for s in decision.stops] == [1]
    recorded = decide(_started(), beat, Context())
    assert recorded.step is not None and recorded.renewal is None


def test_a_lease_renewed_by_heartbeats_read_is_armed_again_not_applied() -> None:
    fired = ev.TimerFired(WF, LEASE, T0 + 2_100)
    seen = Context(history_heartbeats=False, lease=LeaseSeen(T0 + 3_000, 0))
    assert decide(_started(), fired, seen) == Decision(renewal=(LEASE, T0 + 3_000))
    taken_over = Context(history_heartbeats=False, lease=LeaseSeen(0, T0 + 1_000))
    assert decide(_started(), fired, taken_over) == Decision(renewal=(LEASE, T0 + 3_000))


def test_a_lease_that_ended_fails_the_attempt_and_stops_it() -> None:
    fired = ev.TimerFired(WF, LEASE, T0 + 2_100)
    decision = decide(_started(), fired, Context(lease=LeaseSeen(T0 + 2_000, 0)))
    assert decision.step is not None and decision.renewal is None
    assert any(isinstance(e.body, ev.TaskFailed) for e in decision.step.events)
    assert [(s.node, s.attempt) for s in decision.stops] == [("a", 1)]


def test_a_refused_signal_is_data() -> None:
    state, _ = _run(WAIT)
    decision = decide(state, ev.SignalSent(WF, "stop", T0 + 5, None, "s", {}), Context())
    assert decision.step is None and decision.report is None
    assert decision.refused is not None and "'stop'" in decision.refused


def test_a_child_id_another_run_holds_is_refused_with_the_parents_failure() -> None:
    squatter, _ = _run(WAIT)
    child = ev.ChildSubmitted(WF, "p", "c", None, 2, JOB, None, T0 + 7, None)
    decision = decide(squatter, child, Context())
    assert decision.refused is not None and decision.step is None
    assert decision.report == ev.TaskFailed(
        "p", "c", None, 2, T0 + 7, f"child workflow {WF} was not started: {decision.refused}",
        CHILD_CONFLICT, retryable=True)


def test_a_submission_takes_the_inputs_deferred_for_it() -> None:
    cancel = ev.CancelRequested(WF, T0 - 5, "early")
    assert decide(None, cancel, Context()).step is not None  # deferred by the step
    decision = decide(None, submit(JOB), Context(deferred=[cancel]))
    assert decision.started and decision.step is not None
    assert decision.step.state is not None and decision.step.state.status.value == "cancelled"


def test_inputs_deferred_long_before_the_submission_are_not_applied_to_it() -> None:
    """A cancel for an id nobody had submitted yet must not end a run submitted under
    that id much later; one that overtook its submission by moments still applies."""
    submitted = submit(JOB)
    stale = ev.CancelRequested(WF, submitted.at_ms - DEFERRED_WINDOW_MS - 1, "long ago")
    fresh = ev.SignalSent(WF, "go", submitted.at_ms - DEFERRED_WINDOW_MS, None, "s-1", {})
    decision = decide(None, submitted, Context(deferred=[stale, fresh]))
    assert decision.started and decision.step is not None
    assert decision.step.state is not None and decision.step.state.status.value == "running"
    [(item, why)] = decision.expired
    assert item == stale
    assert why == (f"CancelRequested for workflow {WF} arrived 600 s before its submission, "
                   "more than 600 s: it was sent for an earlier run of that id, never "
                   "submitted, and is not applied to this one")
    just_in_time = ev.CancelRequested(WF, submitted.at_ms - DEFERRED_WINDOW_MS, "in time")
    decision = decide(None, submitted, Context(deferred=[just_in_time]))
    assert decision.expired == () and decision.step is not None
    assert decision.step.state is not None and decision.step.state.status.value == "cancelled"


def test_inputs_deferred_past_the_limit_are_refused() -> None:
    waiting = [ev.CancelRequested(WF, T0 - i, "early") for i in range(MAX_DEFERRED)]
    one_less = decide(None, waiting[0], Context(deferred=waiting[1:]))
    assert one_less.step is not None and one_less.step.deferred
    decision = decide(None, ev.CancelRequested(WF, T0, "late"), Context(deferred=waiting))
    assert decision.step is None
    assert decision.refused == (f"{MAX_DEFERRED} inputs already wait for workflow {WF}, "
                                "which was never submitted")


def test_a_deferred_input_the_entry_would_not_fit_is_refused() -> None:
    """The shell measures the entry with the input kept (``deferred_bytes``); the core
    decides against the limit it is given."""
    cancel = ev.CancelRequested(WF, T0, "early")
    fits = decide(None, cancel, Context(deferred_bytes=1_000, max_entry_bytes=1_000))
    assert fits.refused is None and fits.step is not None and fits.step.deferred
    over = decide(None, cancel, Context(deferred_bytes=1_001, max_entry_bytes=1_000))
    assert over.step is None
    assert over.refused == (f"the inputs waiting for workflow {WF} would take 1001 bytes, "
                            "over the 1000 a table entry may take "
                            "(HEADWATER_MAX_MESSAGE_BYTES less a record's margin)")
    unbounded = decide(None, cancel, Context(deferred_bytes=10**9))
    assert unbounded.step is not None and unbounded.step.deferred
    # a step that defers nothing is not bounded by it
    started = decide(None, ev.WorkflowSubmitted(WF, JOB, None, T0, "t"),
                     Context(deferred_bytes=10**9, max_entry_bytes=1))
    assert started.refused is None and started.step is not None


def test_failed_and_oversized_fail_the_workflow_as_data() -> None:
    beat = ev.TaskHeartbeated(WF, "a", None, 1, T0 + 500)
    decision = failed(_started(), beat, "x" * 3_000)
    assert decision.step is not None and decision.step.state is not None
    assert decision.step.state.status.value == "failed"
    big = oversized(_started(), beat, 2_000_000, 1_048_576, 1_024)
    assert big.refused == (f"the snapshot of workflow {WF} would hold a table entry of "
                           "2000000 bytes, over the limit of 1048576 "
                           "(HEADWATER_MAX_MESSAGE_BYTES) less 1024")
    assert big.step is not None and not big.stops
    assert big.step.events[-1].body == ev.WorkflowFailed(WF, T0 + 500, big.refused)


def test_replaying_the_inputs_through_decide_reproduces_the_events() -> None:
    inputs = (ev.TaskStarted(WF, "a", None, 1, T0 + 10),
              ev.TaskHeartbeated(WF, "a", None, 1, T0 + 500),
              ev.TimerFired(WF, LEASE, T0 + 2_600))
    first, history = _run(JOB, *inputs)
    again, history_again = _run(JOB, *inputs)
    assert history == history_again and snapshot(first) == snapshot(again)
    assert snapshot(replay(history)) == snapshot(first)
