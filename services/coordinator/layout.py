"""The coordinator's table layout of a workflow: one small header, the definition once,
one entry per task.

Applying one event writes the header and the entries of the tasks it changed
(``writeset.touched_parts``), so the bytes written do not grow with the workflow's size:
what grows with its work lives in the tasks' entries, never in the header that every
event rewrites (a map's results, a loop's transcript). ``load_split`` rebuilds the state
from them; the whole-state form that replay checks compare is ``snapshot``'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import orjson

from headwater.core import registry, reuse
from headwater.core.ids import task_key
from headwater.core.kinds.code.journal import task_indexes
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.state import (
    NodeState,
    TaskState,
    TimerState,
    WorkflowState,
    set_finished_output,
)
from headwater.core.status import TaskStatus, WorkflowStatus
from headwater.errors import DecodeError
from services.coordinator import code_layout
from services.coordinator.snapshot import node_from, task_from

SPLIT_VERSION = 2


def dump_header(state: WorkflowState, applied: dict[str, int] | None = None) -> bytes:
    """The part of ``state`` rewritten on every change: status, seq, nodes (without map
    results), timers, counters. Its size does not grow with the number of tasks.

    Args:
        state: the workflow.
        applied: the coordinator's bookkeeping kept beside it: input topic -> offset of
            the last record applied to the workflow (``header_applied`` reads it back).
    """
    own = _taskless(state)
    nodes = {node_id: (_NODE_SHAPE_ALL if node_id in own else _NODE_SHAPE).set_fields(n)
             for node_id, n in state.nodes.items()}
    for node_id, n in state.nodes.items():
        if n.code is not None:  # a code node's journal: counts here, the rest in tasks
            nodes[node_id]["code"] = code_layout.header_part(n.code)
    doc: dict[str, Any] = {
        "v": SPLIT_VERSION, "workflow_id": state.workflow_id, "seq": state.seq,
        "status": state.status, "updated_at_ms": state.updated_at_ms, "nodes": nodes,
        "timers": state.timers, "open_nodes": state.open_nodes, "output": state.output,
        "error": state.error, "spec_error": state.spec_error, "applied": applied or {},
    }
    outputs = {n: state.outputs[n] for n in own if n in state.outputs}
    for name, value in (("outputs", outputs), ("signals", state.signals),
                        ("signal_ids", state.signal_ids), ("parent", state.parent),
                        ("runs", schedule_runs(state)), ("deadline_at_ms", state.deadline_at_ms),
                        ("caller", state.caller), ("calls", state.calls), ("pause", state.pause)):
        if value:
            doc[name] = value
    if state.generation > 1:  # a restarted run (left out otherwise: headers read the same)
        doc["generation"], doc["attempt_floor"] = state.generation, state.attempt_floor
        doc["generation_seq"] = state.generation_seq
    if state.continued:  # a code workflow continued as new: its input is the generation's
        doc["continued"], doc["input"] = state.continued, state.input
    return orjson.dumps(doc)


def _taskless(state: WorkflowState) -> set[str]:
    """The nodes whose output and results no task entry holds: those of the kinds that
    keep their output (``KindUnit.keeps_output``: waits, a signal's fields, and sleeps).
    The header keeps them."""
    if state.spec_error:
        return set()
    return {n.id for n in state.spec.nodes if registry.unit(n.kind).keeps_output}


def schedule_runs(state: WorkflowState) -> dict[str, list[int]]:
    """Schedule node -> the indexes of its runs in the state (those still running: an
    ended run leaves it, ``kinds/schedule/rules.py``, ``_run_ended``); empty without a
    schedule node. The header keeps it, since the indexes no longer follow from
    ``next_index``."""
    if state.spec_error:
        return {}
    runs: dict[str, list[int]] = {n.id: [] for n in state.spec.nodes if n.schedule is not None}
    if not runs:  # no schedule node: not a pass over every task (a map's) per header
        return runs
    for t in state.tasks.values():
        if t.node in runs and t.index is not None:
            runs[t.node].append(t.index)
    return {n: sorted(ks) for n, ks in runs.items()}


def dump_definition(state: WorkflowState) -> bytes:
    """What never changes after acceptance: spec, input, tenant, name, creation time, and
    the registered definition the spec came from (left out when there is none: entries
    written before it read the same)."""
    doc: dict[str, Any] = {
        "v": SPLIT_VERSION, "spec_doc": state.spec_doc, "input": state.input,
        "tenant": state.tenant, "name": state.name, "created_at_ms": state.created_at_ms,
    }
    if state.definition is not None:
        doc["definition"] = state.definition
        doc["definition_version"] = state.definition_version
    if state.rerun is not None:  # a rerun's source and the outputs it reuses
        doc["rerun"] = state.rerun
    return orjson.dumps(doc)


def dump_task(state: WorkflowState, key: str) -> bytes:
    """One task's entry: its state and its output once it has one (what it returned, or
    the error object of a ``continue_on_error`` node)."""
    task = state.tasks[key]
    output = None
    if task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
        if task.index is None:
            output = state.outputs.get(task.node)
        elif is_loop_tool(state, task):
            output = _transcript_entry(state.nodes[task.node], task.index // 2)
        else:
            results = state.nodes[task.node].results
            output = results[task.index] if results is not None else None
    entry: dict[str, Any] = {"task": _TASK_SHAPE.set_fields(task)}
    if output is not None:
        entry["output"] = output
    journal = code_layout.task_part(state, task)
    if journal is not None:
        entry["code"] = journal
    return orjson.dumps(entry)


class _Shape:
    """The fields of a state class written in its table entries, and their defaults."""

    def __init__(self, cls: type, leave_out: tuple[str, ...] = ()) -> None:
        fields = [f for f in dataclasses.fields(cls) if f.name not in leave_out]
        self.names = [f.name for f in fields]
        self.defaults = {f.name: f.default for f in fields
                         if f.default is not dataclasses.MISSING}

    def set_fields(self, obj: Any) -> dict[str, Any]:
        """``obj``'s fields as a dict, without those that hold their default (the class's
        constructor puts them back)."""
        out: dict[str, Any] = {}
        for k in self.names:
            v = getattr(obj, k)
            if k not in self.defaults or v != self.defaults[k]:
                out[k] = v
        return out


_TASK_SHAPE = _Shape(TaskState)
_NODE_SHAPE = _Shape(NodeState, leave_out=("results", "transcript"))
_NODE_SHAPE_ALL = _Shape(NodeState)
"""Defaults are left out of the table's entries: a no-op task's entry is a third of its
full size. A map's ``results`` and a loop's ``transcript`` live in its tasks' entries,
never in the header that every event rewrites (a wait per item has no tasks: its results
stay in the header, ``_NODE_SHAPE_ALL``)."""


# -- a loop's transcript: each call in its tool's entry -------------------------------------

def is_loop_tool(state: WorkflowState, task: TaskState) -> bool:
    """Whether ``task`` is a loop's tool call (an odd index of a loop node)."""
    return (task.index is not None and task.index % 2 == 1
            and state.spec.node(task.node).loop is not None)


def _transcript_entry(node: NodeState, step: int) -> Any:
    """The transcript's call of ``step`` (None: none joined it), looked for from the end:
    the call written is nearly always the latest."""
    for entry in reversed(node.transcript or ()):
        if entry.get("step") == step:
            return entry
    return None


def header_keeps_transcripts(header: bytes) -> bool:
    """Whether a header holds a loop's transcript, as headers did before the calls moved
    to their tools' entries: the first write after it must write every call's entry.
    (A ``"transcript"`` inside a stored value answers True too: one more write, no
    harm.)"""
    if b'"transcript"' not in header:
        return False
    try:
        nodes = orjson.loads(header).get("nodes") or {}
        return any(isinstance(n, dict) and "transcript" in n for n in nodes.values())
    except (orjson.JSONDecodeError, AttributeError):
        return False


def loop_tool_keys(state: WorkflowState) -> set[str]:
    """The keys of every loop tool call of ``state`` that holds a transcript entry."""
    return {k for k, t in state.tasks.items()
            if t.status is TaskStatus.SUCCEEDED and is_loop_tool(state, t)}


def task_keys(state: WorkflowState, runs: dict[str, list[int]] | None = None) -> list[str]:
    """The keys of the workflow's task entries, derived from its nodes.

    Args:
        state: the workflow.
        runs: a schedule's runs in the table (``schedule_runs``, from the header); None:
            those of ``state``.
    """
    if state.spec_error:
        return []
    runs = schedule_runs(state) if runs is None else runs
    keys: list[str] = []
    for spec in state.spec.nodes:
        node = state.nodes[spec.id]
        if spec.schedule is not None:  # a header written before ended runs left the
            # state has no "runs": then every run started has its entry
            keys.extend(task_key(spec.id, i)
                        for i in runs.get(spec.id, range(node.next_index)))
        elif spec.code is not None:  # a code node's tasks are not numbered densely
            keys.extend(task_key(spec.id, i) for i in task_indexes(node.code))
        else:
            keys.extend(node_task_keys(spec, node.next_index))
    return keys


def node_task_keys(spec: NodeSpec, count: int) -> list[str]:
    """The keys of the first ``count`` tasks of node ``spec`` (its ``next_index``): none
    for a wait or a sleep, the node's id for a task or a child without ``over``, else
    ``node[i]`` (a map's items, a map of children, a loop's decides and tools)."""
    if spec.wait is not None or spec.sleep is not None:
        return []
    if spec.kind is NodeKind.TASK or (spec.kind is NodeKind.WORKFLOW and not spec.fans_out):
        return [spec.id] if count else []
    return [task_key(spec.id, i) for i in range(count)]


def load_split(header: bytes, definition: bytes,
               get_task: Callable[[str], bytes | None]) -> WorkflowState:
    """Rebuild a state from its header, its definition and its task entries.

    Args:
        header: from ``dump_header``.
        definition: from ``dump_definition``.
        get_task: task key -> the bytes from ``dump_task`` (None if missing).

    Raises:
        DecodeError: malformed entries, or a task entry missing.
    """
    try:
        h, d = orjson.loads(header), orjson.loads(definition)
        if h.get("v") != SPLIT_VERSION or d.get("v") != SPLIT_VERSION:
            raise DecodeError(f"snapshot version {h.get('v')!r}, expected {SPLIT_VERSION}")
        state = WorkflowState(
            workflow_id=h["workflow_id"], spec_doc=d["spec_doc"],
            input=h.get("input", d["input"]),
            tenant=d["tenant"], name=d["name"], created_at_ms=d["created_at_ms"],
            updated_at_ms=h["updated_at_ms"], seq=h["seq"], status=WorkflowStatus(h["status"]),
            nodes={k: node_from(v) for k, v in h["nodes"].items()},
            timers={k: TimerState(**v) for k, v in h["timers"].items()},
            open_nodes=h["open_nodes"], output=h["output"], error=h["error"],
            spec_error=h["spec_error"], outputs=dict(h.get("outputs") or {}),
            signals=h.get("signals") or {}, signal_ids=h.get("signal_ids") or [],
            parent=h.get("parent"), pause=h.get("pause"), definition=d.get("definition"),
            definition_version=d.get("definition_version"),
            generation=h.get("generation", 1), attempt_floor=h.get("attempt_floor", 0),
            generation_seq=h.get("generation_seq", 0), continued=h.get("continued", 0),
            rerun=d.get("rerun"), deadline_at_ms=h.get("deadline_at_ms"),
            caller=h.get("caller"), calls=list(h.get("calls") or []),
        )
        _restore_tasks(state, get_task, h.get("runs") or {})
        for node_id in state.nodes:
            set_finished_output(state, node_id)  # as evolve did on its NodeFinished
        reuse.restore_outputs(state)  # a reused node's: no task entry holds it
        return state
    except DecodeError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise DecodeError(f"bad snapshot: {e}") from e


def _restore_tasks(state: WorkflowState, get_task: Callable[[str], bytes | None],
                   runs: dict[str, list[int]]) -> None:
    """Read every task entry into ``state.tasks`` (a schedule's: its ``runs``), with the
    outputs they hold (a task node's output, a map item's place among its map's
    results)."""
    calls: dict[str, list[Any]] = {}
    for spec in [] if state.spec_error else state.spec.nodes:
        node = state.nodes[spec.id]
        if spec.fans_out and spec.wait is None and node.total is not None:
            node.results = [None] * node.total
        if spec.loop is not None and node.transcript is None:  # else: an older header's
            calls[spec.id] = []
    journals: dict[str, dict[int, dict[str, Any]]] = {}
    _read_tasks(state, get_task, runs, calls, journals)
    code_layout.restore(state, journals)
    for node_id, transcript in calls.items():
        if transcript:
            state.nodes[node_id].transcript = sorted(transcript, key=lambda e: e["step"])


def _read_tasks(state: WorkflowState, get_task: Callable[[str], bytes | None],
                runs: dict[str, list[int]], calls: dict[str, list[Any]],
                journals: dict[str, dict[int, dict[str, Any]]]) -> None:
    """Read the task entries, their outputs into place, a loop's calls into ``calls``
    (loop node -> its calls, for a transcript the header does not hold), a code node's
    parts of its journal into ``journals`` (node -> task index -> part)."""
    for key in task_keys(state, runs):
        raw = get_task(key)
        if raw is None:
            raise DecodeError(f"task entry {key} of {state.workflow_id} is missing")
        entry = orjson.loads(raw)
        task = task_from(entry["task"])
        state.tasks[key] = task
        if "code" in entry and task.index is not None:
            journals.setdefault(task.node, {})[task.index] = entry["code"]
        output = entry.get("output")
        if task.node in calls:
            if output is not None and is_loop_tool(state, task):
                calls[task.node].append(output)
        elif task.status is TaskStatus.SUCCEEDED or output is not None:
            _restore_output(state, task, output)


def header_ended(header: bytes) -> bool:
    """Whether a header (``dump_header``) is a workflow's that has ended, read without
    decoding the workflow; False for one that does not parse (its decoding says why)."""
    try:
        return WorkflowStatus(orjson.loads(header)["status"]).terminal
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return False


def header_applied(header: bytes) -> dict[str, int]:
    """The applied offsets ``dump_header`` stored beside the state (input topic -> offset).

    Raises:
        DecodeError: the header is malformed.
    """
    try:
        applied = orjson.loads(header).get("applied") or {}
        return {str(k): int(v) for k, v in applied.items()}
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as e:
        raise DecodeError(f"bad snapshot header: {e}") from e


def _restore_output(state: WorkflowState, task: TaskState, output: Any) -> None:
    if task.index is None:
        state.outputs[task.node] = output
        return
    spec = state.spec.node(task.node)
    if spec.loop is not None or spec.schedule is not None or spec.code is not None:
        return  # a code node's results are in its journal (the header); a loop's
        # outputs are its transcript and decision (an older header's); a
        # schedule's runs keep their outputs in their own histories
    results = state.nodes[task.node].results
    if results is None or task.index >= len(results):
        raise DecodeError(f"task {task.node}[{task.index}] is outside its map")
    results[task.index] = output
