"""Dispatching a task attempt: resolving its input and recording ``TaskDispatched``, and
the retry timer that dispatches the next attempt after a failure.

An attempt's input is the node's ``input`` template resolved against the workflow's
input and the outputs of the nodes upstream (a map item also sees ``${item}`` and
``${index}``; an error handler ``${error}``, and by default ``{"error": ...}`` as its
whole input). A loop's decide task gets the loop's resolved input with its transcript so
far, and its tool the input the step's decision gave it. A reference that cannot be
resolved fails the node for good, except that an item of a ``continue_on_error`` map
fails on its own (it never runs) and the map goes on; so does an attempt of a child
workflow whose id would be too long. The dispatch carries the checkpoint the task's last
attempt saved, and what ``WorkflowState.work`` says the task runs (a loop's tool: its
own task, queue, timeout and heartbeat timeout; a child workflow: no task, no lease).
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core import reuse
from headwater.core.ids import child_id, dispatch_id, retry_timer_id, task_key
from headwater.core.machine import flow, holds, lookups
from headwater.core.machine.recorder import Recorder
from headwater.core.refs import item_of
from headwater.core.retry import backoff_seconds
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.work import CHILD_TASK, task_tries, task_work
from headwater.errors import InputReferenceError

MAX_CHILD_ID = 200
"""The longest workflow id (``topics.WORKFLOW_ID_PATTERN``): a child whose derived id
(``ids.child_id``) would be longer cannot be started, and its attempt fails."""
CHILD_ID_TOO_LONG = "ChildIdTooLong"
"""The error type of such an attempt."""


def dispatch(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int,
             granted: bool = False, looked_up: bool = False) -> None:
    """Dispatch ``attempt`` of the task ``spec`` (a map's item ``index``, or None), or
    hold it for its cache's answer (``lookups``: a cached task looks its key up first),
    or for a permit of its node's first limit (``holds``), or, while the run is paused,
    until it resumes (``DispatchDeferred``, ``machine/pause.py``).

    Args:
        rec: the step's recorder.
        spec: a node with tasks (task, map, child workflow, loop).
        index: the map item (a loop's task: ``2k`` decide, ``2k+1`` tool of step k),
            or None for a node with a single task.
        attempt: ``first`` gives the first; a retry timer gives the later ones.
        granted: the attempt holds a permit of each of its node's limits already.
        looked_up: the cache answered the attempt a miss already (it computes).
    """
    state = rec.current
    try:
        task_input = _task_input(state, spec, index)
        lookup = (None if granted or looked_up
                  else lookups.lookup_of(state, spec, index, task_input))
        wanted = [] if granted else holds.limits_of(state, spec, index)
    except InputReferenceError as e:
        _undispatchable(rec, spec, index, attempt, str(e), InputReferenceError.__name__)
        return
    too_long = _child_id_fault(state, spec, index, attempt)
    if too_long:
        _undispatchable(rec, spec, index, attempt, too_long, CHILD_ID_TOO_LONG)
        return
    if lookup is not None:
        lookups.look_up(rec, spec, index, attempt, lookup)
        return
    if wanted:
        holds.hold(rec, spec, index, attempt, wanted[0])
        return
    if state.paused:  # held until the run resumes (``machine/pause.py``), holding nothing
        rec.give_back(spec.id, index, attempt)
        rec.record(ev.DispatchDeferred(state.workflow_id, spec.id, index, attempt, rec.at_ms))
        return
    record_dispatch(rec, spec, index, attempt, task_input, rec.at_ms)


def granted(rec: Recorder, state: WorkflowState, event: ev.PermitGranted) -> None:
    """A limiter granted a held attempt the permit it waits for: record it, then hold
    the attempt for its node's next limit, or dispatch it. A grant the attempt does not
    wait for changes nothing (``holds.grant_fits``)."""
    if not holds.grant_fits(state, event):
        return
    rec.record(event)
    spec = state.spec.node(event.node)
    try:
        following = holds.after(holds.limits_of(rec.current, spec, event.index), event.limiter)
    except InputReferenceError:
        following = None  # resolved when it was held: the dispatch says what went wrong
    if following is not None:
        holds.hold(rec, spec, event.index, event.attempt, following)
        return
    dispatch(rec, spec, event.index, event.attempt, granted=True)


def record_dispatch(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int,
                    task_input: Any, at_ms: int) -> None:
    """Record ``TaskDispatched`` of ``attempt`` with ``task_input`` at ``at_ms``: what
    ``WorkflowState.work`` says the task runs, and the checkpoint its last attempt saved
    (a code workflow's continued activation records its own input and time:
    ``kinds/code/continuation.py``)."""
    state = rec.current
    previous = state.tasks.get(task_key(spec.id, index))
    work = task_work(state, spec.id, index)
    rec.record(ev.TaskDispatched(
        workflow_id=state.workflow_id, node=spec.id, index=index, attempt=attempt,
        task=work.task, queue=work.queue, input=task_input, at_ms=at_ms,
        timeout_s=work.timeout, heartbeat_timeout_s=work.heartbeat_timeout,
        checkpoint=previous.checkpoint if previous is not None else None,
    ))


def schedule_retry(rec: Recorder, report: ev.TaskFailed) -> None:
    """Record the timer that dispatches the attempt after ``report``'s, after its backoff.

    A retry is a durable timer (``TimerScheduled``) that fires after the policy's
    backoff, with jitter drawn from the dispatch id (docs/architecture.md, invariant 4),
    and dispatches the next attempt (``timers.timer_fired``).
    """
    did = dispatch_id(report.workflow_id, report.node, report.index, report.attempt)
    policy = task_work(rec.current, report.node, report.index).retry  # a loop's tool: its own
    # this generation's (``restart``)
    tries = task_tries(rec.current, report.node, report.index, report.attempt)
    delay_ms = round(backoff_seconds(policy, tries, did) * 1000)
    rec.record(ev.TimerScheduled(
        workflow_id=report.workflow_id,
        timer_id=retry_timer_id(task_key(report.node, report.index), report.attempt + 1),
        fire_at_ms=report.at_ms + delay_ms,
        node=report.node, index=report.index, attempt=report.attempt + 1,
        at_ms=report.at_ms,
    ))


def first(rec: Recorder, spec: NodeSpec, index: int | None) -> None:
    """Dispatch the first attempt of a task: attempt 1, or after a restart the
    generation's first (``WorkflowState.first_attempt``). An item of a fanned-out node
    whose output a rerun reuses is not dispatched: ``TaskReused`` records it as
    succeeded (``headwater/core/reuse.py``)."""
    state = rec.current
    if index is not None and spec.fans_out:
        found, output = reuse.reused_item(state, spec.id, index)
        if found:
            rec.record(ev.TaskReused(state.workflow_id, spec.id, index, state.first_attempt,
                                     output, rec.at_ms))
            return
    dispatch(rec, spec, index, state.first_attempt)


def _undispatchable(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int,
                    why: str, error_type: str) -> None:
    """An attempt that cannot be dispatched fails the node for good; an item of a
    ``continue_on_error`` node that fans out fails on its own (it never runs) and the
    node goes on."""
    where = f"{task_key(spec.id, index)}: {why}"
    if index is not None and spec.continue_on_error and spec.fans_out:
        rec.record(ev.TaskFailed(rec.current.workflow_id, spec.id, index, attempt, rec.at_ms,
                                 where, error_type, retryable=False))
        return
    flow.node_failed(rec, spec.id, where)


def _task_input(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    """The attempt's input. Raises ``InputReferenceError`` for a reference that cannot
    be resolved."""
    if spec.loop is not None:
        return _loop_input(state, spec, index or 0)
    if spec.code is not None:
        return _code_input(state, spec, index or 0)
    return _node_input(state, spec, index)


def _code_input(state: WorkflowState, spec: NodeSpec, index: int) -> Any:
    """A code node's activation k (index ``2k``) is recorded with ``{"activation": k}``
    (the coordinator sends it with the journal: ``code.journal.activation_input``);
    a step gets the input its function gave it."""
    if index % 2 == 0:
        return {"activation": index // 2}
    steps = (state.nodes[spec.id].code or {}).get("steps") or []
    return steps[index // 2].get("input")


def _node_input(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    """The node's ``input`` resolved (for item ``index``; an error handler's with
    ``${error}``, by default ``{"error": ...}``)."""
    source = state.spec.handler_of(spec.id)
    error = state.nodes[source].failure if source is not None else None
    item = _map_item(state, spec, index)
    if source is not None and spec.input is None:
        return {"error": error}
    return state.resolve_input(spec.input, item, index, error)


def _loop_input(state: WorkflowState, spec: NodeSpec, index: int) -> Any:
    """A loop's task input: its decide task (even index) gets ``{"input", "transcript",
    "step", "tools", "spent"}``; its tool (odd index) the input its step's decision gave."""
    assert spec.loop is not None
    node = state.nodes[spec.id]
    if index % 2 == 1:
        assert node.decision is not None and node.decision.get("step") == index // 2
        return node.decision.get("input")
    return {"input": _node_input(state, spec, None), "transcript": list(node.transcript or []),
            "step": index // 2, "tools": [t.name for t in spec.loop.tools],
            "spent": node.spent}


def _map_item(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    if index is None or not spec.fans_out:
        return None
    return item_of(state.resolve_input(spec.over), index)


def _child_id_fault(state: WorkflowState, spec: NodeSpec, index: int | None,
                    attempt: int) -> str:
    """Why an attempt of a workflow node cannot start its child (``""``: it can): the
    child's id (``ids.child_id``) would be longer than ``MAX_CHILD_ID``, after a deep
    chain of children or with long ids, and could not be submitted. A code node's child
    step (``wf.call``) is such an attempt too: its child's submission would be
    dead-lettered, and the function would wait for it for ever."""
    if spec.child is None and (spec.code is None or index is None or index % 2 == 0
                               or task_work(state, spec.id, index).task != CHILD_TASK):
        return ""
    cid = child_id(state.workflow_id, spec.id, index, attempt)
    if len(cid) <= MAX_CHILD_ID:
        return ""
    return (f"the child's id {cid[:60]}... would be {len(cid)} characters, over the "
            f"limit of {MAX_CHILD_ID} (nest fewer workflows, or give shorter ids)")
