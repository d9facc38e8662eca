"""The core's one entry for an input: screen it, then step it (``decide``).

The coordinator decodes an input, checks its producer's token (the edge), reads its
workflow's state and the few values only it can measure (``Context``), and asks
``decide``; it then carries out the ``Decision``: records the step's events, publishes
the stops and reports, dead-letters a refusal, moves a lease, purges. Everything that
decides a workflow's fate is here, pure, so replaying a workflow's inputs (with the
same contexts) through ``decide`` reproduces its events, its stops and its dead letters.

The screen, in this order:

1. retention (``headwater.core.retention``): a purge request is taken when due, never
   stepped; an input for a purged workflow changes nothing or is refused, as the ended
   workflow would have taken it (``retention.after_purge``);
2. a heartbeat kept out of the history moves its attempt's lease
   (``reports.lease_renewal``), and a lease that heartbeats this coordinator read have
   since renewed is armed again instead of applied;
3. refusals (``refusals.refusal``: idempotency conflicts, signal faults), with the
   report that fails the parent attempt of a refused child (``conflicts``);
4. the step (``step``, or ``start`` for a submission that finds inputs deferred for it,
   those that waited longer than ``DEFERRED_WINDOW_MS`` left out as ``expired``), and the
   stops fencing sends for it (``fencing``); an input deferred past ``MAX_DEFERRED`` for
   one workflow, or one with which the deferred entry would not fit a table entry
   (``Context.deferred_bytes``, measured by the shell), is refused.

``failed`` and ``oversized`` fail a workflow as data when the shell could not apply an
input (a rule raised, or its records or snapshot do not fit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from headwater.core import events as ev
from headwater.core.fencing import stop_for, stops_for_expired, stops_for_recalled
from headwater.core.ids import LEASE_TIMER, parse_task_timer_id
from headwater.core.machine.calls import late_cancel, purged_cancel
from headwater.core.machine.conflicts import child_conflict, conflict_report
from headwater.core.machine.inputs import fail, start, step
from headwater.core.machine.recorder import Step
from headwater.core.machine.refusals import refusal
from headwater.core.machine.reports import lease_renewal
from headwater.core.retention import (
    RETENTION_TIMER,
    after_purge,
    load_marker,
    purge_due,
    same_parent,
)
from headwater.core.state import WorkflowState

MAX_DEFERRED = 100
"""Inputs kept at most for one workflow not submitted yet; one more is refused (a
producer cancelling an id that is never submitted must not grow the table for ever)."""
DEFERRED_WINDOW_MS = 600_000
"""How long before its submission a deferred input may have arrived and still apply to
it, ms (the coordinator's clock). A cancel or a signal overtakes its submission by the
lag between two input topics; one that waited longer was sent for a run that was never
submitted, and must not end one submitted later under the same id."""


@dataclass(frozen=True)
class LeaseSeen:
    """What one coordinator saw of a lease that its history does not hold.

    Attributes:
        renewed_ms: the lease's end as the heartbeats it read moved it, ms since the
            epoch (0: none read).
        leases_from_ms: when it took its partitions over: every running attempt has a
            full lease from then, ms since the epoch.
    """

    renewed_ms: int
    leases_from_ms: int


@dataclass(frozen=True)
class Context:
    """The plain values the shell measured for one input.

    Attributes:
        deferred: the inputs deferred until this workflow's submission, in order.
        history_heartbeats: whether heartbeats are recorded like any report (else they
            only move their lease).
        retention_ms: how long an ended workflow stays, ms; None: for ever.
        marker: the marker of this workflow's purge (``retention.dump_marker``: in the
            table, or written by this batch), None when it was not purged.
        lease: for a ``TimerFired``, what the coordinator saw of that lease; None when
            heartbeats are in the history (the machine sees them all).
        deferred_bytes: for an input that may be deferred, the size its workflow's
            deferred entry would take with it (key and value, bytes); 0 otherwise.
        max_entry_bytes: the most a table entry may take (the record limit less what a
            record needs besides), bytes; None: no limit.
    """

    deferred: Sequence[ev.Input] = ()
    history_heartbeats: bool = True
    retention_ms: int | None = None
    marker: bytes | None = None
    lease: LeaseSeen | None = None
    deferred_bytes: int = 0
    max_entry_bytes: int | None = None


@dataclass(frozen=True)
class Decision:
    """What to do with one input. The step, if any, is the only part recorded.

    Attributes:
        step: the new state and the history events (None: not stepped).
        stops: ``TaskCancelled`` to send to ``worker-control`` only (``fencing``).
        refused: why the input is dead-lettered instead of stepped (None: it is not).
        report: the ``TaskFailed`` to send on ``reports`` for the parent of a refused
            child (``conflicts.conflict_report``).
        renewal: ``(lease timer id, new end ms)`` to arm instead of recording anything.
        purge: the workflow's retention passed: its entries are to be deleted.
        started: the submission consumed the inputs deferred for it.
        expired: the deferred inputs it did not apply, each with why: they arrived more
            than ``DEFERRED_WINDOW_MS`` before it (dead-lettered).
        error: why even failing the workflow could not be decided (a rule raised).
        cancels: ``CancelRequested`` to send on ``control`` for other workflows: the
            ``ctx.call`` child whose link reached a parent that has ended
            (``calls.late_cancel``), or was purged since (``calls.purged_cancel``).
    """

    step: Step | None = None
    stops: tuple[ev.TaskCancelled, ...] = ()
    refused: str | None = None
    report: ev.TaskFailed | None = None
    renewal: tuple[str, int] | None = None
    purge: bool = False
    started: bool = False
    expired: tuple[tuple[ev.Input, str], ...] = ()
    error: str | None = None
    cancels: tuple[ev.CancelRequested, ...] = ()


def decide(state: WorkflowState | None, event: ev.Input, context: Context) -> Decision:
    """Screen ``event`` and step it (see the module's docstring for the order).

    Args:
        state: its workflow's state (None: unknown); modified in place by a step.
        event: a decoded input, stamped with the coordinator's time, its producer
            checked.
        context: what the shell measured (``Context``).

    Returns:
        The ``Decision``; a refusal, a renewal, a purge are data, never raised.

    Raises:
        Exception: only a bug in a rule of the step; the shell then fails the workflow
            as data with ``failed``.
    """
    screened = _retention(state, event, context)
    if screened is not None:
        return screened
    if isinstance(event, ev.TaskHeartbeated) and not context.history_heartbeats:
        stop = stop_for(state, event)
        return Decision(renewal=lease_renewal(state, event),
                        stops=() if stop is None else (stop,))
    if isinstance(event, ev.TimerFired):
        renewed = _lease_renewed(state, event, context.lease)
        if renewed is not None:
            return Decision(renewal=(event.timer_id, renewed))
    why = refusal(state, event)
    if why is not None:
        return Decision(refused=why, report=conflict_report(state, event, why))
    if (state is None and isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted)
            and context.deferred):
        fresh: list[ev.Input] = []
        expired: list[tuple[ev.Input, str]] = []
        for item in context.deferred:
            if item.at_ms + DEFERRED_WINDOW_MS >= event.at_ms:
                fresh.append(item)
            else:
                expired.append((item, _expired(item, event)))
        result = start(event, fresh)
        return Decision(step=result, stops=_stops(event, result), started=True,
                        expired=tuple(expired))
    late = late_cancel(state, event)  # a ctx.call's run linked to a parent that ended
    return _stepped(event, step(state, event), context, () if late is None else (late,))


def _expired(item: ev.Input, submitted: ev.Input) -> str:
    """Why a deferred input was not applied to the submission that came for its id."""
    waited_s = (submitted.at_ms - item.at_ms) / 1000
    return (f"{type(item).__name__} for workflow {item.workflow_id} arrived {waited_s:.0f} s "
            f"before its submission, more than {DEFERRED_WINDOW_MS // 1000} s: it was sent "
            "for an earlier run of that id, never submitted, and is not applied to this one")


def _stepped(event: ev.Input, result: Step, context: Context,
             cancels: tuple[ev.CancelRequested, ...] = ()) -> Decision:
    """The decision of a step: its events, the stops fencing sends for them and the
    ``cancels`` given; an input the step deferred is refused instead once
    ``MAX_DEFERRED`` wait for its workflow, or when the entry keeping them would not fit
    a table entry with it."""
    if not result.deferred:
        return Decision(step=result, stops=_stops(event, result), cancels=cancels)
    if len(context.deferred) >= MAX_DEFERRED:
        return Decision(refused=f"{MAX_DEFERRED} inputs already wait for workflow "
                                f"{event.workflow_id}, which was never submitted")
    limit = context.max_entry_bytes
    if limit is not None and context.deferred_bytes > limit:
        return Decision(refused=f"the inputs waiting for workflow {event.workflow_id} would "
                                f"take {context.deferred_bytes} bytes, over the {limit} a "
                                "table entry may take (HEADWATER_MAX_MESSAGE_BYTES less a "
                                "record's margin)")
    return Decision(step=result)


def failed(state: WorkflowState | None, event: ev.Input, reason: str) -> Decision:
    """Fail the workflow of ``event`` as data, after the shell could not apply it (a rule
    raised, or its records do not fit): ``machine.fail`` with the stops it ends.

    Args:
        state: the workflow's state before ``event`` (modified in place).
        event: the input that could not be applied.
        reason: why; the first 2,000 characters are recorded in ``WorkflowFailed``.

    Returns:
        The failing step and its stops; ``error`` set and no step when failing raised too.
    """
    try:
        result = fail(state, event, reason[:2000])
    except Exception as e:  # a bug must not stop the coordinator
        return Decision(error=f"{type(e).__name__}: {e}")
    return Decision(step=result, stops=_stops(event, result))


def oversized(state: WorkflowState | None, event: ev.Input, entry_bytes: int,
              limit_bytes: int, margin_bytes: int) -> Decision:
    """A workflow whose snapshot would not fit a table entry: refuse the batch's last
    input to it and fail it as data from its state before the batch.

    Args:
        state: the workflow's state before the batch (modified in place).
        event: the batch's last input to it.
        entry_bytes: the size of its largest table entry, bytes (key and value).
        limit_bytes: the record limit (``HEADWATER_MAX_MESSAGE_BYTES``), bytes.
        margin_bytes: what a record needs besides its entry, bytes.

    Returns:
        ``refused`` (the dead letter's reason) and the failing step (no stops: none of
        the batch's records to it are sent); ``error`` set and no step when failing
        raised.
    """
    reason = (f"the snapshot of workflow {event.workflow_id} would hold a table entry of "
              f"{entry_bytes} bytes, over the limit of {limit_bytes} "
              f"(HEADWATER_MAX_MESSAGE_BYTES) less {margin_bytes}")
    try:
        result = fail(state, event, reason[:2000])
    except Exception as e:  # a bug must not stop the coordinator
        return Decision(refused=reason, error=f"{type(e).__name__}: {e}")
    return Decision(step=result, refused=reason)


def _retention(state: WorkflowState | None, event: ev.Input,
               context: Context) -> Decision | None:
    """A purge request is never stepped: a ``purge`` when ``purge_due`` at its time (and
    not purged yet), else nothing; any other input to a purged workflow changes nothing
    or is refused (``retention.after_purge``). None for any input to a workflow not
    purged."""
    if isinstance(event, ev.TimerFired) and event.timer_id == RETENTION_TIMER:
        due = context.marker is None and purge_due(state, event.at_ms, context.retention_ms)
        return Decision(purge=due)
    if context.marker is None:
        return None
    why = after_purge(event, context.marker)
    if why is None:
        late = purged_cancel(event, str(load_marker(context.marker).get("status", "ended")))
        return Decision(cancels=() if late is None else (late,))
    report = (child_conflict(event, why) if isinstance(event, ev.ChildSubmitted)
              and not same_parent(event, context.marker) else None)
    return Decision(refused=why, report=report)


def _lease_renewed(state: WorkflowState | None, fired: ev.TimerFired,
                   seen: LeaseSeen | None) -> int | None:
    """When ``fired``'s lease ends by heartbeats the coordinator read since (not in the
    history, so the step cannot see them), if after the firing: it is then not applied
    but armed again for that time. None to apply it."""
    parsed = parse_task_timer_id(fired.timer_id)
    if parsed is None or parsed[0] != LEASE_TIMER or seen is None or state is None:
        return None
    task = state.tasks.get(parsed[1])
    if task is None or task.attempt != parsed[2] or task.heartbeat_ms is None:
        return None
    end = max(seen.renewed_ms, seen.leases_from_ms + task.heartbeat_ms)
    return end if end > fired.at_ms else None


def _stops(event: ev.Input, result: Step) -> tuple[ev.TaskCancelled, ...]:
    """The stops to send for a step: for a report of an attempt that must end, for the
    attempts a fired timer ended, and for those a pause recalled (``fencing``)."""
    stops = stops_for_expired(result.events) if isinstance(event, ev.TimerFired) else []
    stops = [*stops, *stops_for_recalled(result.events)]  # a pause's, deferred or not
    stop = stop_for(result.state, event) if isinstance(event, ev.Report) else None
    return (*stops, *([stop] if stop is not None else []))
