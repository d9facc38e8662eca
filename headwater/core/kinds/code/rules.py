"""The ``code`` kind's rules and its ``UNIT``: how its node starts, what its activations
decide and what a step's end does (the kind is described in
``headwater/core/kinds/code/__init__.py``; its journal in ``journal.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core import reuse
from headwater.core.attempts import KindEvolution
from headwater.core.ids import CODE_TIMER
from headwater.core.kinds.code import continuation
from headwater.core.kinds.code import journal as jr
from headwater.core.kinds.code.decision import DECISION_ERROR, decision_fault, numbering_fault
from headwater.core.kinds.code.records import (
    DEFAULT_MAX_EVENTS,
    MAX_CODE_VERSION_CHARS,
    MAX_EVENTS_LIMIT,
    CodeSpec,
    path_fault,
)
from headwater.core.kinds.wait.rules import discard
from headwater.core.machine import dispatch, ending, flow, reports, restart
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.signals import signal_fault, signal_key
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import TASKLIKE_KEYS, KindParts, Work
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus

HISTORY_TOO_LONG = "HistoryTooLong"
"""The error type of a run that outgrew its ``max_events``."""
BLOCKED = "WorkflowBlocked"
"""The error type of a function that waits with no step in flight."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Dispatch activation 0: the function runs from its start."""
    dispatch.first(rec, spec, jr.activation(0))


def output_fault(state: WorkflowState, spec: NodeSpec, report: ev.TaskSucceeded) -> str | None:
    """Why an activation's output is not a decision, or None (a step's output is
    anything)."""
    if not jr.is_activation(report.index):
        return None
    issued = len(jr.journal(state, spec.id)["steps"])
    return decision_fault(report.output) or numbering_fault(report.output, issued)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """An activation decided: carry out its decision. A step's task or child
    succeeded: the function hears of it in the next activation, which its report may
    carry already (``continuation.py``: then it is recorded and carried out at once)."""
    if jr.is_activation(report.index):
        _streamed(rec, report)
        _decided(rec, spec)
        return
    taken = continuation.accepted(rec.current, spec, report, rec.at_ms)
    if taken is None:
        _activate_if_due(rec, spec)
        return
    decided = continuation.record(rec, spec, report, taken)
    _streamed(rec, decided)
    _decided(rec, spec)


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """An activation failed for good (not retryable): so has the node. A step's task
    or child failed for good: the function hears of it (``await`` raises)."""
    if jr.is_activation(report.index):
        flow.node_failed(rec, spec.id, reports.failure_message(rec.current, report))
    else:
        _activate_if_due(rec, spec)


def timer_fired(rec: Recorder, spec: NodeSpec, index: int | None) -> None:
    """A sleep woke or a signal wait timed out (its result is recorded)."""
    _activate_if_due(rec, spec)


def _streamed(rec: Recorder, report: ev.TaskSucceeded) -> None:
    """What a streaming function yielded in the activation: each chunk is recorded as
    the activation's ``TaskOutputStreamed``, as a generator task's are, so the run's
    stream and its page show them."""
    chunks = report.output.get("chunks") if isinstance(report.output, dict) else None
    for seq, chunk in enumerate(chunks or ()):
        rec.record(ev.TaskOutputStreamed(report.workflow_id, report.node, report.index,
                                         report.attempt, rec.at_ms, seq, chunk))


def _decided(rec: Recorder, spec: NodeSpec) -> None:
    """Carry out the decision just recorded: end the node, or start the steps it
    issued (a signal wait takes a signal kept for it), then activate again if results
    wait for the function, or fail it if it waits on nothing."""
    assert spec.code is not None
    state = rec.current
    j = jr.journal(state, spec.id)
    if "fail" in j:
        fail = j["fail"]
        flow.node_failed(rec, spec.id, f"{fail.get('type', 'Error')}: {fail.get('message', '')}")
        return
    if "finish" in j:
        live = [t for t in state.tasks.values() if t.node == spec.id]
        ending.cancel_tasks(rec, live, "the workflow function returned")
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)
        return
    if "continue_as_new" in j:
        restart.continue_as_new(rec, j["continue_as_new"])
        return
    k = j["decided"] - 1
    for s, step in enumerate(j["steps"]):  # every step issued gets its task now
        if step["act"] != k:
            continue
        if step["op"] in ("task", "child"):
            _dispatch_or_reuse(rec, spec, s, step)
        elif step["op"] == "signal":
            _take_kept(rec, spec, s, step["name"])
    recorded = rec.current.seq - rec.current.generation_seq
    if recorded > spec.code.max_events:
        flow.node_failed(rec, spec.id, (
            f"{HISTORY_TOO_LONG}: the run recorded {recorded} events, over its "
            f"max_events of {spec.code.max_events}; call wf.continue_as_new(...) to go "
            "on with a fresh history"))
        return
    _activate_if_due(rec, spec)
    j = jr.journal(rec.current, spec.id)
    if not jr.pending(j) and not jr.undelivered(j) and _activation_done(rec.current, spec):
        flow.node_failed(rec, spec.id, (
            f"{BLOCKED}: the workflow function waits, but on no step of its own (await "
            "only wf.run, wf.call, wf.sleep, wf.signal and wf.gather in a workflow)"))


def _dispatch_or_reuse(rec: Recorder, spec: NodeSpec, s: int, step: dict[str, Any]) -> None:
    """Dispatch a task or child step, unless the run is a rerun that reuses it
    (``reuse.reused_step``: ``TaskReused`` records its source's output)."""
    found, output = reuse.reused_step(rec.current, spec.id, s, step["op"], step["name"])
    if not found:
        dispatch.first(rec, spec, jr.step_index(s))
        return
    rec.record(ev.TaskReused(rec.current.workflow_id, spec.id, jr.step_index(s),
                             rec.current.first_attempt, output, rec.at_ms))


def _take_kept(rec: Recorder, spec: NodeSpec, s: int, name: str) -> None:
    """A signal wait takes the oldest signal kept under its name, if any."""
    kept = rec.current.signals.get(signal_key(name, None))
    if kept:
        rec.record(ev.SignalConsumed(rec.current.workflow_id, spec.id, jr.step_index(s),
                                     name, kept[0]["signal_id"], rec.at_ms,
                                     kept[0]["fields"]))


def _activation_done(state: WorkflowState, spec: NodeSpec) -> bool:
    """Whether the latest activation has decided (none is queued, running or waiting
    to retry)."""
    j = jr.journal(state, spec.id)
    return int(j["decided"]) == len(j["acts"])


def _activate_if_due(rec: Recorder, spec: NodeSpec) -> None:
    """Dispatch the next activation when results wait for the function and none is in
    flight (one in flight is given them next time)."""
    state = rec.current
    if state.nodes[spec.id].status.terminal or state.status.terminal:
        return
    j = jr.journal(state, spec.id)
    if jr.undelivered(j) > 0 and _activation_done(state, spec):
        dispatch.first(rec, spec, jr.activation(len(j["acts"])))


def signal_sent(rec: Recorder, state: WorkflowState, signal: ev.SignalSent) -> None:
    """A signal for a code workflow: kept under its name (once per ``signal_id``), and
    taken at once by the first step waiting for it."""
    if signal.signal_id and signal.signal_id in state.signal_ids:
        return  # the same signal again: an at-least-once sender
    spec = next(n for n in state.spec.nodes if n.code is not None)
    fault = signal_fault(state, signal)
    if fault is None and state.nodes[spec.id].status.terminal:
        fault = f"the workflow function of {spec.id} has ended"
    if fault:
        discard(rec, signal, fault)
        return
    rec.record(signal)
    s = jr.waiting_for(rec.current, spec.id, signal.name)
    if s is not None:
        _take_kept(rec, spec, s, signal.name)
        _activate_if_due(rec, spec)


def claims_signals(state: WorkflowState) -> bool:
    """A code workflow's signals are its function's."""
    return not state.spec_error and any(n.code is not None for n in state.spec.nodes)


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A code node's own fields: ``max_events``, and the ``code_version`` and ``path``
    a definition of an announced ``@workflow`` records (its ``task`` is the
    ``@workflow`` its activations run)."""
    cap = raw.get("max_events", DEFAULT_MAX_EVENTS)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 10 <= cap <= MAX_EVENTS_LIMIT:
        faults.append(f"{where}: max_events must be a whole number from 10 to "
                      f"{MAX_EVENTS_LIMIT}, not {cap!r}")
        cap = DEFAULT_MAX_EVENTS
    version = raw.get("code_version")
    if version is not None and not (isinstance(version, str)
                                    and 0 < len(version) <= MAX_CODE_VERSION_CHARS):
        faults.append(f"{where}: code_version must be a string of 1 to "
                      f"{MAX_CODE_VERSION_CHARS} characters, not {version!r}")
        version = None
    path = raw.get("path")
    fault = path_fault(path) if path is not None else None
    if fault is not None:
        faults.append(f"{where}: {fault}")
        path = None
    return KindParts(code=CodeSpec(max_events=cap, code_version=version, path=path))


UNIT = KindUnit(
    NodeKind.CODE, TASKLIKE_KEYS | {"max_events", "code_version", "path"}, start, attempt_succeeded,
    attempt_failed, parse=_parse, output_fault=output_fault, output_error=DECISION_ERROR,
    timer_prefix=CODE_TIMER, timer_fired=timer_fired, signal_sent=signal_sent,
    claims_signals=claims_signals, task_field="task",
    evolution=KindEvolution(task_succeeded=jr.succeeded, attempt_ended=jr.ended,
                            timer_fired=jr.timer_fired, task_dispatched=jr.dispatched,
                            signal_consumed=jr.signal_consumed),
)
"""The ``code`` kind."""
