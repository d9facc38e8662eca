"""The fault suite's paused shape: its submission says when to pause and resume it, its
spec runs to the same output paused or not, and the audit names an attempt dispatched
while the run was paused."""

from __future__ import annotations

from machine_harness import T0, WF, ok, run, started, submit

from faultsuite.audit import audit_history
from faultsuite.batch import make_batch
from faultsuite.shapes import PAUSE_AFTER_S, PAUSED_FOR_S, Sizes, paused
from headwater.core import events as ev


def test_the_paused_shape_is_paused_then_resumed() -> None:
    [s] = [b for b in make_batch("t", 1, shapes=("paused",)) if b.shape == "paused"]
    assert s.shape == "paused" and s.pause == (PAUSE_AFTER_S, PAUSED_FOR_S)


def _history(pause: bool, running: bool = True) -> list[ev.HistoryEvent]:
    """The shape's run on the core, its tasks echoing ``digest`` as output: paused
    while ``a`` runs (its result is applied while paused), or before it started (it is
    recalled, and its next attempt runs after the resume)."""
    spec = paused(Sizes())
    inputs: list[ev.Input] = [submit(spec, {"seed": "s"})]
    if pause and running:
        inputs += [started("a", at=T0 + 5), ev.PauseRequested(WF, T0 + 10, "p"),
                   ok("a", "A", at=T0 + 100)]
    elif pause:
        inputs += [ev.PauseRequested(WF, T0 + 10, "p")]
    else:
        inputs += [ok("a", "A", at=T0 + 100)]
    if running or not pause:
        inputs += [ev.TimerFired(WF, "sleep:nap", T0 + 10_000)]
    if pause:
        inputs.append(ev.ResumeRequested(WF, T0 + 20_000, "r"))
    if pause and not running:
        inputs += [ok("a", "A", attempt=2, at=T0 + 25_000),
                   ev.TimerFired(WF, "sleep:nap", T0 + 26_000)]
    inputs += [ok("c", "C", at=T0 + 30_000), ok("b", "B", at=T0 + 30_000)]
    return run(inputs).history


def test_the_shape_ends_alike_paused_or_not_and_its_audit_is_clean() -> None:
    plain = audit_history(WF, _history(False))
    assert plain.violations() == [] and plain.outcome is not None
    for running in (True, False):
        held = audit_history(WF, _history(True, running))
        assert held.violations() == []
        assert held.outcome == plain.outcome
    assert plain.outcome.status == "succeeded"
    recalled = [e.body for e in _history(True, running=False)
                if isinstance(e.body, ev.DispatchRecalled)]
    assert [(b.node, b.attempt) for b in recalled] == [("a", 1)]


def test_the_audit_names_a_dispatch_while_paused() -> None:
    history = _history(True)
    resumed = next(i for i, e in enumerate(history) if e.type == "WorkflowResumed")
    # the resume's dispatch moved before it: as if a paused run had dispatched
    moved = [*history[:resumed], history[resumed + 1], history[resumed], *history[resumed + 2:]]
    renumbered = [ev.HistoryEvent(e.workflow_id, i + 1, e.body) for i, e in enumerate(moved)]
    audit = audit_history(WF, renumbered)
    assert audit.dispatched_paused and any("dispatched while paused" in v
                                            for v in audit.violations())
