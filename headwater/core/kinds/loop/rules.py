"""The ``loop`` kind's rules and its ``UNIT``: how its node starts and what its
attempts, timer and signals do, and how its events change the state (the kind is
described in ``headwater/core/kinds/loop/__init__.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.kinds.loop.records import DESCRIBE, FOLLOW, LoopSpec, ToolSpec
from headwater.core.machine import dispatch, flow, reports
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.retry import finite_number, parse_retry
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.fields import MIN_HEARTBEAT_TIMEOUT, seconds
from headwater.core.spec.kinds import TASKLIKE_KEYS, KindParts, Work
from headwater.core.state import IllegalTransition, WorkflowState, node_state
from headwater.core.status import NodeStatus

MAX_LOOP_STEPS = 1000
"""The most steps (one decide and one tool call each) a loop may be given."""

OUTPUT_ERROR = "LoopDecisionError"
"""The error type of a decide attempt whose decision is unfit (``output_fault``)."""
_KEYS = {"tool": ("tool", "input", "spend"), "finish": ("finish", "spend")}
"""The keys a decision may have, by the kind of decision."""
_KINDS = {"tool": "a tool decision has tool, input and spend",
          "finish": "a finishing decision has finish and spend"}


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Dispatch the decide task of step 0."""
    dispatch.first(rec, spec, 0)


def output_fault(state: WorkflowState, spec: NodeSpec, report: ev.TaskSucceeded) -> str | None:
    """Why a decide task's output is not a valid decision, or None (a tool's output, or
    a valid decision)."""
    if report.index is None or report.index % 2 == 1:
        return None
    return decision_fault(spec, report.index // 2, report.output)


def decision_fault(spec: NodeSpec, step: int, decision: Any) -> str | None:
    """Why ``decision`` is not a valid decision for step ``step`` of loop ``spec``
    (naming what it got and what is allowed), or None when it is."""
    assert spec.loop is not None
    where = f"loop {spec.id}: step {step}: decide"
    if not isinstance(decision, dict):
        return (f"{where} returned {type(decision).__name__}, not an object "
                '{"tool": name, "input": ...} or {"finish": output}')
    if ("tool" in decision) == ("finish" in decision):
        which = "both 'tool' and 'finish'" if "tool" in decision else "neither 'tool' nor 'finish'"
        return f"{where} returned {which}; a decision has exactly one"
    kind = "tool" if "tool" in decision else "finish"
    unknown = sorted(repr(k) for k in decision if k not in _KEYS[kind])
    if unknown:
        return f"{where} returned unknown key {unknown[0]} ({_KINDS[kind]})"
    fault = _spend_fault(decision.get("spend", 0))
    if fault:
        return f"{where}: {fault}"
    return None if kind == "finish" else _tool_fault(spec, where, decision)


def _tool_fault(spec: NodeSpec, where: str, decision: dict[str, Any]) -> str | None:
    """Why a tool decision names no tool of the loop, or gives it no object as its
    input (the tool's keyword arguments; null or left out: none), or None."""
    assert spec.loop is not None
    tool = decision["tool"]
    if not isinstance(tool, str) or spec.loop.tool(tool) is None:
        names = ", ".join(t.name for t in spec.loop.tools)
        return f"{where} picked tool {tool!r}, which is not one of its tools ({names})"
    tool_input = decision.get("input")
    if not isinstance(tool_input, dict | None):
        return (f"{where}: the input of tool {tool} must be an object, not "
                f"{_json_type(tool_input)} (its keys are the tool's keyword arguments)")
    return None


def _spend_fault(spend: Any) -> str | None:
    """Why a decision's ``spend`` is unfit, or None. NaN and the infinities reach the
    coordinator as null (a worker encodes its output with orjson, which writes them so)."""
    if (not isinstance(spend, bool) and isinstance(spend, int | float)
            and math.isfinite(spend) and spend >= 0):
        return None
    shown = "null (NaN and infinity arrive as null)" if spend is None else repr(spend)
    return f"spend must be a finite number of at least 0, not {shown}"


def _json_type(value: Any) -> str:
    """A JSON value's type, as a message names it (``an array``)."""
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
        (list, "an array")]
    return next((name for kind, name in kinds if isinstance(value, kind)),
                type(value).__name__)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A decide task succeeded (its decision is valid): record the step's decision and
    finish or run the tool. A tool succeeded: the next step, unless a bound is reached."""
    assert report.index is not None
    if report.index % 2 == 0:
        _decided(rec, spec, report.index // 2, report.output)
    else:
        _tool_done(rec, spec, report.index // 2)


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A decide or tool task failed for good: so has the loop."""
    assert report.index is not None
    step = report.index // 2
    if report.index % 2 == 0:
        what = f"decide of step {step}"
    else:
        decision = rec.current.nodes[spec.id].decision or {}
        what = f"tool {decision.get('tool', '?')} of step {step}"
    flow.node_failed(rec, spec.id, f"{reports.failure_message(rec.current, report)} ({what})")


def _decided(rec: Recorder, spec: NodeSpec, step: int, decision: dict[str, Any]) -> None:
    wf = rec.current.workflow_id
    spend = float(decision.get("spend", 0))
    if "finish" in decision:
        rec.record(ev.LoopStepDecided(wf, spec.id, step, rec.at_ms, finish=True,
                                      output=decision["finish"], spend=spend))
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)
        return
    rec.record(ev.LoopStepDecided(wf, spec.id, step, rec.at_ms, tool=decision["tool"],
                                  input=decision.get("input"), spend=spend))
    dispatch.first(rec, spec, 2 * step + 1)


def _tool_done(rec: Recorder, spec: NodeSpec, step: int) -> None:
    """The tool of ``step`` succeeded (its call is in the transcript): decide again, or
    end the loop by its ``on_exhausted`` if that was its last step or its budget is
    spent."""
    assert spec.loop is not None
    bound = exhausted(spec, step, rec.current.nodes[spec.id].spent)
    if bound is None:
        dispatch.first(rec, spec, 2 * step + 2)
    elif spec.loop.on_exhausted == "finish":
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)
    else:
        flow.node_failed(rec, spec.id, bound)


def exhausted(spec: NodeSpec, step: int, spent: float) -> str | None:
    """Which bound a loop reached once the tool of ``step`` is done, as its error
    (``loop <id>: reached max_steps N`` or ``loop <id>: spent S of budget B``), or None
    when it may take another step."""
    assert spec.loop is not None
    if step + 1 >= spec.loop.max_steps:
        return f"loop {spec.id}: reached max_steps {spec.loop.max_steps}"
    if spec.loop.budget is not None and spent >= spec.loop.budget:
        return f"loop {spec.id}: spent {spent:g} of budget {spec.loop.budget:g}"
    return None


# -- how its events change the state ------------------------------------------------------

def _loop_step_decided(state: WorkflowState, body: ev.LoopStepDecided) -> None:
    """A loop's step was decided: count it and its spending, keep the decision (the
    tool to run, or the output it finished with)."""
    node = node_state(state, body.node)
    if body.step != node.steps:
        raise IllegalTransition(f"loop {body.node}: expected step {node.steps}, "
                                f"got {body.step}")
    node.steps += 1
    node.spent += body.spend
    node.decision = ({"step": body.step, "finish": body.output} if body.finish
                     else {"step": body.step, "tool": body.tool, "input": body.input})


def _task_succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    """A tool (task ``2k+1``) succeeded: its call joins the transcript. A decision
    (task ``2k``) changes nothing here: its ``LoopStepDecided`` follows."""
    if body.index is not None and body.index % 2 == 1:
        _tool_joined(state, body.node, body.index, body.output)


def _tool_joined(state: WorkflowState, node_id: str, index: int, output: Any) -> None:
    """A loop's tool (task ``2k+1``) succeeded: its call joins the transcript."""
    node = node_state(state, node_id)
    decided = node.decision
    if decided is None or decided.get("step") != index // 2 or "tool" not in decided:
        raise IllegalTransition(f"loop {node_id}: no tool was decided for step {index // 2}")
    entry = {"step": decided["step"], "tool": decided["tool"], "input": decided["input"],
             "output": output}
    if node.transcript is None:
        node.transcript = []
    node.transcript.append(entry)  # in place: the cost stays flat in its length


# -- its spec fields ----------------------------------------------------------------------

def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A loop's fields: its tools, ``max_steps``, ``on_exhausted`` and ``budget``."""
    return KindParts(loop=_loop(raw, where, work, faults))


def _loop(raw: Mapping[str, Any], where: str, work: Work, faults: list[str]) -> LoopSpec:
    max_steps = raw.get("max_steps")
    if type(max_steps) is not int or not 1 <= max_steps <= MAX_LOOP_STEPS:
        faults.append(f"{where}: max_steps: required, an integer from 1 to {MAX_LOOP_STEPS}")
        max_steps = 1
    on_exhausted = raw.get("on_exhausted", "fail")
    if on_exhausted not in ("fail", "finish"):
        faults.append(f"{where}: on_exhausted must be fail or finish")
        on_exhausted = "fail"
    budget = raw.get("budget")
    if budget is not None and (not finite_number(budget) or budget <= 0):
        faults.append(f"{where}: budget must be a positive number")
        budget = None
    raw_tools = raw.get("tools")
    if not isinstance(raw_tools, list) or not raw_tools:
        faults.append(f"{where}: tools: required, a non-empty list of tools")
        raw_tools = []
    tools: list[ToolSpec] = []
    for i, raw_tool in enumerate(raw_tools):
        tool = _tool(raw_tool, f"{where}: tools[{i}]", work, faults)
        if tool is not None and any(t.name == tool.name for t in tools):
            faults.append(f"{where}: tools[{i}]: duplicate tool name {tool.name!r}")
        elif tool is not None:
            tools.append(tool)
    return LoopSpec(tools=tuple(tools), max_steps=max_steps, on_exhausted=str(on_exhausted),
                    budget=None if budget is None else float(budget))


_TOOL_KEYS = {"name", "task", "queue", "retry", "timeout", "heartbeat_timeout"}


def _tool(raw: Any, where: str, work: Work, faults: list[str]) -> ToolSpec | None:
    """A tool: its name alone (the task of that name, with the loop's settings) or a
    mapping overriding them."""
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        faults.append(f"{where}: a tool is a task name or a mapping with 'name'")
        return None
    for key in sorted(set(raw) - _TOOL_KEYS, key=str):
        faults.append(f"{where}: unknown field {key!r}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        faults.append(f"{where}: name: required, a non-empty string")
        return None
    task = raw.get("task", name)
    if not isinstance(task, str) or not task:
        faults.append(f"{where}: task must be a registered task name")
        task = name
    queue = raw.get("queue", work.queue)
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        faults.append(f"{where}: queue must match {QUEUE_PATTERN.pattern}")
        queue = work.queue
    heartbeat = seconds(raw.get("heartbeat_timeout"), work.heartbeat_timeout,
                        f"{where}: heartbeat_timeout", faults, MIN_HEARTBEAT_TIMEOUT)
    return ToolSpec(
        name=name, task=task, queue=queue,
        retry=parse_retry(raw.get("retry"), work.retry, f"{where}: retry", faults),
        timeout=seconds(raw.get("timeout"), work.timeout, f"{where}: timeout", faults),
        heartbeat_timeout=heartbeat or work.heartbeat_timeout)


KEYS = (TASKLIKE_KEYS - {"task"}) | {"decide", "tools", "max_steps", "on_exhausted", "budget"}
"""A loop's fields: a task's (its decide task is named by ``decide``), and its own."""

UNIT = KindUnit(NodeKind.LOOP, KEYS, start, attempt_succeeded, attempt_failed,
                parse=_parse, task_field="decide", describe=DESCRIBE, follow=FOLLOW,
                output_fault=output_fault, output_error=OUTPUT_ERROR,
                events={ev.LoopStepDecided: _loop_step_decided},
                evolution=KindEvolution(task_succeeded=_task_succeeded))
"""The ``loop`` kind: a decide task's output must be a valid decision."""
