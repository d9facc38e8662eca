"""A code workflow's journal: the steps its function issued and their results, kept in
its node's state (``NodeState.code``) and changed only by history events.

The journal is a JSON object::

    {"acts": [[at_ms, through, digest], ...],  # activation k: when it was dispatched,
                                        # how many results (of "done") it was given, and
                                        # a digest of every activation's up to k
     "steps": [{"op", "name", "act", ..., "result"?}, ...],   # step s, in issue order
     "done": [s, ...],                  # steps in the order their results were recorded
     "decided": k,                      # activations whose decision is recorded
     "finish"?: output, "fail"?: {...}}

An activation (index ``2k`` of the node) is dispatched with the results recorded so far;
its decision (the attempt's output) issues steps, each at index ``2s + 1``: a task or a
child workflow is dispatched like any attempt, a sleep or a signal wait is a task of the
coordinator's own (no worker runs it) that its timer or its signal ends. A result is
given to the function by the next activation, which the coordinator dispatches once the
one in flight has decided. Which results each activation was given is history (its
``TaskDispatched``), so the function, run again over the journal, sees the same results
in the same order at the same points: ``activation_input`` is what a worker gets.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import CODE_TIMER, node_timer_id, task_key
from headwater.core.kinds.code.decision import ENDS
from headwater.core.kinds.workflow.records import ChildSpec
from headwater.core.signals import signal_key
from headwater.core.state import (
    IllegalTransition,
    TaskState,
    TimerState,
    WorkflowState,
    node_state,
)
from headwater.core.status import TaskStatus
from headwater.core.work import task_tries

OPS = ("task", "child", "sleep", "signal", "patch")
"""The steps a function can issue (a ``patch`` marks where ``wf.patched`` chose the new
code: it does nothing and is done as soon as it is issued)."""
OWN_OPS = ("sleep", "signal", "patch")
"""The steps no worker runs: the coordinator ends them (a timer, a signal; a patch at
once)."""
SLEEP_TASK = "headwater.sleep"
SIGNAL_TASK = "headwater.signal"
PATCH_TASK = "headwater.patch"
"""The task names of the coordinator's own steps (what a timeline shows)."""
TIMEOUT_ERROR = "TimeoutError"
"""The error type of a signal wait whose timeout passed."""


def activation(k: int) -> int:
    """The node index of activation ``k``."""
    return 2 * k


def step_index(s: int) -> int:
    """The node index of step ``s``."""
    return 2 * s + 1


def is_activation(index: int | None) -> bool:
    """Whether a task index of a code node is an activation (even) or a step (odd)."""
    return index is not None and index % 2 == 0


def journal(state: WorkflowState, node_id: str) -> dict[str, Any]:
    """The node's journal (created empty on first use)."""
    node = node_state(state, node_id)
    if node.code is None:
        node.code = {"acts": [], "steps": [], "done": [], "decided": 0}
    return node.code


def step_of(state: WorkflowState, node_id: str, index: int) -> dict[str, Any]:
    """The journal entry of the step at task index ``index``.

    Raises:
        IllegalTransition: no step was issued there.
    """
    steps = journal(state, node_id)["steps"]
    s = index // 2
    if index % 2 == 0 or not 0 <= s < len(steps):
        raise IllegalTransition(f"no step {task_key(node_id, index)} in {state.workflow_id}")
    return steps[s]  # type: ignore[no-any-return]


def undelivered(j: dict[str, Any]) -> int:
    """How many results no activation was given yet."""
    given = j["acts"][-1][1] if j["acts"] else 0
    return len(j["done"]) - int(given)


def pending(j: dict[str, Any]) -> int:
    """How many steps have no result yet (a patch has one from the start, and is not
    among ``done``: no activation needs to hear of it)."""
    return len(j["steps"]) - len(j["done"]) - int(j.get("patches", 0))


def timer_id(node_id: str, s: int) -> str:
    """The id of step ``s``'s timer (a sleep's wake-up, a signal wait's timeout)."""
    return node_timer_id(CODE_TIMER, task_key(node_id, step_index(s)))


# -- how the events change the journal (the kind's ``KindEvolution``) -----------------------

def act_digest(before: str, at_ms: int, given: Sequence[int]) -> str:
    """The digest of an activation's input: ``before`` (the previous activation's
    digest, "" for the first), its time and the steps whose results it was given, in
    order. A chain of them names a function's whole input so far in 16 characters: what
    a continuation's instance and the journal compare (``continuation.accepted``)."""
    text = f"{before}|{at_ms}|{','.join(str(s) for s in given)}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _last_digest(j: dict[str, Any]) -> str:
    """The digest of the journal's last activation ("" before the first), worked out
    from the start when its entry has none (a journal recorded before digests were)."""
    acts = j["acts"]
    if acts and len(acts[-1]) > 2:
        return str(acts[-1][2])
    digest, start = "", 0
    for at_ms, through, *_ in acts:
        digest = act_digest(digest, int(at_ms), j["done"][start:int(through)])
        start = int(through)
    return digest


def dispatched(state: WorkflowState, body: ev.TaskDispatched) -> None:
    """Activation k's first dispatch fixes the results it is given: all recorded so far.
    A retry of it is given the same."""
    if not is_activation(body.index):
        return
    j = journal(state, body.node)
    k = (body.index or 0) // 2
    if k == len(j["acts"]):
        start = int(j["acts"][-1][1]) if j["acts"] else 0
        digest = act_digest(_last_digest(j), body.at_ms, j["done"][start:])
        j["acts"].append([body.at_ms, len(j["done"]), digest])
    elif k > len(j["acts"]):
        raise IllegalTransition(f"activation {k} of {body.node} before {len(j['acts'])}")


def succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    """An activation decided (its output is the decision: the steps it issues, or its
    end), or a step's task or child succeeded (its output is the step's result)."""
    if not is_activation(body.index):
        assert body.index is not None
        resolve(state, body.node, body.index // 2, {"value": body.output}, body.at_ms)
        return
    j = journal(state, body.node)
    decision = body.output if isinstance(body.output, dict) else {}
    k = (body.index or 0) // 2
    ends = [key for key in ENDS if key in decision]
    for command in () if ends else decision.get("steps") or ():
        _issue(state, body.node, j, k, dict(command), body)
    for key in ends:  # what ends the function: its output, its error, its next input
        j[key] = decision[key]
    j["decided"] = k + 1


def _issue(state: WorkflowState, node_id: str, j: dict[str, Any], k: int,
           entry: dict[str, Any], decided: ev.TaskSucceeded) -> None:
    """Add one step to the journal; a sleep, a signal wait or a patch marker gets its
    task (no worker runs it; its attempt is the deciding activation's) and a sleep or a
    wait with a timeout its timer."""
    at_ms = decided.at_ms
    s = len(j["steps"])
    entry["act"] = k
    j["steps"].append(entry)
    if entry["op"] not in OWN_OPS:
        return
    index = step_index(s)
    fire_at: int | None = None
    if entry["op"] == "patch":
        entry["result"] = {"value": True}
        j["patches"] = int(j.get("patches", 0)) + 1
    elif entry["op"] == "sleep":
        fire_at = int(entry["until_ms"]) if entry.get("until_ms") is not None else (
            at_ms + round(float(entry.get("seconds") or 0) * 1000))
        entry["fire_at_ms"] = fire_at
    elif entry.get("timeout") is not None:
        fire_at = at_ms + round(float(entry["timeout"]) * 1000)
        entry["fire_at_ms"] = fire_at
    name = {"sleep": SLEEP_TASK, "signal": SIGNAL_TASK}.get(entry["op"], PATCH_TASK)
    node = node_state(state, node_id)
    node.next_index = max(node.next_index, index + 1)
    done = entry["op"] == "patch"
    state.tasks[task_key(node_id, index)] = TaskState(
        node=node_id, index=index, attempt=decided.attempt,
        status=TaskStatus.SUCCEEDED if done else TaskStatus.RUNNING,
        dispatched_at_ms=at_ms, started_at_ms=at_ms, worker=name, message=name,
        finished_at_ms=at_ms if done else None)
    if fire_at is not None:
        state.timers[timer_id(node_id, s)] = TimerState(fire_at, node_id, index, 0)


def resolve(state: WorkflowState, node_id: str, s: int, result: dict[str, Any],
            at_ms: int) -> None:
    """Record step ``s``'s result (``{"value": v}`` or ``{"error": {...}}``); a step
    resolved already keeps its first."""
    j = journal(state, node_id)
    entry = j["steps"][s]
    if "result" in entry:
        return
    entry["result"] = result
    entry["order"] = len(j["done"])  # its place among the results (``done``)
    j["done"].append(s)
    if entry["op"] in OWN_OPS:
        state.timers.pop(timer_id(node_id, s), None)
        task = state.tasks.get(task_key(node_id, step_index(s)))
        if task is not None and not task.status.terminal:
            failed = "error" in result
            task.status = TaskStatus.FAILED if failed else TaskStatus.SUCCEEDED
            task.finished_at_ms = at_ms
            task.error = str(result["error"].get("message", "")) if failed else ""
            task.error_type = str(result["error"].get("type", "")) if failed else ""


def ended(state: WorkflowState, node_id: str, index: int | None) -> None:
    """A step's task or child failed for good or was cancelled: its result is the
    error (what ``await`` raises in the function)."""
    if index is None or is_activation(index):
        return
    task = state.tasks[task_key(node_id, index)]
    cancelled = task.status is TaskStatus.CANCELLED
    error = {"type": "Cancelled" if cancelled else task.error_type or "TaskFailed",
             "message": "cancelled" if cancelled else task.error,
             "attempts": task_tries(state, node_id, index, task.attempt)}
    resolve(state, node_id, index // 2, {"error": error}, task.finished_at_ms or 0)


def timer_fired(state: WorkflowState, timer_id_: str, timer: TimerState) -> None:
    """A sleep woke (its result is null), or a signal wait timed out (an error). (A
    retry timer of a step's task is no business of the journal's.)"""
    if timer.index is None or not timer_id_.startswith(f"{CODE_TIMER}:"):
        return
    s = timer.index // 2
    entry = journal(state, timer.node)["steps"][s]
    if entry["op"] == "sleep":
        resolve(state, timer.node, s, {"value": None}, timer.fire_at_ms)
        return
    message = f"no signal {entry.get('name')!r} within {entry.get('timeout')} s"
    resolve(state, timer.node, s, {"error": {"type": TIMEOUT_ERROR, "message": message}},
            timer.fire_at_ms)


def signal_consumed(state: WorkflowState, body: ev.SignalConsumed) -> None:
    """A signal wait took a signal: its fields are the step's result, and the signal
    leaves those kept. A code workflow's signals are kept by name alone (they have no
    index; ``body.index`` is the wait's task), so the wait kind's own removal, by name
    and index, finds nothing to remove: without this the next wait for the name would
    take the same signal again."""
    assert body.index is not None
    key = signal_key(body.name, None)
    kept = state.signals.get(key)
    if kept:
        kept.pop(0)  # the oldest: the one the wait took (``rules._take_kept``)
        if not kept:
            del state.signals[key]
    resolve(state, body.node, body.index // 2, {"value": body.fields}, body.at_ms)


def waiting_for(state: WorkflowState, node_id: str, name: str) -> int | None:
    """The first step of the node still waiting for signal ``name``, or None."""
    for s, entry in enumerate(journal(state, node_id)["steps"]):
        if entry["op"] == "signal" and entry.get("name") == name and "result" not in entry:
            return s
    return None


def task_indexes(code: dict[str, Any] | None) -> list[int]:
    """The indexes of a code node's tasks: every activation dispatched and every step
    issued (each gets its task when issued: a dispatched task or child, a sleep, a
    signal wait); what the coordinator's table holds an entry for. ``code`` is a
    journal, or the counts the table's header keeps of one (``nacts``, ``nsteps``)."""
    if not code:
        return []
    nacts = code["nacts"] if "nacts" in code else len(code["acts"])
    nsteps = code["nsteps"] if "nsteps" in code else len(code["steps"])
    return sorted([activation(k) for k in range(nacts)]
                  + [step_index(s) for s in range(nsteps)])


def own_step_indexes(state: WorkflowState, node_id: str, k: int) -> list[int]:
    """The indexes of the sleeps and signal waits activation ``k`` issued: tasks its
    decision created (what the coordinator's table writes with the decision)."""
    steps = journal(state, node_id)["steps"]
    return [step_index(s) for s, e in enumerate(steps)
            if e["act"] == k and e["op"] in OWN_OPS]


# -- what a worker gets ------------------------------------------------------------------

def activation_input(state: WorkflowState, node_id: str, k: int) -> dict[str, Any]:
    """Activation ``k``'s input as a worker gets it: the workflow's input, the time and
    results of every activation up to ``k``, and the steps issued before it (what a run
    of the function from the start must issue again, in the same order).

    The history's ``TaskDispatched`` holds ``{"activation": k}`` only; the coordinator
    builds this when it sends the dispatch (``services/coordinator/records.py``), so
    the history does not repeat the journal on every activation.
    """
    j = journal(state, node_id)
    acts = j["acts"][:k + 1]
    through = int(acts[-1][1]) if acts else 0
    spec = state.spec.node(node_id)
    return {
        "workflow_id": state.workflow_id,
        "input": state.resolve_input(spec.input),
        "activation": k,
        "times": [a[0] for a in acts],
        "through": [a[1] for a in acts],
        "steps": [{"op": e["op"], "name": e.get("name", ""), "act": e["act"]}
                  for e in j["steps"] if e["act"] < k],
        "results": [[s, j["steps"][s]["result"]] for s in j["done"][:through]],
    }


def is_code_node(state: WorkflowState, node_id: str) -> bool:
    """Whether ``node_id`` is a code node of the run's spec (False for an unknown node,
    and for a run whose spec did not load)."""
    if state.spec_error:
        return False
    try:
        return state.spec.node(node_id).code is not None
    except KeyError:
        return False


def activation_dispatch(state: WorkflowState, body: ev.TaskDispatched) -> ev.TaskDispatched:
    """The dispatch a worker gets for ``body``: an activation's with its input
    (``activation_input``); any other dispatch as it is."""
    if not is_activation(body.index) or not is_code_node(state, body.node):
        return body
    k = (body.index or 0) // 2
    return dataclasses.replace(body, input=activation_input(state, body.node, k))


def child_spec(state: WorkflowState, node_id: str, index: int | None) -> ChildSpec | None:
    """The child workflow a code node's step at ``index`` starts, or None (an
    activation, or a step of another kind)."""
    if index is None or is_activation(index):
        return None
    steps = journal(state, node_id)["steps"]
    s = index // 2
    if not 0 <= s < len(steps) or steps[s]["op"] != "child":
        return None
    step = steps[s]
    return ChildSpec(workflow=step.get("workflow"), definition=step.get("definition"),
                     definition_version=step.get("definition_version"))
