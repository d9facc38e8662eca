"""Retention's rules: when an ended workflow may be purged, and what is said of it after.

The coordinator purges a workflow ``HEADWATER_RETENTION_S`` after its last event
(``services/coordinator/retention.py`` holds the sweep that asks for purges and the
table writes of one). What is decided is pure and lives here: a purge request
(``RETENTION_TIMER``) is taken only when ``purge_due``; a purged workflow keeps a
marker (``dump_marker``), and any input for it is refused with the reason
``refused_after_purge`` gives (``decide.decide`` screens both).
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus

RETENTION_TIMER = "@retention"
"""The timer id of the ``TimerFired`` that asks for a workflow's purge (no timer of the
state machine starts with ``@``)."""
MARKER_VERSION = 1


def purge_due(state: WorkflowState | None, at_ms: int, retention_ms: int | None) -> bool:
    """Whether ``state`` may be purged at ``at_ms``: it ended, and ``retention_ms`` have
    passed since its last event (``updated_at_ms``); never when retention is off (None)."""
    return (retention_ms is not None and state is not None and state.status.terminal
            and state.updated_at_ms + retention_ms <= at_ms)


def header_due(header: bytes, at_ms: int, retention_ms: int) -> bool:
    """``purge_due`` read off a raw header entry (``snapshot.dump_header``) without
    decoding the workflow; False for a header that does not parse."""
    try:
        h = orjson.loads(header)
        return bool(WorkflowStatus(h["status"]).terminal
                    and int(h["updated_at_ms"]) + retention_ms <= at_ms)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return False


def dump_marker(state: WorkflowState, purged_at_ms: int) -> bytes:
    """The marker kept for a purged workflow: how it ended, its last seq, when it was
    last changed and purged (ms since the epoch). Bounded: no spec, input or output."""
    return orjson.dumps({"v": MARKER_VERSION, "status": state.status.value, "seq": state.seq,
                         "ended_at_ms": state.updated_at_ms, "purged_at_ms": purged_at_ms})


def load_marker(raw: bytes) -> dict[str, Any]:
    """The marker's fields (``dump_marker``); ``{}`` for one that does not parse."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def refused_after_purge(event: ev.Input, marker: bytes) -> str:
    """The dead letter's reason for an input to a purged workflow."""
    m = load_marker(marker)
    return (f"{type(event).__name__} for workflow {event.workflow_id} refused: the workflow "
            f"ended ({m.get('status', '?')}, seq {m.get('seq', '?')}) and was purged after "
            "its retention (HEADWATER_RETENTION_S); its id cannot be used again")
