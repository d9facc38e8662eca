"""Which inputs are dead-lettered instead of stepped (``refusal``).

Part of the screen ``decide.decide`` runs before a step: a refused input records
nothing; the coordinator dead-letters it with the reason this module gives.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.caching import lookup_fault
from headwater.core.idempotency import conflict
from headwater.core.limits import (
    MAX_LIMIT,
    RESERVED_PREFIXES,
    permit_fault,
    reserved_id,
)
from headwater.core.signals import signal_fault
from headwater.core.state import WorkflowState


def refusal(state: WorkflowState | None, event: ev.Input) -> str | None:
    """Why ``event`` is dead-lettered instead of stepped, or None to step it.

    A submission, a cancel or a signal for a limiter's id (``limits.reserved_id``), and
    a limiter's input whose values a coordinator or the gateway would not send; a
    submission (or a child's) whose id names another run (``idempotency.conflict``;
    a refused child's parent attempt is then failed, ``conflicts.conflict_report``),
    a signal for a workflow that has ended (unless the workflow took its ``signal_id``
    already: a copy of a signal is a duplicate, stepped to nothing, ended or not), and
    a signal
    that no wait of its workflow can take (``signals.signal_fault``: no wait of that
    name, a bad index, a missing field or one of the wrong type). A signal for a
    workflow not submitted yet is not checked here: it waits for the submission.

    Args:
        state: the event's workflow (None: not submitted yet).
        event: an input, decoded and on its workflow's partition.

    Returns:
        The dead letter's reason, e.g. ``"SignalSent for workflow w-1 refused: signal
        'approval': missing required field 'approved'"``. A check that raises (a bug)
        refuses the signal as data, ``"... could not be checked: <error>"``: a bug must
        not stop the coordinator.
    """
    if isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted):
        return _reserved(event) or conflict(state, event)
    if not isinstance(event, ev.SignalSent) or state is None:
        return _reserved(event)  # a cancel or a signal for a limiter, a limiter's input
    if event.signal_id and event.signal_id in state.signal_ids:
        return None  # a copy of a signal it took: the step changes nothing
    what = f"SignalSent for workflow {event.workflow_id}"
    if state.status.terminal:  # recorded nowhere else: the loser of a race with the end
        return f"{what} refused: the workflow has already ended ({state.status.value})"
    try:
        fault = signal_fault(state, event)
    except Exception as e:  # a bug must not stop the coordinator: dead-letter the signal
        return f"{what} could not be checked: {type(e).__name__}: {e}"
    return None if fault is None else f"{what} refused: {fault}"


def _reserved(event: ev.Input) -> str | None:
    """Why a submission, a cancel or a signal for a limiter's id is refused: limiters
    are the coordinator's own (``limits.reserved_id``); why a limiter's input is
    (``_permit_fault``); None for any other."""
    if isinstance(event, ev.PermitRequested | ev.PermitReleased | ev.LimitDefined):
        return _permit_fault(event)
    if isinstance(event, ev.CacheLookedUp | ev.CacheReleased):
        fault = lookup_fault(event.workflow_id, event.ttl_ms if isinstance(
            event, ev.CacheLookedUp) else 0)
        return None if fault is None else (
            f"{type(event).__name__} for {event.workflow_id[:80]} refused: {fault}")
    if (isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted | ev.CancelRequested
                   | ev.SignalSent | ev.PauseRequested | ev.ResumeRequested)
            and reserved_id(event.workflow_id)):
        return (f"{type(event).__name__} for {event.workflow_id[:80]} refused: ids starting "
                f"{' or '.join(repr(p) for p in RESERVED_PREFIXES)} are the limiters' and "
                "the caches' (the coordinator's own), which are not submitted, cancelled "
                "or signalled")
    return None


def _permit_fault(event: ev.PermitRequested | ev.PermitReleased | ev.LimitDefined,
                  ) -> str | None:
    """Why a limiter's input is refused (``limits.permit_fault``: its values out of
    range, or its id no limiter's of its kind), or None."""
    what = f"{type(event).__name__} for {event.workflow_id[:80]} refused"
    if isinstance(event, ev.PermitReleased):
        units = event.units if event.units is not None else 0
        fault = (None if reserved_id(event.workflow_id) and 0 <= units <= MAX_LIMIT
                 else f"no limiter's id, or units {units} out of range")
    elif isinstance(event, ev.PermitRequested):
        fault = permit_fault(event.workflow_id, event.kind, event.limit, event.window_ms,
                             event.units)
    else:
        fault = permit_fault(event.workflow_id, event.kind, event.limit, event.window_ms, 0,
                             defining=True)
    return None if fault is None else f"{what}: {fault}"
