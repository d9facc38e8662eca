"""Snapshots: ``WorkflowState`` to bytes and back (JSON via orjson), whole.

``dump_state``/``load_state`` give the whole state as one document: the canonical form
that replay checks compare. The coordinator's table keeps a state split in entries
instead (``layout``), so that applying one event writes a few small entries rather than
the whole workflow. A snapshot is a cache of the history: losing it costs a replay,
never correctness.
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.codec import interned
from headwater.core.state import (
    NodeState,
    TaskState,
    TimerState,
    WorkflowState,
)
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from headwater.errors import DecodeError

SNAPSHOT_VERSION = 1


def dump_state(state: WorkflowState) -> bytes:
    """Encode ``state`` as JSON bytes (the parsed spec is not stored; it is re-parsed)."""
    doc: dict[str, Any] = {
        "v": SNAPSHOT_VERSION,
        "workflow_id": state.workflow_id,
        "spec_doc": state.spec_doc,
        "input": state.input,
        "tenant": state.tenant,
        "name": state.name,
        "created_at_ms": state.created_at_ms,
        "updated_at_ms": state.updated_at_ms,
        "seq": state.seq,
        "status": state.status,
        "nodes": state.nodes,
        "tasks": state.tasks,
        "outputs": state.outputs,
        "timers": state.timers,
        "open_nodes": state.open_nodes,
        "output": state.output,
        "error": state.error,
        "spec_error": state.spec_error,
        "signals": state.signals,
        "signal_ids": state.signal_ids,
        "parent": state.parent,
        "definition": state.definition,
        "definition_version": state.definition_version,
        "generation": state.generation,
        "attempt_floor": state.attempt_floor,
    }
    if state.rerun is not None:  # left out otherwise: older snapshots read the same
        doc["rerun"] = state.rerun
    if state.pause is not None:  # likewise: a run ever paused
        doc["pause"] = state.pause
    if state.continued or state.generation_seq:  # likewise: a code workflow's
        doc["continued"], doc["generation_seq"] = state.continued, state.generation_seq
    for name, value in (("deadline_at_ms", state.deadline_at_ms), ("caller", state.caller),
                        ("calls", state.calls)):
        if value:  # likewise: a run with a deadline, a ctx.call's run, its caller
            doc[name] = value
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)  # canonical: comparable bytes


def load_state(data: bytes) -> WorkflowState:
    """Decode a snapshot written by ``dump_state``.

    Raises:
        DecodeError: the bytes are not a snapshot of this version.
    """
    try:
        doc = orjson.loads(data)
        if doc.get("v") != SNAPSHOT_VERSION:
            raise DecodeError(f"snapshot version {doc.get('v')!r}, expected {SNAPSHOT_VERSION}")
        return WorkflowState(
            workflow_id=doc["workflow_id"],
            spec_doc=doc["spec_doc"],
            input=doc["input"],
            tenant=doc["tenant"],
            name=doc["name"],
            created_at_ms=doc["created_at_ms"],
            updated_at_ms=doc["updated_at_ms"],
            seq=doc["seq"],
            status=WorkflowStatus(doc["status"]),
            nodes={k: node_from(v) for k, v in doc["nodes"].items()},
            tasks={k: task_from(v) for k, v in doc["tasks"].items()},
            outputs=doc["outputs"],
            timers={k: TimerState(**v) for k, v in doc["timers"].items()},
            open_nodes=doc["open_nodes"],
            output=doc["output"],
            error=doc["error"],
            spec_error=doc["spec_error"],
            signals=doc.get("signals") or {},
            signal_ids=doc.get("signal_ids") or [],
            parent=doc.get("parent"),
            definition=doc.get("definition"),
            definition_version=doc.get("definition_version"),
            generation=doc.get("generation", 1),
            attempt_floor=doc.get("attempt_floor", 0),
            rerun=doc.get("rerun"),
            pause=doc.get("pause"),
            continued=doc.get("continued", 0),
            generation_seq=doc.get("generation_seq", 0),
            deadline_at_ms=doc.get("deadline_at_ms"),
            caller=doc.get("caller"),
            calls=list(doc.get("calls") or []),
        )
    except DecodeError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise DecodeError(f"bad snapshot: {e}") from e


def node_from(v: dict[str, Any]) -> NodeState:
    """A node's state from its stored fields (those left out take their defaults)."""
    return NodeState(**{**v, "status": NodeStatus(v.get("status", NodeStatus.PENDING))})


def task_from(v: dict[str, Any]) -> TaskState:
    """A task's state from its stored fields (those left out take their defaults), its
    node and worker interned as decoded events' are (``codec.interned``)."""
    fields = {k: interned(k, x) for k, x in v.items()}
    return TaskState(**{**fields, "status": TaskStatus(v["status"])})
