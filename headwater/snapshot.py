"""Table snapshots: ``WorkflowState`` to bytes and back (JSON via orjson).

The snapshot is a cache of the history (DESIGN.md §3.1): losing it costs a replay,
never correctness.
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.errors import DecodeError
from headwater.state import (
    NodeState,
    NodeStatus,
    TaskState,
    TaskStatus,
    TimerState,
    WorkflowState,
    WorkflowStatus,
)

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
    }
    return orjson.dumps(doc)


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
            nodes={k: _node(v) for k, v in doc["nodes"].items()},
            tasks={k: _task(v) for k, v in doc["tasks"].items()},
            outputs=doc["outputs"],
            timers={k: TimerState(**v) for k, v in doc["timers"].items()},
            open_nodes=doc["open_nodes"],
            output=doc["output"],
            error=doc["error"],
            spec_error=doc["spec_error"],
        )
    except DecodeError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise DecodeError(f"bad snapshot: {e}") from e


def _node(v: dict[str, Any]) -> NodeState:
    return NodeState(**{**v, "status": NodeStatus(v["status"])})


def _task(v: dict[str, Any]) -> TaskState:
    return TaskState(**{**v, "status": TaskStatus(v["status"])})
