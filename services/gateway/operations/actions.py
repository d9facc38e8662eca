"""The action table of bulk operations: what each action does to one target run, and
what came of it (``headwater.operations.Outcome`` and a reason).

Each action is idempotent per target (``headwater.operations``): a gateway going on
after a crash acts again on the targets after the operation's last record, and that
changes nothing for those already acted on. An action raises what it cannot decide
(Kafka or PostgreSQL unavailable, a 503): the operation stops there, stays ``running``
and goes on later from the same target. A new action is one more function and one
more entry of ``ACTIONS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core import events as ev
from headwater.operations import Outcome, cancel_reason, pause_request_id, rerun_id, signal_id
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.control.send import send_signal
from services.gateway.edge.problems import Problem
from services.gateway.lifetime import Runtime
from services.gateway.pauses.send import request_pause
from services.gateway.reruns.api import start_rerun
from services.gateway.reruns.models import RerunRequest
from services.gateway.runs.stream import TERMINAL_STATUSES

Result = tuple[Outcome, str]
"""What came of one target, and why (``""`` when it was done)."""
DECIDED = frozenset({400, 404, 409, 413, 422})
"""The statuses of a refusal that is the target's own (counted, with its reason); any
other (503: Kafka or PostgreSQL unavailable) stops the operation until it goes on."""


@dataclass(frozen=True)
class Target:
    """One run an operation acts on, and the operation's context.

    Attributes:
        hw: the gateway's runtime (pool, outlet).
        me: whom the operation acts as: its tenant's (or every tenant's) principal.
        operation_id: the operation's id (the actions' idempotency ids derive from it).
        workflow_id: the run.
        args: the action's arguments (``OperationRequest.args``).
    """

    hw: Runtime
    me: Principal
    operation_id: str
    workflow_id: str
    args: Mapping[str, Any]


async def cancel(t: Target) -> Result:
    """Cancel a run that has not ended; one that has is skipped, unless this
    operation's own cancel ended it (its reason names the operation: done)."""
    reason = cancel_reason(t.operation_id, str(t.args.get("reason", "")))
    row = await t.hw.pool.fetchrow("select status, error from workflows where"
                                   " workflow_id = $1", t.workflow_id)
    if row is None:
        return Outcome.FAILED, "no such workflow (its rows are gone)"
    if row["status"] in TERMINAL_STATUSES:
        if row["status"] == "cancelled" and row["error"] == reason:
            return Outcome.DONE, ""
        return Outcome.SKIPPED, f"already {row['status']}"
    await t.hw.outlet.control(ev.CancelRequested(t.workflow_id, now_ms(), reason), "cancel")
    return Outcome.DONE, ""


async def signal(t: Target) -> Result:
    """Send the operation's signal (one ``signal_id`` for every send of it); a run that
    has ended is skipped, one with no wait that takes it failed with the reason."""
    args = t.args["signal"]
    record = ev.SignalSent(t.workflow_id, args["name"], now_ms(), args.get("index"),
                           signal_id(t.operation_id), args.get("fields") or {})
    try:
        await send_signal(t.hw.pool, t.hw.outlet, record, t.me)
    except Problem as e:
        return _refused(e, skip=409)
    return Outcome.DONE, ""


async def rerun(t: Target) -> Result:
    """Rerun a failed or cancelled run under an id derived from the operation and the
    run (the same rerun if asked again); one that is running or succeeded is skipped."""
    payload = RerunRequest(id=rerun_id(t.operation_id, t.workflow_id))
    try:
        accepted = await start_rerun(t.hw, t.me, t.workflow_id, payload, None,
                                     t.args.get("cache"))
    except Problem as e:
        return _refused(e, skip=409)
    return Outcome.DONE, f"rerun {accepted.workflow_id}"


async def pause(t: Target) -> Result:
    """Pause a run that has not ended; one that has is skipped. A paused run is paused
    again all the same: the run records nothing for it, nor for this operation's
    request sent again (its ``request_id`` derives from the operation)."""
    return await _pause_or_resume(t, True)


async def resume(t: Target) -> Result:
    """Resume a run that has not ended (a running one records nothing); one that has
    ended is skipped."""
    return await _pause_or_resume(t, False)


async def _pause_or_resume(t: Target, paused: bool) -> Result:
    request_id = pause_request_id(t.operation_id, paused)
    by = f"operation:{t.operation_id}"
    record: ev.PauseRequested | ev.ResumeRequested = (
        ev.PauseRequested(t.workflow_id, now_ms(), request_id, by,
                          str(t.args.get("reason", ""))) if paused
        else ev.ResumeRequested(t.workflow_id, now_ms(), request_id, by))
    try:
        await request_pause(t.hw.pool, t.hw.outlet, record)
    except Problem as e:
        return _refused(e, skip=409)
    return Outcome.DONE, ""


def _refused(e: Problem, skip: int) -> Result:
    """A refusal of one target as its result: ``skip`` skipped, the other decided ones
    failed, with the problem's detail as the reason.

    Raises:
        Problem: ``e`` itself when it is not the target's own (``DECIDED``).
    """
    if e.status not in DECIDED:
        raise e
    return (Outcome.SKIPPED if e.status == skip else Outcome.FAILED), e.detail or e.title


ACTIONS: dict[str, Callable[[Target], Awaitable[Result]]] = {
    "cancel": cancel,
    "signal": signal,
    "rerun": rerun,
    "pause": pause,
    "resume": resume,
}
"""Action name -> what it does to one target."""
ACTS_ON: dict[str, frozenset[str]] = {
    **dict.fromkeys(("cancel", "signal", "pause", "resume"),
                    frozenset({"accepted", "running"})),
    "rerun": frozenset({"failed", "cancelled"})}
"""Action name -> the statuses of the runs it acts on; it skips the others (what a dry
run counts as ``to_act_on``)."""
NEEDS: dict[str, str] = {"signal": "signal"}
"""Action name -> the request field it cannot go without."""
