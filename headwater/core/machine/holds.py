"""An attempt's side of its node's limits (``concurrency``, ``rate_limit``:
``headwater.core.limits``): it is held until a permit of each is granted, then
dispatched.

An attempt of a node with limits is not dispatched at once: ``hold`` records
``TaskHeld`` for its first limit (the coordinator sends the limiter a
``PermitRequested``); each ``PermitGranted`` for the limit it waits for is recorded and
the attempt is held for the next limit, or dispatched after the last
(``dispatch.granted``). A held attempt is a task (``TaskStatus.HELD``: no deadline, no
lease, its item's slot kept), so everything that ends a task ends it (a cancel, the end
of its node or workflow: ``TaskCancelled``), and the coordinator sends each of its
node's limiters a ``PermitReleased`` when an attempt ends, held or dispatched. A grant
for an attempt that no longer waits for it changes nothing: that attempt's end released
it already, or will. A limiter whose queue is full refuses the request
(``PermitDenied``): the attempt that waits for it fails, retryable (``refusal``), and its
retry asks again after the policy's backoff; a refusal it no longer waits for changes
nothing.

Each limit's key (and a rate limit's units) is resolved for the attempt here, from the
workflow's input and outputs and the item, the same way at every step: so the release
names the limiters the request named.
"""

from __future__ import annotations

from typing import NamedTuple

from headwater.blobs import is_ref
from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.limits import LimitSpec, limiter_id, resolved_key, resolved_units
from headwater.core.machine.recorder import Recorder
from headwater.core.refs import item_of
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from headwater.errors import InputReferenceError

LIMIT_QUEUE_FULL = "LimitQueueFull"
"""The error type of an attempt whose limiter refused its request (its queue full)."""


class Wanted(NamedTuple):
    """One limit as resolved for an attempt: its limiter's id, its key, its units."""

    limit: LimitSpec
    limiter: str
    key: str
    units: int


def limits_of(state: WorkflowState, spec: NodeSpec, index: int | None) -> list[Wanted]:
    """The node's limits resolved for item ``index`` (empty without limits).

    Raises:
        InputReferenceError: a key or units reference cannot be resolved, or gives no
            key or no count.
    """
    if not spec.limits:
        return []
    item = None
    if index is not None and spec.fans_out:
        items = state.resolve_input(spec.over)
        item = item_of(items, index) if is_ref(items) or (
            isinstance(items, list) and 0 <= index < len(items)) else None
    out = []
    for limit in spec.limits:
        try:
            key = resolved_key(state.resolve_input(limit.key, item, index))
            units = resolved_units(state.resolve_input(limit.units, item, index))
        except ValueError as e:
            raise InputReferenceError(f"{limit.kind} limit: {e}") from None
        out.append(Wanted(limit, limiter_id(limit.kind, key), key, units))
    return out


def hold(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int,
         wanted: Wanted) -> None:
    """Record that ``attempt`` waits for a permit of ``wanted`` before its dispatch."""
    rec.record(ev.TaskHeld(rec.current.workflow_id, spec.id, index, attempt, wanted.limiter,
                           wanted.limit.kind, wanted.key, wanted.limit.limit,
                           wanted.limit.window_ms, wanted.units, rec.at_ms))


def grant_fits(state: WorkflowState, event: ev.PermitGranted | ev.PermitDenied) -> bool:
    """Whether ``event`` answers the request the attempt it names waits for: a copy, or
    an answer for an attempt that ended (its node cancelled it, say, while the run goes
    on; a refused one failed) does not."""
    task = state.tasks.get(task_key(event.node, event.index))
    return (task is not None and task.status is TaskStatus.HELD
            and task.attempt == event.attempt and task.waiting_for == event.limiter)


def after(wanted: list[Wanted], limiter: str) -> Wanted | None:
    """The limit to hold for after ``limiter``'s permit, None after the last."""
    ids = [w.limiter for w in wanted]
    if limiter not in ids:
        return None
    i = ids.index(limiter)
    return wanted[i + 1] if i + 1 < len(wanted) else None


def refusal(event: ev.PermitDenied) -> ev.TaskFailed:
    """The failure of the attempt whose request ``event`` refused: retryable, so its
    retry policy's backoff asks again later (a new attempt, a new holder id); its end
    releases what it asked, as any end does (the refused request was never queued)."""
    return ev.TaskFailed(
        event.workflow_id, event.node, event.index, event.attempt, event.at_ms,
        f"{event.limiter}: its queue is full ({event.bound} requests wait, the most a "
        f"limiter queues); the attempt asks again after its retry's backoff",
        LIMIT_QUEUE_FULL, retryable=True)
