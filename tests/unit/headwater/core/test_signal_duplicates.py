"""A copy of a signal whose ``signal_id`` the workflow took is a duplicate: ``decide``
steps it to nothing while the workflow runs, once it has ended, and once it was purged
(by the marker's signal filter); a signal it never took is still refused after its end.
Given a history, when a signal, then what it did (a table)."""

from __future__ import annotations

import pytest
from machine_harness import T0, WF, submit

from headwater.core import events as ev
from headwater.core.machine import Context, decide
from headwater.core.retention import dump_marker, refused_after_purge, signal_filter, took_signal
from headwater.core.state import WorkflowState

WAIT = {"name": "w", "nodes": [{"id": "w", "kind": "wait", "signal": "go"},
                               {"id": "after", "needs": ["w"], "task": "t.after"}]}
ONE_WAIT = {"name": "w", "nodes": [{"id": "w", "kind": "wait", "signal": "go"}]}


def _signal(signal_id: str, at: int) -> ev.SignalSent:
    return ev.SignalSent(WF, "go", at, None, signal_id, {})


def _fold(spec: dict[str, object], *inputs: ev.Input) -> WorkflowState:
    state: WorkflowState | None = None
    for item in (submit(spec), *inputs):
        decision = decide(state, item, Context())
        assert decision.step is not None and decision.refused is None, decision
        state = decision.step.state
    assert state is not None
    return state


def _outcome(state: WorkflowState | None, item: ev.Input, context: Context) -> str:
    decision = decide(state, item, context)
    if decision.refused is not None:
        return "refused"
    assert decision.step is None or not decision.step.events, decision
    return "nothing"


RUNNING = _fold(WAIT, _signal("s-1", T0 + 10))
ENDED = _fold(ONE_WAIT, _signal("s-1", T0 + 10))
MARKER = dump_marker(ENDED, T0 + 5_000)


@pytest.mark.parametrize(("given", "state", "context", "signal_id", "then"), [
    ("running, took s-1", RUNNING, Context(), "s-1", "nothing"),
    ("ended, took s-1", ENDED, Context(), "s-1", "nothing"),
    ("purged, took s-1", None, Context(marker=MARKER), "s-1", "nothing"),
    ("ended, never sent s-2", ENDED, Context(), "s-2", "refused"),
    ("purged, never sent s-2", None, Context(marker=MARKER), "s-2", "refused"),
])
def test_a_copy_of_a_signal_taken_changes_nothing(
        given: str, state: WorkflowState | None, context: Context, signal_id: str,
        then: str) -> None:
    assert ENDED.status.terminal and not RUNNING.status.terminal
    assert _outcome(state, _signal(signal_id, T0 + 6_000), context) == then, given


def test_twelve_copies_around_the_end_leave_one_consumption_and_no_refusal() -> None:
    """Copies race the run's end: the first is consumed and ends the run; the eleven
    others, applied before and after that end, record nothing and refuse nothing."""
    state: WorkflowState | None = None
    events: list[ev.HistoryEvent] = []
    for item in (submit(ONE_WAIT), *[_signal("s-1", T0 + 10 + i) for i in range(12)]):
        decision = decide(state, item, Context())
        assert decision.refused is None and decision.step is not None, decision
        state, events = decision.step.state, events + decision.step.events
    assert state is not None and state.status.terminal
    assert [type(e.body).__name__ for e in events].count("SignalConsumed") == 1
    assert [type(e.body).__name__ for e in events].count("SignalSent") == 1


def test_the_signal_filter_knows_every_id_it_was_given_and_stays_small() -> None:
    ids = [f"sig-{i}" for i in range(10)]
    raw = signal_filter(ids)
    assert len(raw) == 32
    marker = dump_marker(_fold(ONE_WAIT, _signal("a", T0 + 1)), T0 + 5_000)
    assert took_signal(marker, "a") and not took_signal(marker, "")
    others = sum(took_signal(b'{"signals": "%s"}' % raw.encode(), f"x-{i}") for i in range(1000))
    assert others < 30  # false positives, bounded: those change nothing instead of refused
    assert not took_signal(dump_marker(_fold(WAIT), T0), "a")  # no filter: knows none


def test_the_refusal_after_a_purge_still_names_the_purge() -> None:
    item = _signal("s-2", T0 + 6_000)
    assert decide(None, item, Context(marker=MARKER)).refused == refused_after_purge(item, MARKER)
